"""A serving thread's lane (``runtime.postgres_reads``): compiled reads through libpq's
prepared statements answer exactly as psycopg's cursor does, for values of any type, and
survive what a cursor survives (a statement deallocated under it, a failing statement)."""
from __future__ import annotations

import psycopg
import pytest

from piql.runtime.postgres_reads import Lane, Numbered
from piql.runtime.postgres_store import PostgresStore

STATEMENT = "SELECT id, name, price, flag FROM t WHERE id = %s OR name = %s ORDER BY id"


@pytest.fixture
def connection(postgres_url):
    store = PostgresStore(postgres_url)  # a reader configured as the store's
    try:
        reader = store._reader()
        reader.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT COLLATE \"C\", "
                       "price DOUBLE PRECISION, flag BIGINT)")
        reader.execute("INSERT INTO t VALUES (1, 'a', 1.5, 1), (2, NULL, NULL, 0), "
                       "(70000, '100%', -0.25, NULL)")
        yield reader
    finally:
        store.close()


def test_placeholders_are_numbered_and_a_literal_percent_kept():
    numbered = Numbered("SELECT 7 %% 3, %s, '%%' || %s")
    assert numbered.text == b"SELECT 7 % 3, $1, '%' || $2"
    assert len(numbered.formats) == 2
    with pytest.raises(psycopg.ProgrammingError, match="placeholders"):
        Numbered("SELECT %d")


@pytest.mark.parametrize("values", [(1, "zz"), (2, None), (None, "100%"), (70000, "a"),
                                    (2**40, None), (True, None), (1, 2)])
def test_answers_are_the_cursors_for_values_of_every_type(connection, values):
    lane = Lane(connection)
    numbered = Numbered(STATEMENT)
    expected = connection.execute(STATEMENT, values, prepare=True).fetchall() \
        if not isinstance(values[1], int) else None
    if expected is None:  # an int compared with text: the server refuses it, as for a cursor
        with pytest.raises(psycopg.errors.UndefinedFunction):
            connection.execute(STATEMENT, values)
        with pytest.raises(psycopg.errors.UndefinedFunction):
            lane.fetch(numbered, values)
        assert lane.fetch(numbered, (1, "a")) == [(1, "a", 1.5, 1)]  # it serves on
        return
    assert lane.fetch(numbered, values) == expected
    assert lane.fetch(numbered, values) == expected  # prepared now


def test_a_statement_deallocated_under_the_lane_is_prepared_again(connection):
    lane = Lane(connection)
    numbered = Numbered(STATEMENT)
    assert lane.fetch(numbered, (1, None)) == [(1, "a", 1.5, 1)]
    connection.execute("DEALLOCATE ALL")
    assert lane.fetch(numbered, (2, None)) == [(2, None, None, 0)]


def test_the_wrong_number_of_values_is_refused_before_sending(connection):
    lane = Lane(connection)
    with pytest.raises(psycopg.ProgrammingError, match="2 placeholders but 1"):
        lane.fetch(Numbered(STATEMENT), (1,))
    assert not lane.broken
