"""User mistakes about the store itself are PiqlErrors that name it: a directory, a missing
directory or a file that is not SQLite as the store, and a closed deployment."""
from __future__ import annotations

import pytest

import piql
from piql.runtime.errors import DeploymentClosed, DeploymentError
from tests.conftest import PAPER_QUERIES, PAPER_SCHEMA

APP = piql.load(PAPER_SCHEMA, PAPER_QUERIES)


def test_a_directory_is_not_a_store(tmp_path):
    with pytest.raises(DeploymentError, match=r": is a directory; a store is one SQLite file"):
        APP.deploy(tmp_path)


def test_a_store_in_a_missing_directory(tmp_path):
    with pytest.raises(DeploymentError, match=r"the directory .*nowhere does not exist"):
        APP.deploy(tmp_path / "nowhere" / "app.db")
    assert not (tmp_path / "nowhere").exists()


def test_a_file_that_is_not_sqlite_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "notes.db"
    text = b"these are my notes, not a database " * 40
    path.write_bytes(text)
    with pytest.raises(DeploymentError, match=r"notes\.db: is not a SQLite database"):
        APP.deploy(path)
    assert path.read_bytes() == text


def test_a_closed_deployment_says_so():
    db = APP.deploy()
    db.insert("Documents", docId=1, timestamp=1, text="x")
    db.close()
    db.close()  # closing twice is fine
    calls = [lambda: db.query("countTags", tag="a"), lambda: db.insert("Documents", docId=2),
             lambda: db.delete("Documents", docId=1), lambda: db.update("Documents", docId=1),
             lambda: db.load("Documents", [(3, 1, "y")]), lambda: db.refresh(),
             lambda: db.check(), lambda: db.rows("Documents"), lambda: db.build_views(),
             lambda: db.run_refresh_every(1)]
    for call in calls:
        with pytest.raises(DeploymentClosed, match="the deployment of :memory: is closed"):
            call()


def test_busy_timeout_must_not_be_negative():
    with pytest.raises(DeploymentError, match="busy_timeout"):
        APP.deploy(busy_timeout=-1)
