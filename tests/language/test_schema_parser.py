"""The shipped schema parser (grammar/schema.parser) is the grammar's: built from its
current text, and parsing every schema as a parser built now does."""
from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from lark import Lark

from piql.language import schema_parser
from piql.language.schema_scan import scan_schema
from tests.conftest import FIXTURES

ROOT = Path(__file__).parents[2]
SCHEMAS = sorted(FIXTURES.glob("*schema*.sql")) + sorted(ROOT.glob("examples/*/schema.sql")) + [
    FIXTURES / "pg_dump_app.sql", FIXTURES / "sqlite_migrations.sql"]


@pytest.fixture(scope="module")
def built() -> Lark:
    return Lark(schema_parser.grammar_text(), **schema_parser.OPTIONS)


def test_the_shipped_parser_is_built_from_the_current_grammar():
    with open(schema_parser._resource_path(schema_parser.SHIPPED), "rb") as shipped:
        recorded = pickle.load(shipped)
    assert recorded == schema_parser.digest(schema_parser.grammar_text()), \
        "grammar/schema.lark changed: rebuild grammar/schema.parser with `make parser`"
    assert schema_parser._load_shipped(recorded) is not None  # this lark reads it


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_the_shipped_parser_parses_as_a_parser_built_now(built, path):
    shipped = schema_parser._load_shipped(schema_parser.digest(schema_parser.grammar_text()))
    text = scan_schema(path.read_text(encoding="utf-8"), path.name).blanked()
    assert shipped.parse(text, start="start") == built.parse(text, start="start")


def test_a_stale_shipped_parser_is_not_used():
    assert schema_parser._load_shipped("the digest of another grammar") is None


def test_the_parser_of_a_run_is_the_shipped_one(monkeypatch):
    """No LALR tables are built when the shipped file matches."""
    def refuse(*args, **kwargs):
        raise AssertionError("the parser was built")

    schema_parser.parser.cache_clear()
    monkeypatch.setattr(schema_parser, "Lark", type("NoBuild", (Lark,), {"__init__": refuse}))
    try:
        assert schema_parser.parser().parse("CREATE TABLE t (id BIGINT PRIMARY KEY);",
                                            start="start")
    finally:
        schema_parser.parser.cache_clear()
