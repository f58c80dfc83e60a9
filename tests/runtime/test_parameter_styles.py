"""Every parameter style runs alike: the same answers, equal to the query's own SQL."""
from __future__ import annotations

import random
import sqlite3

import pytest

import piql
from piql.cli import main
from tests.conftest import PAPER_SCHEMA

# One query per style, each as SQLite runs it too (the oracle) with positional values.
QUERIES = {
    "<name>": "SELECT docId, tag, timestamp FROM Tags WHERE docId = <doc> AND timestamp > <since>",
    ":name": "SELECT docId, tag, timestamp FROM Tags WHERE docId = :doc AND timestamp > :since",
    "%(name)s": "SELECT docId, tag, timestamp FROM Tags WHERE docId = %(doc)s "
                "AND timestamp > %(since)s",
    "$1": "SELECT docId, tag, timestamp FROM Tags WHERE docId = $1 AND timestamp > $2",
    "?": "SELECT docId, tag, timestamp FROM Tags WHERE docId = ? AND timestamp > ?",
}
NAMES = {"<name>": ("doc", "since"), ":name": ("doc", "since"), "%(name)s": ("doc", "since"),
         "$1": ("p1", "p2"), "?": ("p1", "p2")}
ORACLE = QUERIES["?"]


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    queries = tmp_path_factory.mktemp("styles") / "queries.sql"
    queries.write_text("".join(f"-- name: q{i}\n{sql}\n" for i, sql in enumerate(QUERIES.values())))
    app = piql.load(PAPER_SCHEMA, queries)
    assert set(app.levels.values()) == {"SI-0"}
    db = app.deploy(engine="store")
    mirror = sqlite3.connect(":memory:")
    mirror.execute("CREATE TABLE Tags (docId, tag, timestamp)")
    rng = random.Random(14)
    for doc in range(60):
        db.insert("Documents", docId=doc, timestamp=doc, text=f"d{doc}")
        for tag in rng.sample(["a", "b", "c", "d"], rng.randint(0, 4)):
            stamp = rng.choice([-5, 0, 3, 3, 10, 2**40])  # ties, negatives, huge
            db.insert("Tags", docId=doc, tag=tag, timestamp=stamp)
            mirror.execute("INSERT INTO Tags VALUES (?, ?, ?)", (doc, tag, stamp))
    yield db, mirror
    db.close()


@pytest.mark.parametrize("style", list(QUERIES))
@pytest.mark.parametrize("doc, since", [(1, 0), (2, -10), (3, 3), (5, 2**40 - 1), (99, 0)])
def test_every_style_answers_as_its_sql(deployed, style, doc, since):
    db, mirror = deployed
    index = list(QUERIES).index(style)
    first, second = NAMES[style]
    result = db.query(f"q{index}", **{first: doc, second: since})
    assert sorted(tuple(row) for row in result.rows) == sorted(
        mirror.execute(ORACLE, (doc, since)).fetchall())
    assert result.ops <= result.bound


def test_the_command_line_takes_positional_names(capsys, tmp_path):
    queries = tmp_path / "queries.sql"
    queries.write_text("-- name: tagsOfDoc\nSELECT tag FROM Tags WHERE docId = ? ORDER BY tag\n"
                       "-- name: doc\nSELECT text FROM Documents WHERE docId = $1\n")
    data = tmp_path / "docs.csv"
    data.write_text("docId,timestamp,text\n7,1,seven\n8,2,eight\n")
    tags = tmp_path / "tags.csv"
    tags.write_text("docId,tag,timestamp\n7,x,1\n7,y,2\n8,z,3\n")
    db = tmp_path / "store.db"
    assert main(["deploy", str(PAPER_SCHEMA), str(queries), "--db", str(db), "--engine", "store",
                 "--load", f"Documents={data}", "--load", f"Tags={tags}"]) == 0
    capsys.readouterr()
    assert main(["query", str(PAPER_SCHEMA), str(queries), "--db", str(db), "--engine", "store",
                 "tagsOfDoc", "p1=7"]) == 0
    out = capsys.readouterr().out
    assert "x" in out and "y" in out and "z" not in out and "2 rows" in out
    assert main(["query", str(PAPER_SCHEMA), str(queries), "--db", str(db), "--engine", "store",
                 "doc", "p1=8"]) == 0
    assert "eight" in capsys.readouterr().out
