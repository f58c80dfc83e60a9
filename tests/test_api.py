"""The Python API's habits: context manager, exported errors, __version__, short reprs,
``piql.loads``, ``Result.to_arrow``/``to_pandas``, ``load_many`` all or nothing."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import piql
from piql.errors import InputError
from tests.conftest import PAPER_SCHEMA

ROOT = Path(__file__).parents[1]
SOCIAL = ROOT / "examples" / "social"
TUTORIAL = ROOT / "docs" / "tutorial"
SCHEMA = PAPER_SCHEMA.read_text()
QUERIES = "-- name: tagsOfDoc\nSELECT tag, timestamp FROM Tags WHERE docId = <doc>\n"


def test_deployment_is_a_context_manager_and_closed_use_is_a_piql_error():
    app = piql.loads(SCHEMA, QUERIES)
    with app.deploy() as db:
        db.insert("Documents", docId=1, timestamp=5, text="x")
        assert db.query("tagsOfDoc", doc=1).rows == ()
    assert db.closed
    for use in (lambda: db.query("tagsOfDoc", doc=1), lambda: db.insert("Documents", docId=2),
                lambda: db.refresh(), lambda: db.check(), lambda: db.rows("Tags"),
                lambda: db.query_plan("tagsOfDoc"), lambda: db.load("Tags", [])):
        with pytest.raises(piql.PiqlError, match="is closed"):
            use()
    with pytest.raises(piql.DeploymentClosed):
        with db:
            pass


def test_context_manager_closes_on_an_error():
    app = piql.loads(SCHEMA, QUERIES)
    with pytest.raises(piql.ParameterError):
        with app.deploy() as db:
            db.query("tagsOfDoc")
    assert db.closed


def test_error_classes_and_version_are_exported():
    for name in ("PiqlError", "InputError", "ConstraintError", "ParameterError", "BoundExceeded",
                 "DeploymentError", "DeploymentClosed", "UnboundedQuery", "UnknownName",
                 "StoreBusy", "StoreRefused", "StoreOverflow", "DataFileError"):
        error = getattr(piql, name)
        assert issubclass(error, piql.PiqlError) and name in piql.__all__
    assert isinstance(piql.__version__, str) and piql.__version__[0].isdigit()
    app = piql.loads(SCHEMA, QUERIES)
    with app.deploy() as db:
        db.insert("Documents", docId=1, timestamp=5, text="x")
        with pytest.raises(piql.ConstraintError):
            db.insert("Documents", docId=1, timestamp=6, text="y")


def test_py_typed_ships_with_the_package():
    assert (Path(piql.__file__).parent / "py.typed").is_file()
    assert '"piql" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()


def test_reprs_are_short():
    app = piql.load(SOCIAL / "schema.sql", SOCIAL / "queries.sql")
    assert repr(app) == ("<piql.App 18 queries (SI-0 4, SI-1 5, SI-2 4, SI-3 3, unbounded 2) "
                         f"from {SOCIAL / 'queries.sql'}>")
    assert repr(app.plan).startswith("<piql.Plan 18 queries, 3 indexes, 10 views")
    assert repr(app.plan.queries[0]) == "<piql.QueryPlan userById: SI-0, ops <= 1>"
    with app.deploy() as db:
        assert repr(db) == "<piql.Deployment :memory: open, 18 queries, engine duckdb>"
        db.insert("users", userId=1, name="ada", email="a@x", createdAt=1)
        result = db.query("userById", userId=1)
        assert repr(result) == ("<piql.Result 1 rows x 4 columns (userId, name, email, "
                                "createdAt), 1 ops (bound 1)>")
    assert "closed" in repr(db)
    assert max(len(repr(x)) for x in (app, app.plan, db, result)) < 200


def test_loads_plans_text_and_names_it_in_errors():
    app = piql.loads(SCHEMA, QUERIES)
    assert app.levels == {"tagsOfDoc": "SI-0"}
    assert piql.load(SCHEMA, QUERIES, text=True).levels == app.levels
    with pytest.raises(InputError) as caught:
        piql.loads(SCHEMA, "-- name: q\nSELECT nope FROM Tags\n", queries_name="app.sql")
    assert str(caught.value).startswith("app.sql:2:8: unknown column 'nope'")


def test_load_takes_several_queries_files(tmp_path):
    a, b = tmp_path / "a.sql", tmp_path / "b.sql"
    a.write_text(QUERIES)
    b.write_text("-- name: doc\nSELECT text FROM Documents WHERE docId = <doc>\n")
    assert list(piql.load(PAPER_SCHEMA, [a, b]).levels) == ["tagsOfDoc", "doc"]


def test_result_to_arrow():
    app = piql.loads(SCHEMA, QUERIES)
    with app.deploy() as db:
        db.insert("Documents", docId=1, timestamp=5, text="x")
        db.insert("Tags", docId=1, tag="a", timestamp=7)
        db.insert("Tags", docId=1, tag="b", timestamp=None)
        table = db.query("tagsOfDoc", doc=1).to_arrow()
        empty = db.query("tagsOfDoc", doc=2).to_arrow()
    assert table.column_names == ["tag", "timestamp"]
    assert sorted(table.to_pylist(), key=lambda r: r["tag"]) == [
        {"tag": "a", "timestamp": 7}, {"tag": "b", "timestamp": None}]
    assert empty.column_names == ["tag", "timestamp"] and empty.num_rows == 0


def test_result_to_pandas_or_a_clear_error_without_pandas():
    app = piql.loads(SCHEMA, QUERIES)
    with app.deploy() as db:
        db.insert("Documents", docId=1, timestamp=5, text="x")
        db.insert("Tags", docId=1, tag="a", timestamp=7)
        result = db.query("tagsOfDoc", doc=1)
        if importlib.util.find_spec("pandas") is None:
            with pytest.raises(ImportError, match="needs pandas, which is not installed"):
                result.to_pandas()
        else:
            frame = result.to_pandas()
            assert list(frame.columns) == ["tag", "timestamp"]
            assert frame.to_dict("records") == [{"tag": "a", "timestamp": 7}]


def test_load_many_is_all_or_nothing_across_tables(tmp_path):
    app = piql.load(TUTORIAL / "schema.sql", TUTORIAL / "queries.sql")
    bad = tmp_path / "bad.csv"
    bad.write_text("userId,url,title,savedAt\n9,https://x,X,1\n")  # user 9 does not exist
    with app.deploy(tmp_path / "s.db") as db:
        with pytest.raises(piql.ConstraintError):
            db.load_many([("users", TUTORIAL / "users.csv"), ("bookmarks", bad)])
        assert db.rows("users") == [] and db.rows("bookmarks") == []
        assert db.load_many({"users": TUTORIAL / "users.csv",
                             "bookmarks": TUTORIAL / "data.csv"}) == [4, 12]
        assert db.check().consistent
        assert len(db.rows("bookmarks")) == 12
