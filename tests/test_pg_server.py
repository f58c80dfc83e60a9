"""The test suite's own PostgreSQL server works: a database per test, pg_stat_statements on."""
from __future__ import annotations

import psycopg


def test_each_test_gets_an_empty_database_on_a_real_server(postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        version = connection.execute("SHOW server_version_num").fetchone()[0]
        assert int(version) >= 150000
        assert connection.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
        connection.execute("CREATE TABLE t (a BIGINT PRIMARY KEY)")
        connection.execute("INSERT INTO t VALUES (%s)", (1,))
        assert connection.execute("SELECT a FROM t").fetchall() == [(1,)]


def test_pg_stat_statements_is_preloaded(postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        assert connection.execute("SHOW shared_preload_libraries").fetchone()[0] == \
            "pg_stat_statements"
        connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        connection.execute("CREATE TABLE probe (a BIGINT)")
        connection.execute("SELECT a FROM probe WHERE a = %s", (7,))
        seen = connection.execute(
            "SELECT query FROM pg_stat_statements WHERE query LIKE %s", ("%FROM probe%",)).fetchall()
        assert any("$1" in q for (q,) in seen)


def test_a_test_database_is_dropped_after_use(postgres_server):
    url = postgres_server.create_database()
    name = url.split("?", 1)[0].rsplit("/", 1)[-1]
    postgres_server.drop_database(url)
    with psycopg.connect(postgres_server.url(), autocommit=True) as connection:
        assert connection.execute("SELECT count(*) FROM pg_database WHERE datname = %s",
                                  (name,)).fetchone()[0] == 0


def test_sigterm_stops_the_server_and_removes_its_directory(tmp_path):
    """A benchmark killed with SIGTERM must not leave its embedded server running."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    script = ("from piql.bench.pg_server import PostgresServer\n"
              "import sys, time\n"
              "server = PostgresServer()\n"
              "print(server.directory, flush=True)\n"
              "time.sleep(120)\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    directory = Path(child.stdout.readline().strip())
    postmaster = int((directory / "data" / "postmaster.pid").read_text().split()[0])
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=60) == 128 + signal.SIGTERM
    assert not directory.exists()
    for _ in range(100):  # the postmaster exits shortly after pg_ctl stop returns
        try:
            os.kill(postmaster, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"postmaster {postmaster} still running after SIGTERM")
