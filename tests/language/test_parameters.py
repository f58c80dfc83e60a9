"""Parameter styles: ``<name>``, ``:name``, ``%(name)s``, ``$1`` and ``?`` read alike."""
from __future__ import annotations

import pytest

from piql.query_block import Param, Predicate, Attr
from tests.language.test_queries import at, block, error, parse, where

# The same query in every style; the names each style gives its parameters.
STYLES = [
    ("SELECT tag FROM Tags WHERE docId = <doc> AND timestamp > <since>", ("doc", "since")),
    ("SELECT tag FROM Tags WHERE docId = :doc AND timestamp > :since", ("doc", "since")),
    ("SELECT tag FROM Tags WHERE docId = %(doc)s AND timestamp > %(since)s", ("doc", "since")),
    ("SELECT tag FROM Tags WHERE docId = $1 AND timestamp > $2", ("p1", "p2")),
    ("SELECT tag FROM Tags WHERE docId = ? AND timestamp > ?", ("p1", "p2")),
]


@pytest.mark.parametrize("sql, names", STYLES)
def test_every_style_reads_as_the_same_query(sql, names):
    query = block(sql)
    assert query.params == names
    first, second = names
    assert Predicate(Attr("Tags", "docId"), "=", Param(first)) in query.predicates
    assert Predicate(Attr("Tags", "timestamp"), ">", Param(second)) in query.predicates


@pytest.mark.parametrize("sql, _", STYLES)
def test_the_query_is_shown_as_written(sql, _):
    (query,) = parse(f"-- name: q\n{sql}\n")
    assert query.sql == sql


def test_the_same_number_is_the_same_value_and_question_marks_count_in_order():
    assert block("SELECT tag FROM Tags WHERE docId = $2 AND timestamp > $2").params == ("p2",)
    query = block("SELECT tag FROM Tags WHERE timestamp > ? AND docId = ? AND tag = ?")
    assert query.params == ("p1", "p2", "p3")
    assert Predicate(Attr("Tags", "docId"), "=", Param("p2")) in query.predicates


def test_casts_strings_comments_and_quoted_names_hold_no_parameters():
    query = block("SELECT tag AS \"a:b ?\" FROM Tags -- :c ?\n"
                  "WHERE docId = :d /* :e $1 ? */ AND tag = 'x:y ? $1 %(z)s'")
    assert query.params == ("d",)
    assert query.select[0].name == "a:b ?"
    # `x::type` is a cast, not a parameter `:type`; a parameter may be cast (aiosql's `:d::int`)
    for sql in ("docId = :d::integer", "docId::integer = :d"):
        (cast,) = parse(f"-- name: q\nSELECT tag FROM Tags WHERE {sql}\n")
        if cast.block is not None:
            assert cast.block.params == ("d",)
        else:  # casts are refused: the parameter is quoted as written, no `:integer` in sight
            (refused,) = cast.unsupported
            assert "CAST(" in refused.construct and ":integer" not in refused.construct
            assert ":d" in refused.construct or ":d" not in sql.split("=")[0]


@pytest.mark.parametrize("sql, first, second", [
    ("SELECT tag FROM Tags WHERE docId = :doc AND timestamp > ?", ":doc", "?"),
    ("SELECT tag FROM Tags WHERE docId = <doc> AND timestamp > $1", "<doc>", "$1"),
    ("SELECT tag FROM Tags WHERE docId = %(doc)s AND timestamp > :since", "%(doc)s", ":since"),
])
def test_mixing_styles_is_an_error_at_the_second_style(sql, first, second):
    text = f"-- name: q\n{sql}\n"
    err = error(text)
    assert "mixes parameter styles" in err.message and "one style" in err.message
    assert repr(first) in err.message and repr(second) in err.message
    assert f"q.sql:{at(text, first)[0]}:{at(text, first)[1]}" in err.message
    assert where(err.location) == at(text, second)


def test_mixing_is_per_query():
    queries = parse("-- name: a\nSELECT tag FROM Tags WHERE docId = ?\n"
                    "-- name: b\nSELECT tag FROM Tags WHERE docId = :doc\n")
    assert [q.block.params for q in queries] == [("p1",), ("doc",)]  # type: ignore[union-attr]


@pytest.mark.parametrize("sql, needle", [
    ("SELECT * FROM :t", ":t"),
    ("SELECT tag AS %(x)s FROM Tags", "%(x)s"),
    ("SELECT * FROM Tags t WHERE t.$1 = 1", "$1"),
])
def test_a_parameter_cannot_stand_for_a_name_in_any_style(sql, needle):
    text = f"-- name: q\n{sql}\n"
    err = error(text)
    assert f"parameter {needle} stands where a name is expected" in err.message
    assert where(err.location) == at(text, needle)


@pytest.mark.parametrize("sql, needle", [
    # `?` becomes the longer `$p1`: what follows keeps its place in the file.
    ("SELECT tag FROM Tags WHERE docId = ? AND AND tag = ?", "AND tag"),
    ("SELECT tag FROM Tags WHERE docId = $1 AND AND tag = $2", "AND tag"),
    ("SELECT tag FROM Tags WHERE docId = %(d)s AND AND tag = %(t)s", "AND tag"),
    ("SELECT tag FROM Tags\n  WHERE docId = ?  AND   AND tag = ?", "AND tag"),
])
def test_syntax_errors_after_parameters_keep_their_place(sql, needle):
    text = f"-- name: q\n{sql}\n"
    err = error(text)
    assert where(err.location) == at(text, needle)


def test_an_unknown_column_after_a_question_mark_is_placed_exactly():
    text = "-- name: q\nSELECT tag FROM Tags WHERE docId = ? AND nope = ?\n"
    assert where(error(text).location) == at(text, "nope")


def test_a_syntax_error_names_the_parameter_as_written():
    err = error("-- name: q\nSELECT tag FROM Tags WHERE docId = ? ?\n")
    assert "'?'" in err.message
