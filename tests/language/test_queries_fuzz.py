"""Fuzzing the queries-file parser: any text either parses or raises a located InputError."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from piql.errors import InputError
from piql.language.queries import parse_queries
from tests.conftest import paper_catalog

CATALOG = paper_catalog()

VALID = """-- The paper's queries, and a few more shapes.
-- name: tagsOfDoc
SELECT * FROM Tags WHERE docId = <doc>

-- name: twoTags
SELECT t1.docId
FROM Tags t1, Tags t2, Documents d
WHERE t1.docId = t2.docId AND t1.docId = d.docId
  AND t1.tag = <tag1> AND t2.tag = <tag2>
ORDER BY d.timestamp LIMIT 5

-- name: countTagsWindowed
-- view: docsPerTagWindowed
SELECT COUNT(*) FROM Tags t
WHERE tag = <tag> AND timestamp - timestamp % 60000 = <epoch>

-- name: joined
SELECT d.text AS body FROM Documents d JOIN Tags t ON t.docId = d.docId
WHERE t.tag = 'x' AND d.timestamp BETWEEN <lo> AND <hi> ORDER BY body DESC LIMIT 3

-- name: popularTags
-- periodic: 1 min
SELECT tag, COUNT(*)
FROM (SELECT * FROM Tags ORDER BY timestamp LIMIT 5000)
GROUP BY tag
"""

# Characters that matter to the parser: SQL punctuation, placeholders, comments, newlines.
ALPHABET = st.sampled_from(list("<>=!()*,.;:%'\"-/ \t\n\r_aZ09") + [
    "-- name: ", "-- view: ", "-- periodic: ", "SELECT ", " FROM ", " WHERE ", " AND ",
    " OR ", " JOIN ", " ON ", " GROUP BY ", " ORDER BY ", " LIMIT ", "Tags", "Documents",
    "docId", "tag", "timestamp", "t1.", "<p>", "\u00e9", "\x00"])
FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


def check(text: str) -> None:
    """Return normally or raise a located InputError; nothing else may escape."""
    try:
        queries = parse_queries(text, CATALOG, "fuzz.sql")
    except InputError as err:
        errors = getattr(err, "all_errors", None) or [err]
        assert err in errors
        for error in errors:
            assert isinstance(error, InputError)
            assert error.location is not None, str(error)
            assert error.location.file == "fuzz.sql"
            assert error.location.line >= 1 and error.location.column >= 1, str(error)
            assert error.message
        return
    for query in queries:
        assert query.name
        for unsupported in query.unsupported:
            assert unsupported.location.line >= 1 and unsupported.location.column >= 1
        assert (query.block is None) == bool(query.unsupported)


def test_the_seed_file_parses():
    names = [q.name for q in parse_queries(VALID, CATALOG, "fuzz.sql")]
    assert names == ["tagsOfDoc", "twoTags", "countTagsWindowed", "joined", "popularTags"]


@FUZZ
@given(st.text(max_size=300))
def test_random_text(text):
    check(text)


@FUZZ
@given(st.lists(ALPHABET, max_size=60).map("".join))
def test_random_sql_like_tokens(text):
    check(text)


@FUZZ
@given(st.lists(st.sampled_from(list("<>=()*,.;:%'-\n ") + ["SELECT", "FROM", "Tags", "q"]),
                max_size=40).map("".join))
def test_random_text_after_a_name_line(body):
    check("-- name: q\n" + body)


@st.composite
def mutations(draw):
    text = VALID
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        position = draw(st.integers(min_value=0, max_value=len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "truncate"]))
        if kind == "insert":
            text = text[:position] + draw(ALPHABET) + text[position:]
        elif kind == "delete":
            end = position + draw(st.integers(min_value=1, max_value=12))
            text = text[:position] + text[end:]
        elif kind == "replace":
            text = text[:position] + draw(ALPHABET) + text[position + 1:]
        else:
            text = text[:position]
    return text


@FUZZ
@given(mutations())
def test_mutations_of_a_valid_file(text):
    check(text)
