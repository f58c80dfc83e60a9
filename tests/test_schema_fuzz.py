"""Fuzzing the schema parser: any text gives a Catalog or an InputError, never a crash."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from piql.catalog import Catalog
from piql.errors import InputError
from piql.schema import parse_schema

VALID_SCHEMA = """\
-- the paper's running example, plus a little of everything
CREATE TABLE Documents (docId BIGINT, timestamp BIGINT TEMPORAL, text VARCHAR(255),
                        PRIMARY KEY (docId));
CREATE TABLE Tags (docId BIGINT, tag VARCHAR, timestamp BIGINT TEMPORAL NOT NULL,
                   PRIMARY KEY (docId, tag),
                   FOREIGN KEY (docId) REFERENCES Documents (docId))
  WITH CARDINALITY (tag, 10), CARDINALITY (timestamp, 3) PER (docId);
/* prices */ CREATE TABLE "Items" (id INT PRIMARY KEY, price DECIMAL(10, 2));
CREATE UNIQUE INDEX byPrice ON Items (price);
"""

FUZZ = settings(max_examples=250, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


def check(text: str) -> None:
    """The contract: a Catalog, or an InputError at a real position; nothing else."""
    try:
        result = parse_schema(text, "fuzz.sql")
    except InputError as err:
        assert err.location is not None
        assert err.location.file == "fuzz.sql"
        assert err.location.line >= 1 and err.location.column >= 1
        assert err.message
        return
    assert isinstance(result, Catalog)


def test_valid_schema_parses() -> None:
    catalog = parse_schema(VALID_SCHEMA)
    assert [t.name for t in catalog.tables] == ["Documents", "Tags", "Items"]


@FUZZ
@given(st.text())
def test_random_text(text: str) -> None:
    check(text)


# Characters the grammar cares about, so random text often gets past the lexer.
SQLISH = st.lists(st.sampled_from(list("(),;\"-/*\n 01aZ_.+") + [
    "CREATE ", "TABLE ", "INDEX ", "ON ", "PRIMARY KEY ", "FOREIGN KEY ", "REFERENCES ",
    "WITH CARDINALITY ", "PER ", "TEMPORAL ", "NOT NULL ", "INT ", "t ", "a ",
]), max_size=30).map("".join)


@FUZZ
@given(SQLISH)
def test_sql_like_text(text: str) -> None:
    check(text)


@st.composite
def mutated_schema(draw: st.DrawFn) -> str:
    """VALID_SCHEMA with a few random deletions, insertions, replacements or a truncation."""
    text = VALID_SCHEMA
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "replace", "truncate"]))
        pos = draw(st.integers(0, len(text)))
        if kind == "delete":
            length = draw(st.integers(1, 10))
            text = text[:pos] + text[pos + length:]
        elif kind == "insert":
            text = text[:pos] + draw(st.text(min_size=1, max_size=5) | SQLISH) + text[pos:]
        elif kind == "replace":
            text = text[:pos] + draw(st.characters()) + text[pos + 1:]
        else:
            text = text[:pos]
    return text


@FUZZ
@given(mutated_schema())
def test_mutated_valid_schema(text: str) -> None:
    check(text)


PG_DUMP_LIKE = """\
SET statement_timeout = 0;
SELECT pg_catalog.set_config('search_path', '', false);
CREATE FUNCTION public.f() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.x := 'a;b'; RETURN NEW; END $$;
CREATE TABLE public.users (
    id bigint NOT NULL,
    email character varying(200) DEFAULT ''::character varying NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    tags text[] DEFAULT ARRAY[]::text[],
    CONSTRAINT users_email_check CHECK (((email)::text <> ''::text))
);
-- piql: TEMPORAL (created_at)
COMMENT ON TABLE public.users IS 'Users.
piql: CARDINALITY (email, 1) PER (id)';
ALTER TABLE ONLY public.users ADD CONSTRAINT users_pkey PRIMARY KEY (id);
ALTER TABLE ONLY public.users ADD CONSTRAINT users_email_key UNIQUE (email);
CREATE UNIQUE INDEX users_lower ON public.users USING btree (lower((email)::text)) WHERE (id > 0);
\\unrestrict abc
"""


def test_pg_dump_like_schema_parses() -> None:
    catalog = parse_schema(PG_DUMP_LIKE)
    assert catalog.tables[0].primary_key == ("id",)


@st.composite
def mutated_pg_dump(draw: st.DrawFn) -> str:
    """PG_DUMP_LIKE with a few random edits: the statement splitter meets broken quotes,
    dollar quotes, comments and annotations."""
    text = PG_DUMP_LIKE
    pieces = st.sampled_from(["'", '"', "$$", "$x$", "--", "/*", "*/", ";", "(", ")", "\\",
                              "-- piql: ", "piql:", "BEGIN ATOMIC ", "END", "\n"])
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:pos] + draw(pieces | st.text(max_size=3)) + text[pos:]
        else:
            text = text[:pos] + text[pos + draw(st.integers(1, 8)):]
    return text


@FUZZ
@given(mutated_pg_dump())
def test_mutated_pg_dump(text: str) -> None:
    check(text)
