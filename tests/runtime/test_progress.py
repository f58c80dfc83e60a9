"""Status lines of long steps: on a terminal only, with the time taken; quiet=True and a
pipe silence them."""
from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

import piql
from piql.runtime.progress import Progress

TUTORIAL = Path(__file__).parents[2] / "docs" / "tutorial"


class Terminal(io.StringIO):
    """Text written to what says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_a_step_on_a_terminal_shows_one_line_with_the_time_taken():
    screen = Terminal()
    with Progress(stream=screen).step("loading users"):
        pass
    assert re.fullmatch(r"\rpiql: loading users \.\.\.\rpiql: loading users: \d+ ms\x1b\[K\n",
                        screen.getvalue())


def test_a_failed_step_says_so_and_the_error_goes_on():
    screen = Terminal()
    with pytest.raises(ValueError):
        with Progress(stream=screen).step("loading users"):
            raise ValueError("refused")
    assert "loading users: failed after" in screen.getvalue()


def test_silent_off_a_terminal_and_when_quiet():
    pipe = io.StringIO()
    with Progress(stream=pipe).step("x"):
        pass
    screen = Terminal()
    with Progress(quiet=True, stream=screen).step("x"):
        pass
    assert pipe.getvalue() == "" and screen.getvalue() == ""


def test_deployment_steps_report_to_the_terminal(monkeypatch):
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    app = piql.load(TUTORIAL / "schema.sql", TUTORIAL / "queries.sql")
    with app.deploy(engine="store") as db:
        db.load("users", path=TUTORIAL / "users.csv")
        db.load_many([("bookmarks", TUTORIAL / "data.csv")])
        db.build_views()
        db.refresh()
    shown = screen.getvalue()
    for step in (f"loading users from {TUTORIAL / 'users.csv'}: ", "loading bookmarks: ",
                 "building view saveCount_view: ", "refreshing newestOnSite: "):
        assert f"\rpiql: {step}" in shown, step
    screen.truncate(0)
    with app.deploy(engine="store", quiet=True) as db:
        db.load("users", path=TUTORIAL / "users.csv")
    assert screen.getvalue() == ""


def _deploy_on_a_terminal(tmp_path, *extra: str) -> tuple[int, str]:
    """``piql deploy`` with standard error on a terminal: its status and what it showed."""
    leader, follower = pty.openpty()
    argv = [sys.executable, "-m", "piql", "deploy", str(TUTORIAL / "schema.sql"),
            str(TUTORIAL / "queries.sql"), "--db", str(tmp_path / "t.db"), "--engine", "store",
            "--load", f"users={TUTORIAL / 'users.csv'}", *extra]
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=follower) as process:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = process.wait()
    os.close(leader)
    return code, b"".join(chunks).decode()


def test_cli_deploy_shows_progress_on_a_terminal_and_quiet_silences_it(tmp_path):
    code, shown = _deploy_on_a_terminal(tmp_path)
    assert code == 0 and re.search(r"piql: loading users: \d+ ms", shown)
    (tmp_path / "t.db").unlink()
    code, shown = _deploy_on_a_terminal(tmp_path, "--quiet")
    assert code == 0 and "piql: loading" not in shown


def test_cli_deploy_is_silent_when_piped(tmp_path):
    done = subprocess.run([sys.executable, "-m", "piql", "deploy", str(TUTORIAL / "schema.sql"),
                           str(TUTORIAL / "queries.sql"), "--db", str(tmp_path / "t.db"),
                           "--engine", "store", "--load", f"users={TUTORIAL / 'users.csv'}"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
