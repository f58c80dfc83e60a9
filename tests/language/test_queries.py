"""The queries file: ``-- name:`` blocks, resolution against the catalog, exact error places."""
from __future__ import annotations

import pytest

from piql.errors import InputError, Location
from piql.query_block import Aggregate, Attr, Epoch, Literal, NamedQuery, Param, Predicate
from piql.language.queries import parse_queries
from tests.conftest import PAPER_QUERIES, paper_catalog

CATALOG = paper_catalog()
FILE = "q.sql"


def at(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """(line, column), both from 1, of the ``nth`` occurrence of ``needle`` in ``text``."""
    offset = -1
    for _ in range(nth):
        offset = text.index(needle, offset + 1)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def where(location: Location | None) -> tuple[int, int]:
    assert location is not None
    assert location.file == FILE
    return location.line, location.column


def parse(text: str) -> tuple[NamedQuery, ...]:
    return parse_queries(text, CATALOG, FILE)


def block(sql: str):
    """The resolved block of a file holding just ``sql``."""
    query = parse(f"-- name: q\n{sql}\n")[0]
    assert query.unsupported == (), query.unsupported
    return query.block


def error(text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        parse(text)
    return caught.value


# -- splitting into blocks ------------------------------------------------------

def test_the_paper_file_splits_into_its_six_named_queries():
    queries = parse_queries(PAPER_QUERIES.read_text(), CATALOG, "paper_queries.sql")
    assert [q.name for q in queries] == [
        "tagsOfDoc", "newestWithTag", "twoTags", "countTags", "countTagsWindowed", "popularTags"]
    assert all(q.block is not None and q.unsupported == () for q in queries)
    text = PAPER_QUERIES.read_text()
    two_tags = queries[2]
    assert (two_tags.location.file, two_tags.location.line) == (
        "paper_queries.sql", at(text, "-- name: twoTags")[0])
    assert two_tags.sql.startswith("SELECT t1.docId")
    assert "<tag1>" in two_tags.sql  # the text as written, placeholders included


def test_blocks_split_on_name_lines_with_comments_and_blank_lines_between():
    text = ("-- A header comment is fine.\n\n"
            "-- name: first\nSELECT * FROM Tags WHERE docId = <doc>\n\n"
            "-- about the second query\n"
            "--   name:   second  \nSELECT *\nFROM Documents\nWHERE docId = <doc>;\n")
    first, second = parse(text)
    assert (first.name, second.name) == ("first", "second")
    assert first.location.line == 3 and second.location.line == 7
    assert second.block.relations[0].table == "Documents"
    assert second.block.predicates[0].location.line == 10


def test_name_line_is_case_insensitive():
    (query,) = parse("-- NAME: Shout\nSELECT * FROM Tags WHERE docId = <d>\n")
    assert query.name == "Shout"


def test_periodic_and_view_options():
    text = ("-- name: popular\n-- periodic: 1 min\n-- view: popularView\n"
            "SELECT tag, COUNT(*) FROM (SELECT * FROM Tags ORDER BY timestamp LIMIT 50) GROUP BY tag\n"
            "-- name: plain\nSELECT * FROM Tags WHERE docId = <d>\n")
    popular, plain = parse(text)
    assert popular.periodic == "1 min"
    assert popular.view_name == "popularView"
    assert popular.block is not None
    assert (plain.periodic, plain.view_name) == (None, None)


def test_paper_file_options():
    queries = {q.name: q for q in parse_queries(PAPER_QUERIES.read_text(), CATALOG, "p.sql")}
    assert queries["countTags"].view_name == "docsPerTag"
    assert queries["countTagsWindowed"].view_name == "docsPerTagWindowed"
    assert queries["popularTags"].periodic == "1 min"


def test_sql_before_the_first_name_is_an_error_with_its_place():
    text = "-- a comment\n\n   SELECT * FROM Tags\n-- name: q\nSELECT * FROM Tags\n"
    err = error(text)
    assert where(err.location) == at(text, "SELECT")
    assert "-- name:" in err.message


def test_duplicate_query_names_are_an_error_at_the_second():
    text = ("-- name: q\nSELECT * FROM Tags WHERE docId = <d>\n"
            "-- name: Q\nSELECT * FROM Tags WHERE docId = <d>\n")
    err = error(text)
    assert "duplicate query name" in err.message
    assert err.location.line == 3
    assert "q.sql:1:" in err.message  # where it was first defined


def test_duplicate_name_location_points_at_the_name():
    text = ("-- name: q\nSELECT * FROM Tags WHERE docId = <d>\n"
            "-- name: q\nSELECT * FROM Tags WHERE docId = <d>\n")
    assert where(error(text).location) == at(text, "q\n", 2)


def test_a_block_without_sql_is_an_error():
    text = ("-- name: empty\n\n-- only a comment\n;\n"
            "-- name: full\nSELECT * FROM Tags WHERE docId = <d>\n")
    err = error(text)
    assert "'empty' has no SQL" in err.message
    assert err.location.line == 1


def test_a_name_line_at_the_end_of_the_file_is_an_empty_block():
    err = error("-- name: a\nSELECT * FROM Tags WHERE docId = <d>\n-- name: b\n")
    assert "'b' has no SQL" in err.message and err.location.line == 3


@pytest.mark.parametrize("name", ["", "1bad", "has-dash-", "two words", "a?"])
def test_a_name_must_be_an_identifier(name):
    err = error(f"-- name: {name}\nSELECT * FROM Tags\n")
    assert "expected a query name" in err.message
    assert err.location.line == 1


def test_a_view_option_must_be_an_identifier():
    err = error("-- name: q\n-- view: two words\nSELECT * FROM Tags WHERE docId = <d>\n")
    assert "expected a view name" in err.message and err.location.line == 2


def test_two_statements_in_one_block_are_an_error():
    err = error("-- name: q\nSELECT * FROM Tags; SELECT * FROM Documents\n")
    assert "exactly one SQL statement" in err.message


def test_semicolon_terminated_queries_with_comments_between():
    text = ("-- name: a\nSELECT * FROM Tags WHERE docId = <d>;\n\n"
            "-- the tags of one document, again\n"
            "-- name: b\nSELECT * FROM Tags WHERE docId = <d>;\n")
    assert [q.name for q in parse(text)] == ["a", "b"]


def test_a_block_comment_header_is_not_sql():
    text = "/* Queries of the tagging service. */\n-- name: q\nSELECT * FROM Tags WHERE docId = <d>\n"
    assert [q.name for q in parse(text)] == ["q"]


def test_query_sql_does_not_take_the_next_querys_comment():
    queries = parse_queries(PAPER_QUERIES.read_text(), CATALOG, "paper_queries.sql")
    two_tags = [q for q in queries if q.name == "twoTags"][0]
    assert two_tags.sql.endswith("LIMIT 5")


def test_options_may_follow_comments_in_the_header():
    text = ("-- name: q\n-- What the screen shows.\n-- view: qView\n-- periodic: 5 min\n"
            "SELECT COUNT(*) FROM Tags WHERE tag = <t>\n")
    (query,) = parse(text)
    assert (query.view_name, query.periodic) == ("qView", "5 min")
    assert query.sql == "SELECT COUNT(*) FROM Tags WHERE tag = <t>"


def test_option_lines_in_a_crlf_file():
    (query,) = parse("-- name: q\r\n-- view: v\r\nSELECT COUNT(*) FROM Tags WHERE tag = <t>;\r\n")
    assert query.view_name == "v" and query.sql == "SELECT COUNT(*) FROM Tags WHERE tag = <t>;"


def test_a_bad_option_value_is_located_at_the_value():
    text = "-- name: q\n-- view: two words\n-- periodic: soon\nSELECT * FROM Tags WHERE docId = <d>\n"
    view, periodic = error(text).all_errors
    assert where(view.location) == at(text, "two words")
    assert where(periodic.location) == at(text, "soon")


@pytest.mark.parametrize("text, needle", [
    ("-- name: q\nSELECT * FROM Tags WHERE docId = <d>\n-- view: late\n"
     "-- name: r\nSELECT * FROM Tags WHERE docId = <d>\n", "view: late"),
    ("-- periodic: 1 min\n-- name: q\nSELECT * FROM Tags WHERE docId = <d>\n", "periodic"),
])
def test_an_option_line_outside_a_query_header_is_an_error(text, needle):
    err = error(text)
    assert "header" in err.message
    assert where(err.location) == at(text, needle)


def test_a_duplicate_option_line_is_an_error():
    text = "-- name: q\n-- view: a\n-- view: b\nSELECT COUNT(*) FROM Tags WHERE tag = <t>\n"
    err = error(text)
    assert "duplicate '-- view:'" in err.message and where(err.location) == at(text, "b\n")


def test_a_name_with_blanks_is_a_bad_name_not_a_comment():
    text = "-- name: two words\nSELECT * FROM Tags WHERE docId = <d>\n"
    err = error(text)
    assert "expected a query name" in err.message and where(err.location) == at(text, "two")


def test_a_comment_on_the_statements_last_line_stays_in_its_sql():
    text = ("-- name: q\nSELECT * FROM Tags WHERE docId = <d> -- one document\n\n"
            "-- about r\n-- name: r\nSELECT * FROM Tags WHERE docId = <d>\n")
    assert parse(text)[0].sql == "SELECT * FROM Tags WHERE docId = <d> -- one document"


def test_block_comments_inside_a_query():
    text = "-- name: q\n/* about q,\n   over lines */\nSELECT * /* every <column> */ FROM Tags WHERE docId = <d>\n"
    (query,) = parse(text)
    assert query.block.params == ("d",)
    assert where(query.block.predicates[0].location) == at(text, "docId = <d>")


# -- resolution: parameters, predicates, columns ------------------------------------

def test_placeholders_become_params():
    query = block("SELECT * FROM Tags WHERE docId = <doc> AND tag = <tag_1>")
    assert [p.right for p in query.predicates] == [Param("doc"), Param("tag_1")]
    assert query.params == ("doc", "tag_1")


def test_angle_brackets_inside_a_string_literal_are_not_a_parameter():
    query = block("SELECT * FROM Tags WHERE tag = '<b>'")
    assert query.predicates[0].right == Literal("<b>", "'<b>'")


@pytest.mark.parametrize("name", ["from", "to", "limit", "order", "select", "where", "and"])
def test_a_parameter_may_be_named_like_a_sql_keyword(name):
    text = f"-- name: q\nSELECT * FROM Tags WHERE timestamp > <{name}> AND tag = <t>\n"
    (query,) = parse(text)
    assert [p.right for p in query.block.predicates] == [Param(name), Param("t")]
    assert query.block.params == (name, "t")
    # The rewritten placeholder keeps its length: what follows is still located exactly.
    assert where(query.block.predicates[1].location) == at(text, "tag = <t>")


def test_keyword_named_parameters_are_located_and_quoted_as_written():
    text = "-- name: q\nSELECT * FROM Tags WHERE <from> <= timestamp ORDER BY timestamp LIMIT <limit>\n"
    (query,) = parse(text)
    (limit,) = query.unsupported
    assert limit.construct == "LIMIT <limit>" and where(limit.location) == at(text, "LIMIT")


def test_a_placeholder_in_a_comment_or_quoted_name_is_not_a_parameter():
    query = block('SELECT docId AS "<x>" FROM Tags WHERE docId = <d> /* not <e> */')
    assert query.params == ("d",)
    assert query.select[0].name == "<x>"


@pytest.mark.parametrize("sql, needle", [
    ("SELECT * FROM <t>", "<t>"),
    ("SELECT tag AS <x> FROM Tags", "<x>"),
    ("SELECT * FROM Tags t WHERE t.<c> = 1", "<c>"),
    ("SELECT <f>(tag) FROM Tags", "<f>"),
])
def test_a_parameter_cannot_stand_for_a_name(sql, needle):
    text = f"-- name: q\n{sql}\n"
    err = error(text)
    assert f"parameter {needle}" in err.message and "name" in err.message
    assert where(err.location) == at(text, needle)


@pytest.mark.parametrize("sql, expected", [
    ("t.docId = <p>", Predicate(Attr("t", "docId"), "=", Param("p"))),
    ("<p> = t.docId", Predicate(Attr("t", "docId"), "=", Param("p"))),
    ("<p> < t.timestamp", Predicate(Attr("t", "timestamp"), ">", Param("p"))),
    ("<p> <= t.timestamp", Predicate(Attr("t", "timestamp"), ">=", Param("p"))),
    ("<p> > t.timestamp", Predicate(Attr("t", "timestamp"), "<", Param("p"))),
    ("<p> >= t.timestamp", Predicate(Attr("t", "timestamp"), "<=", Param("p"))),
    ("5 >= t.docId", Predicate(Attr("t", "docId"), "<=", Literal(5, "5"))),
    ("'x' = t.tag", Predicate(Attr("t", "tag"), "=", Literal("x", "'x'"))),
    ("t.timestamp > -3", Predicate(Attr("t", "timestamp"), ">", Literal(-3, "-3"))),
])
def test_predicates_are_normalized_with_the_attribute_on_the_left(sql, expected):
    (predicate,) = block(f"SELECT * FROM Tags t WHERE {sql}").predicates
    assert predicate == expected


@pytest.mark.parametrize("sql, kind", [
    ("t.tag = <p>", "attr=param"),
    ("t.timestamp < <p>", "attr op param"),
    ("<p> >= t.timestamp", "attr op param"),
    ("t.docId = d.docId", "attr=attr"),
    ("t.timestamp < d.timestamp", "attr op attr"),
    ("t.timestamp <= 100", "attr op literal"),
    ("t.tag = 'x'", "attr=literal"),
])
def test_predicate_kinds(sql, kind):
    query = block(f"SELECT t.tag FROM Tags t, Documents d WHERE {sql}")
    assert [p.kind for p in query.predicates] == [kind]


def test_predicate_locations_are_exact():
    text = ("-- name: q\nSELECT t.tag FROM Tags t, Documents d\n"
            "WHERE t.docId = d.docId\n  AND <since> < d.timestamp\n")
    join, since = parse(text)[0].block.predicates
    assert where(join.location) == at(text, "t.docId = d")
    assert where(since.location)[0] == at(text, "<since>")[0]


def test_predicate_starting_with_a_parameter_is_located_at_the_parameter():
    text = "-- name: q\nSELECT * FROM Documents d\nWHERE <since> < d.timestamp\n"
    (since,) = parse(text)[0].block.predicates
    assert where(since.location) == at(text, "<since>")


def test_condition_between_parameters_is_a_filter():
    """Issue 14: a condition on parameters alone is checked on the rows read (a filter)."""
    text = "-- name: q\nSELECT * FROM Tags WHERE tag = <a> AND <a> = <b>\n"
    (query,) = parse(text)
    assert query.unsupported == ()
    assert [str(f) for f in query.block.filters] == ["<a> = <b>"]


def test_doubled_comma_in_select_list_is_a_syntax_error():
    text = "-- name: q\nSELECT tag,, docId FROM Tags WHERE docId = <d>\n"
    line, column = at(text, ",,")
    assert where(error(text).location) in {(line, column), (line, column + 1)}


@pytest.mark.parametrize("sql, needle", [
    ("SELECT , tag FROM Tags", ", tag"),
    ("SELECT tag, FROM Tags", "FROM"),
    ("SELECT COUNT(tag,) FROM Tags", ")"),
    ("SELECT tag FROM Tags t,", ",\n"),
])
def test_other_empty_list_items_are_syntax_errors(sql, needle):
    text = f"-- name: q\n{sql}\n"
    err = error(text)
    assert "syntax error" in err.message.lower() and "','" in err.message
    assert where(err.location) == at(text, needle)


def test_between_becomes_two_predicates():
    query = block("SELECT * FROM Tags t WHERE t.tag = <tag> AND t.timestamp BETWEEN <lo> AND <hi>")
    assert list(query.predicates) == [
        Predicate(Attr("t", "tag"), "=", Param("tag")),
        Predicate(Attr("t", "timestamp"), ">=", Param("lo")),
        Predicate(Attr("t", "timestamp"), "<=", Param("hi")),
    ]


def test_join_on_adds_its_conditions():
    query = block("SELECT d.text FROM Documents d JOIN Tags t ON t.docId = d.docId AND t.tag = 'x' "
                  "WHERE d.timestamp > <since>")
    assert [r.alias for r in query.relations] == ["d", "t"]
    assert [r.table for r in query.relations] == ["Documents", "Tags"]
    assert set(query.predicates) == {
        Predicate(Attr("t", "docId"), "=", Attr("d", "docId")),
        Predicate(Attr("t", "tag"), "=", Literal("x", "'x'")),
        Predicate(Attr("d", "timestamp"), ">", Param("since")),
    }


def test_inner_join_keyword_is_a_join_too():
    query = block("SELECT d.text FROM Documents d INNER JOIN Tags t ON t.docId = d.docId")
    assert query.predicates == (Predicate(Attr("t", "docId"), "=", Attr("d", "docId")),)


def test_unqualified_columns_resolve_when_unambiguous():
    query = block("SELECT text, tag FROM Documents d, Tags t WHERE tag = <t> AND d.docId = t.docId")
    assert [s.expr for s in query.select] == [Attr("d", "text"), Attr("t", "tag")]
    assert query.predicates[0].left == Attr("t", "tag")


def test_names_are_case_insensitive_and_keep_their_declared_case():
    query = block("select TEXT from documents where DOCID = <d>")
    assert query.relations[0].table == "Documents"
    assert query.select[0].expr.column == "text"
    assert query.predicates[0].left.column == "docId"


def test_a_table_without_alias_is_named_by_its_table():
    query = block("SELECT tag FROM Tags WHERE docId = <d>")
    assert query.relations[0].alias == "Tags"
    assert query.predicates[0].left == Attr("Tags", "docId")


def test_ambiguous_column_names_the_candidates_and_its_place():
    text = ("-- name: ok\nSELECT * FROM Tags WHERE docId = <d>\n\n"
            "-- name: q\nSELECT t.tag\nFROM Tags t, Documents d\n"
            "WHERE t.docId = d.docId AND timestamp > <since>\n")
    err = error(text)
    assert "ambiguous column 'timestamp'" in err.message
    assert "t.timestamp" in err.message and "d.timestamp" in err.message
    assert where(err.location) == at(text, "timestamp >")
    assert str(err).startswith(f"q.sql:{err.location.line}:{err.location.column}: ")


def test_ambiguous_column_in_select_list():
    text = "-- name: q\nSELECT docId FROM Tags t, Documents d WHERE t.docId = d.docId\n"
    err = error(text)
    assert "ambiguous column 'docId'" in err.message
    assert where(err.location) == at(text, "docId FROM")


@pytest.mark.parametrize("sql, needle, words", [
    ("SELECT t.nope FROM Tags t", "t.nope", ["unknown column 'nope'", "'t'"]),
    ("SELECT tag FROM Tags WHERE nope = <x>", "nope", ["unknown column 'nope'"]),
    ("SELECT tag FROM Tags ORDER BY nope", "nope", ["unknown column 'nope'"]),
    ("SELECT tag, COUNT(*) FROM Tags GROUP BY nope", "nope", ["unknown column 'nope'"]),
    ("SELECT * FROM Tags t, Nope n", "Nope", ["unknown table 'Nope'", "Documents", "Tags"]),
    ("SELECT x.tag FROM Tags t", "x.tag", ["unknown relation 'x'"]),
    ("SELECT * FROM Tags t WHERE x.docId = <d>", "x.docId", ["unknown relation 'x'"]),
    ("SELECT x.* FROM Tags t", "x.*", ["unknown relation 'x'"]),
    ("SELECT * FROM Tags t, Tags t", "Tags t\n", ["duplicate relation alias 't'"]),
])
def test_unknown_names_are_errors_with_exact_location(sql, needle, words):
    text = f"-- name: first\nSELECT * FROM Tags WHERE docId = <d>\n\n-- name: q\n{sql}\n"
    err = error(text)
    for word in words:
        assert word in err.message
    assert where(err.location) == at(text, needle)


def test_unknown_column_on_a_later_line_of_a_crlf_file():
    text = "-- name: q\r\nSELECT *\r\n  FROM Tags\r\n  WHERE tag = <t> AND\r\n    nope = 1\r\n"
    assert where(error(text).location) == (5, 5)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM Tags WHERE tag = = <x>",
    "SELECT * FROM Tags WHERE (tag = <x>",
    "SELECT * FROM",
    "SELECT * FROM Tags WHERE tag = 'unterminated",
    "SELECT * FROM Tags WHERE tag = <x",
    "SELECT * FROM Tags WHERE tag = <t> ORDER BY",
    "SELECT * FROM Tags LIMIT",
    "SELECT * FROM Tags WHERE",
])
def test_syntax_errors_are_located_inside_the_query(sql):
    text = f"-- name: ok\nSELECT * FROM Tags WHERE docId = <d>\n-- name: bad\n{sql}\n"
    err = error(text)
    assert "syntax error" in err.message.lower()
    line, column = where(err.location)
    assert line == 4
    assert 1 <= column <= len(sql) + 1


def test_syntax_error_points_at_the_offending_token():
    text = "-- name: q\nSELECT * FROM Tags WHERE tag = = <x>\n"
    assert where(error(text).location) == at(text, "= <x>")


@pytest.mark.parametrize("sql", ["SELECT * FROM Tags WHERE tag = = <x>", "SELECT * FROM"])
def test_syntax_error_messages_do_not_leak_parser_internals(sql):
    message = error(f"-- name: q\n{sql}\n").message
    assert "<class" not in message and "Token token_type" not in message
    assert "sqlglot" not in message


@pytest.mark.parametrize("sql, message, needle", [
    ("SELECT * FROM Tags WHERE tag = = <x>", "expected an expression after '=', found '='", "= <x>"),
    ("SELECT * FROM", "unexpected end of query after FROM, expected a table name", "FROM"),
    ("SELECT * FROM Tags WHERE", "unexpected end of query after WHERE, expected a condition", "WHERE"),
    ("SELECT * FROM Tags WHERE tag = <t> AND", "after AND, expected a condition", "AND"),
    ("SELECT * FROM Tags LIMIT", "after LIMIT, expected a number", "LIMIT"),
    ("SELECT * FROM Tags WHERE (tag = <x>", "after '<x>', expected ')'", "<x>"),
    ("SELECT * FROM Tags WHERE docId = 1 )", "unexpected ')'", ")"),
])
def test_syntax_error_messages_say_what_was_expected(sql, message, needle):
    text = f"-- name: q\n{sql}\n"
    err = error(text)
    assert err.message.startswith("SQL syntax error: ") and message in err.message, err.message
    assert where(err.location) == at(text, needle)


@pytest.mark.parametrize("sql, needle, what", [
    ("SELECT * FROM Tags WHERE tag = 'open", "'open", "string literal"),
    ('SELECT "open FROM Tags', '"open', "quoted identifier"),
    ("SELECT * FROM Tags /* open", "/* open", "'/*' comment"),
])
def test_unterminated_quotes_and_comments_are_located_where_they_open(sql, needle, what):
    text = f"-- name: q\n{sql}\n\n-- name: r\nSELECT * FROM Tags WHERE docId = <d>\n"
    err = error(text)
    assert err.message == f"SQL syntax error: unterminated {what}"
    assert where(err.location) == at(text, needle)


def test_epoch_with_percent():
    query = block("SELECT COUNT(*) FROM Tags t WHERE t.tag = <tag> "
                  "AND t.timestamp - t.timestamp % 60000 = <epoch>")
    assert query.predicates[1] == Predicate(Epoch(Attr("t", "timestamp"), 60000), "=", Param("epoch"))
    assert query.predicates[1].kind == "attr=param"


def test_epoch_with_mod_and_parentheses_and_on_the_right():
    query = block("SELECT COUNT(*) FROM Tags WHERE tag = <tag> "
                  "AND <epoch> = timestamp - MOD(timestamp, 60000)")
    assert query.predicates[1] == Predicate(Epoch(Attr("Tags", "timestamp"), 60000), "=",
                                            Param("epoch"))
    query = block("SELECT COUNT(*) FROM Tags WHERE (timestamp - (timestamp % 1000)) = <e>")
    assert query.predicates[0].left == Epoch(Attr("Tags", "timestamp"), 1000)


def test_epoch_in_select_and_group_by():
    query = block("SELECT timestamp - timestamp % 60000 AS minute, COUNT(*) FROM Tags "
                  "GROUP BY timestamp - timestamp % 60000")
    epoch = Epoch(Attr("Tags", "timestamp"), 60000)
    assert query.select[0].name == "minute" and query.select[0].expr == epoch
    assert query.group_by == (epoch,)


def test_an_epoch_of_two_different_columns_is_not_an_epoch():
    """It is arithmetic (a filter on the rows read), not a time-window epoch."""
    (query,) = parse("-- name: q\nSELECT * FROM Tags WHERE timestamp - docId % 60 = <e>\n")
    assert query.block.predicates == ()
    (condition,) = query.block.filters
    assert str(condition) == "(Tags.timestamp - (Tags.docId % 60)) = <e>"


def test_select_star_expands_to_every_column():
    query = block("SELECT * FROM Tags WHERE docId = <d>")
    assert [(s.name, s.expr) for s in query.select] == [
        ("docId", Attr("Tags", "docId")), ("tag", Attr("Tags", "tag")),
        ("timestamp", Attr("Tags", "timestamp"))]


def test_select_alias_star_expands_that_relation():
    query = block("SELECT d.* FROM Tags t, Documents d WHERE t.docId = d.docId AND t.tag = <t>")
    assert [s.expr for s in query.select] == [
        Attr("d", "docId"), Attr("d", "timestamp"), Attr("d", "text")]


def test_select_star_over_a_join_keeps_output_names_unique():
    query = block("SELECT * FROM Tags t, Documents d WHERE t.docId = d.docId AND t.tag = <t>")
    assert len(query.select) == 6
    names = [s.name.lower() for s in query.select]
    assert len(set(names)) == len(names)


def test_aggregates_and_group_by():
    query = block("SELECT tag, COUNT(*), SUM(timestamp) AS total FROM Tags GROUP BY tag")
    assert [s.expr for s in query.select] == [
        Attr("Tags", "tag"), Aggregate("COUNT", None), Aggregate("SUM", Attr("Tags", "timestamp"))]
    assert query.select[2].name == "total"
    assert query.group_by == (Attr("Tags", "tag"),)


def test_order_by_an_output_alias():
    query = block("SELECT d.timestamp AS ts, d.docId FROM Documents d, Tags t "
                  "WHERE t.docId = d.docId AND t.tag = <tag> ORDER BY ts DESC LIMIT 3")
    assert len(query.order_by) == 1
    assert query.order_by[0].expr == Attr("d", "timestamp")
    assert query.order_by[0].desc


def test_order_by_an_output_alias_that_shadows_an_input_column():
    query = block("SELECT docId AS tag FROM Tags WHERE tag = <t> ORDER BY tag")
    assert query.order_by[0].expr == Attr("Tags", "docId")


def test_order_by_an_output_name_of_a_column_that_is_ambiguous_among_the_inputs():
    query = block("SELECT t.docId FROM Tags t, Documents d WHERE t.docId = d.docId AND t.tag = <x> "
                  "ORDER BY docId")
    assert query.order_by[0].expr == Attr("t", "docId")


def test_limit():
    query = block("SELECT * FROM Tags WHERE tag = <tag> ORDER BY timestamp LIMIT 10")
    assert query.limit == 10
    assert query.order_by[0].expr == Attr("Tags", "timestamp") and not query.order_by[0].desc
    assert block("SELECT * FROM Tags WHERE docId = <d>").limit is None


def test_from_subquery_becomes_a_derived_relation():
    query = block("SELECT w.tag, COUNT(*) FROM (SELECT * FROM Tags ORDER BY timestamp LIMIT 5000) w "
                  "GROUP BY w.tag")
    (relation,) = query.relations
    assert relation.alias == "w"
    assert not relation.is_base and relation.table is None
    assert relation.columns == ("docId", "tag", "timestamp")
    inner = relation.subquery
    assert inner.relations[0].table == "Tags"
    assert inner.limit == 5000
    assert inner.order_by[0].expr == Attr("Tags", "timestamp")
    assert query.group_by == (Attr("w", "tag"),)


def test_unaliased_from_subquery_and_its_parameters():
    query = block("SELECT tag, COUNT(*) FROM (SELECT * FROM Tags WHERE timestamp > <since> "
                  "ORDER BY timestamp LIMIT 50) GROUP BY tag")
    (relation,) = query.relations
    assert relation.subquery is not None and relation.columns == ("docId", "tag", "timestamp")
    assert query.params == ("since",)
    assert query.select[0].expr.alias == relation.alias


# -- unsupported constructs -----------------------------------------------------------

UNSUPPORTED = {
    # case: (SQL, construct reported, where the construct starts)
    "in_subquery": ("SELECT * FROM Tags WHERE docId NOT IN "
                    "(SELECT docId FROM Documents WHERE timestamp = <t>)", "NOT IN (SELECT",
                    "docId NOT IN"),
    "exists": ("SELECT * FROM Tags t WHERE t.tag = <a> OR EXISTS "
               "(SELECT * FROM Documents d WHERE d.docId = t.docId)", "EXISTS", "EXISTS"),
    "window": ("SELECT docId, ROW_NUMBER() OVER (PARTITION BY tag ORDER BY timestamp) AS rn "
               "FROM Tags", "window function", "ROW_NUMBER()"),
    "right_join": ("SELECT t.tag FROM Documents d RIGHT JOIN Tags t ON t.docId = d.docId "
                   "WHERE d.docId = <d>", "RIGHT", "RIGHT JOIN"),
    "limit_param": ("SELECT * FROM Tags WHERE tag = <t> ORDER BY timestamp LIMIT <n>",
                    "LIMIT", "LIMIT"),
    "ilike": ("SELECT * FROM Tags WHERE tag ILIKE 'a%'", "ILIKE", "tag ILIKE"),
    "distinct_on": ("SELECT DISTINCT ON (tag) tag FROM Tags WHERE docId = <d>", "DISTINCT ON",
                    "(tag)"),
    "function": ("SELECT ABS(docId) AS a FROM Tags WHERE docId = <d>", "expression", "ABS"),
    "subquery_in_where": ("SELECT * FROM Documents WHERE timestamp = "
                          "(SELECT MAX(timestamp) FROM Documents)", "subquery", "(SELECT"),
}


def unsupported_file(sql: str) -> str:
    return (f"-- name: before\nSELECT * FROM Tags WHERE docId = <d>\n\n"
            f"-- name: bad\n{sql}\n\n"
            f"-- name: after\nSELECT * FROM Tags WHERE tag = <t> ORDER BY timestamp LIMIT 10\n")


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_unsupported_construct_is_reported_and_the_other_queries_still_parse(case):
    sql, construct, _ = UNSUPPORTED[case]
    before, bad, after = parse(unsupported_file(sql))
    assert bad.name == "bad" and bad.block is None
    assert any(construct in u.construct for u in bad.unsupported), bad.unsupported
    for u in bad.unsupported:
        assert u.location.file == FILE and u.location.line >= 1 and u.location.column >= 1
    assert bad.sql == sql
    assert before.block is not None and before.unsupported == ()
    assert after.block is not None and after.block.limit == 10


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_unsupported_construct_location_is_where_it_starts(case):
    sql, construct, needle = UNSUPPORTED[case]
    text = unsupported_file(sql)
    bad = parse(text)[1]
    (reported,) = [u for u in bad.unsupported if construct in u.construct][:1]
    line, column = at(text, needle)
    allowed = {(line, column)}
    if needle.startswith("("):  # the parenthesis or the SELECT after it
        allowed.add((line, column + 1))
    assert where(reported.location) in allowed


@pytest.mark.parametrize("case", ["window", "function", "subquery_in_where"])
def test_unsupported_construct_is_reported_once(case):
    bad = parse(unsupported_file(UNSUPPORTED[case][0]))[1]
    assert len(bad.unsupported) == 1, bad.unsupported


def test_unsupported_construct_quotes_parameters_as_written():
    bad = parse(unsupported_file(UNSUPPORTED["limit_param"][0]))[1]
    assert [u.construct for u in bad.unsupported] == ["LIMIT <n>"]


def test_unsupported_constructs_carry_hints():
    for case in ("exists", "in_subquery", "limit_param", "ilike", "distinct_on", "function"):
        bad = parse(unsupported_file(UNSUPPORTED[case][0]))[1]
        assert all(u.hint for u in bad.unsupported), (case, bad.unsupported)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM Tags WHERE docId NOT IN (SELECT docId FROM Documents WHERE timestamp = <t>)",
    "SELECT * FROM (SELECT * FROM Tags WHERE tag ILIKE 'x' ORDER BY timestamp LIMIT 5) w",
    "SELECT SUM(CASE WHEN tag = 'a' THEN ABS(docId) ELSE 0 END) FROM Tags",
])
def test_a_construct_inside_another_is_reported_once(sql):
    bad = parse(unsupported_file(sql))[1]
    assert len(bad.unsupported) == 1, bad.unsupported


@pytest.mark.parametrize("sql, construct", [
    ("SELECT * FROM Tags WHERE tag IS TRUE", "IS TRUE"),
    ("SELECT * FROM Tags t1 JOIN Tags t2 USING (docId)", "USING"),
    ("SELECT SUM(ABS(timestamp)) FROM Tags", "expression"),
    ("SELECT * FROM Tags WHERE tag LIKE 'a!%' ESCAPE '!'", "ESCAPE"),
    ("SELECT * FROM Tags WHERE tag = <t> ORDER BY timestamp LIMIT -1", "LIMIT"),
    ("UPDATE Tags SET tag = 'x'", "UPDATE"),
    ("SELECT * FROM Tags WHERE POWER(timestamp, 2) = <x>", "expression"),
])
def test_other_unsupported_shapes(sql, construct):
    bad = parse(unsupported_file(sql))[1]
    assert bad.block is None
    assert any(construct in u.construct for u in bad.unsupported), bad.unsupported


def test_with_clause_is_reported_as_unsupported():
    bad = parse(unsupported_file("WITH x AS (SELECT * FROM Tags) SELECT * FROM x"))[1]
    assert bad.block is None
    assert any("WITH" in u.construct for u in bad.unsupported)


@pytest.mark.parametrize("sql, construct, needle", [
    ("SELECT tag, COUNT(*) FROM Tags GROUP BY <g>", "GROUP BY <g>", "<g>"),
    ("SELECT tag, COUNT(*) FROM Tags GROUP BY 1", "GROUP BY 1", "1\n"),
    ("SELECT * FROM Tags WHERE docId = <d> ORDER BY <o>", "parameter in ORDER BY", "<o>"),
])
def test_grouping_or_ordering_by_a_value_is_unsupported(sql, construct, needle):
    text = unsupported_file(sql)
    bad = parse(text)[1]
    assert [u.construct for u in bad.unsupported] == [construct]
    assert where(bad.unsupported[0].location) == at(text, needle)


def test_several_unsupported_constructs_in_one_query_are_all_listed():
    (query,) = parse("-- name: q\nSELECT DISTINCT ON (tag) tag FROM Tags WHERE tag ILIKE 'a%' "
                     "OR docId IN (SELECT docId FROM Documents)\n")
    constructs = {u.construct for u in query.unsupported}
    assert {"DISTINCT ON", "ILIKE", "IN (SELECT ...)"} <= constructs


# -- collecting errors ----------------------------------------------------------------

def test_every_query_error_is_collected():
    text = ("-- name: a\nSELECT * FROM Nope\n\n"
            "-- name: ok\nSELECT * FROM Tags WHERE docId = <d>\n\n"
            "-- name: b\nSELECT nothing FROM Tags\n\n"
            "-- name: c\nSELECT * FROM Tags WHERE tag = = 1\n")
    err = error(text)
    errors = err.all_errors
    assert errors[0] is err
    assert [where(e.location) for e in errors[:2]] == [at(text, "Nope"), at(text, "nothing")]
    assert len(errors) == 3
    assert errors[2].location.line == at(text, "tag = =")[0]


def test_a_single_error_still_lists_itself():
    err = error("-- name: a\nSELECT * FROM Nope\n")
    assert err.all_errors == [err]


def test_block_structure_errors_are_collected_with_the_others():
    text = ("-- name: a\nSELECT * FROM Nope\n\n"
            "-- name: a\nSELECT * FROM Tags WHERE docId = <d>\n\n"
            "-- name: empty\n\n"
            "-- name: b\nSELECT nothing FROM Tags\n")
    err = error(text)
    lines = sorted(e.location.line for e in err.all_errors)
    assert lines == [2, 4, 7, 10]


# -- large files (issue 12, smaller defect a) ---------------------------------------------

COMMENT_LINE = "-- a comment line that says nothing much about the query below it\n"


@pytest.mark.parametrize("layout", ["before the name line", "in the header", "between clauses"])
def test_megabytes_of_comments_parse_and_keep_their_places(layout):
    """Scanning used to search to the end of the file for every comment line (quadratic:
    8 MB took seconds, 50 MB minutes); 3 MB now parse in a fraction of a second.
    The positions after the comments must still be exact."""
    comments = COMMENT_LINE * (3_000_000 // len(COMMENT_LINE))
    query = "SELECT docId FROM Tags WHERE tag = <t> AND nope = 1\n"
    text = {
        "before the name line": comments + "-- name: q\n" + query,
        "in the header": "-- name: q\n" + comments + query,
        "between clauses": "-- name: q\nSELECT docId\n" + comments + query[len("SELECT docId"):],
    }[layout]
    with pytest.raises(InputError) as caught:
        parse(text)
    assert "unknown column 'nope'" in caught.value.message
    assert where(caught.value.location) == at(text, "nope")
    good = parse(text.replace(" AND nope = 1", ""))[0]
    assert [str(p) for p in good.block.predicates] == ["Tags.tag = <t>"]
    assert good.sql.endswith("WHERE tag = <t>")


# -- mistyped option lines (issue 12, smaller defect b) ----------------------------------

@pytest.mark.parametrize("line, key, meant", [
    ("-- periodc: 30 s", "periodc", "periodic"),
    ("-- peroidic: 30 s", "peroidic", "periodic"),
    ("-- period: 30 s", "period", "periodic"),
    ("--Periodics: 1 min", "Periodics", "periodic"),
    ("-- veiw: countsView", "veiw", "view"),
    ("-- views: countsView", "views", "view"),
    ("   -- nmae: other", "nmae", "name"),
])
def test_a_mistyped_option_in_a_header_is_an_error_that_says_what_was_meant(line, key, meant):
    text = f"-- name: q\n-- What the screen shows.\n{line}\nSELECT COUNT(*) FROM Tags WHERE tag = <t>\n"
    err = error(text)
    assert err.message == (f"unknown option '-- {key}:'; did you mean '-- {meant}:'? "
                           "(options: name, view, periodic, max, maintenance)")
    assert where(err.location) == at(text, key)


@pytest.mark.parametrize("line", [
    "-- note: this counts tags",
    "-- TODO: cache it",
    "-- see: docs/views.md",
    "-- time: milliseconds",
    "-- page: the profile page",
    "-- Returns: one row",
    "-- used by: the feed",
    "-- periodic refresh is not needed: it is SI-2",
    "-- example: periodic: 30 s",
])
def test_ordinary_comments_with_a_colon_are_not_options(line):
    text = f"-- name: q\n{line}\nSELECT COUNT(*) FROM Tags WHERE tag = <t>\n"
    (query,) = parse(text)
    assert (query.view_name, query.periodic) == (None, None)


def test_a_mistyped_option_after_the_sql_is_left_alone():
    """Comments after the statement describe the next query; a typo check applies only to
    the header, where an option was meant."""
    text = ("-- name: q\nSELECT COUNT(*) FROM Tags WHERE tag = <t>\n-- periodc: x\n"
            "-- name: r\nSELECT * FROM Tags WHERE docId = <d>\n")
    assert [q.name for q in parse(text)] == ["q", "r"]


# -- hostile input: an input error, never a traceback (issue 12) ----------------------------

def test_a_queries_file_that_is_not_utf8_is_an_error_at_the_first_bad_byte(tmp_path):
    from piql.language.queries import load_queries

    path = tmp_path / "latin1.sql"
    path.write_bytes("-- name: q\n-- déjà vu\nSELECT * FROM Tags WHERE tag = 'café'\n"
                     .encode("utf-8").replace("café".encode(), "café".encode("latin-1"))
                     .replace(b"Tags WHERE", "Tags /* ü */ WHERE".encode()))
    with pytest.raises(InputError) as caught:
        load_queries(path, CATALOG)
    assert "not UTF-8" in caught.value.message
    column = len("SELECT * FROM Tags /* ü */ WHERE tag = 'caf") + 1  # the é, in characters
    assert caught.value.location == Location(str(path), 3, column)


def test_a_utf8_byte_order_mark_is_not_part_of_the_file(tmp_path):
    from piql.language.queries import load_queries

    path = tmp_path / "bom.sql"
    path.write_bytes(b"\xef\xbb\xbf-- name: q\nSELECT * FROM Tags WHERE docId = <d>\n")
    assert [q.name for q in load_queries(path, CATALOG)] == ["q"]


@pytest.mark.parametrize("depth", [32, 33, 60, 500])
def test_deeply_nested_parentheses_are_an_input_error_at_the_first_too_deep(depth):
    """60 nested parentheses used to exhaust Python's stack inside sqlglot (RecursionError)."""
    text = f"-- name: q\nSELECT * FROM Tags WHERE docId = {'(' * depth}<d>{')' * depth}\n"
    if depth <= 32:
        assert parse(text)[0].block.predicates
        return
    err = error(text)
    assert err.message == "unsupported nesting depth: more than 32 nested parentheses"
    column = len("SELECT * FROM Tags WHERE docId = ") + 1
    assert where(err.location) == (2, column + 32)  # the 33rd '('


def test_deeply_nested_subqueries_are_an_input_error():
    text = "-- name: q\nSELECT * FROM " + "(SELECT * FROM " * 40 + "Tags" + ") s" * 40 + "\n"
    err = error(text)
    assert "nesting depth" in err.message and where(err.location) == at(text, "(", 33)


def test_a_long_chain_of_conditions_is_not_a_nesting_problem():
    text = "-- name: q\nSELECT * FROM Tags WHERE tag = <t>" + " AND docId = <d>" * 3000 + "\n"
    (query,) = parse(text)
    assert len(query.block.predicates) == 3001


@pytest.mark.parametrize("sql, needle", [
    ("SELECT * FROM Tags WHERE docId = <d> LIMIT 10000000000000000000000000000000000000000",
     "10000000000000000000000000000000000000000"),
    ("SELECT * FROM Tags WHERE docId = 9223372036854775808", "9223372036854775808"),
    ("SELECT * FROM Tags WHERE docId = -9223372036854775809", "9223372036854775809"),
    ("SELECT COUNT(*) FROM Tags WHERE timestamp - timestamp % 99999999999999999999 = <e>",
     "99999999999999999999"),
])
def test_integer_literals_outside_64_bits_are_input_errors(sql, needle):
    text = f"-- name: q\n{sql}\n"
    err = error(text)
    assert "64-bit" in err.message
    assert where(err.location) == at(text, needle)


def test_integer_literals_at_the_64_bit_limits_are_fine():
    text = ("-- name: q\nSELECT * FROM Tags WHERE docId >= -9223372036854775808 "
            "AND docId <= 9223372036854775807 AND tag = <t> LIMIT 9223372036854775807\n")
    (query,) = parse(text)
    assert query.block.limit == 2**63 - 1
    assert {p.right.value for p in query.block.predicates if isinstance(p.right, Literal)} == {
        -2**63, 2**63 - 1}
