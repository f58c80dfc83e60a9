"""The schema language: parsing, the catalog it builds, and its error messages."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from piql.catalog import CardinalityConstraint, Catalog, ForeignKey, Index, UniqueKey
from piql.errors import InputError, Location
from piql.schema import load_schema, parse_schema

PAPER_SCHEMA = """\
CREATE TABLE Documents (docId BIGINT, timestamp BIGINT TEMPORAL, text VARCHAR,
                        PRIMARY KEY (docId));
CREATE TABLE Tags (docId BIGINT, tag VARCHAR, timestamp BIGINT TEMPORAL,
                   PRIMARY KEY (docId, tag))
  WITH CARDINALITY (tag, 10);
"""


def parse(text: str) -> Catalog:
    return parse_schema(textwrap.dedent(text), "schema.sql")


def error_of(text: str) -> InputError:
    """The InputError that parsing ``text`` raises."""
    with pytest.raises(InputError) as info:
        parse(text)
    return info.value


def assert_error(text: str, message: str, line: int, column: int) -> InputError:
    """Parsing ``text`` fails with ``message`` (a substring) at ``line``:``column``."""
    err = error_of(text)
    assert message in err.message, err.message
    assert err.location == Location("schema.sql", line, column), str(err)
    return err


# ------------------------------------------------------------------ the paper's schema


def test_paper_schema_tables_keys_and_temporal_columns() -> None:
    catalog = parse_schema(PAPER_SCHEMA)
    assert [t.name for t in catalog.tables] == ["Documents", "Tags"]
    documents, tags = catalog.tables
    assert documents.column_names == ("docId", "timestamp", "text")
    assert documents.primary_key == ("docId",)
    assert documents.temporal_columns == ("timestamp",)
    assert tags.column_names == ("docId", "tag", "timestamp")
    assert tags.primary_key == ("docId", "tag")
    assert tags.temporal_columns == ("timestamp",)
    assert [c.type for c in tags.columns] == ["BIGINT", "VARCHAR", "BIGINT"]
    assert catalog.indexes == ()
    assert catalog.source == "<schema>"


def test_paper_schema_cardinality_defaults_per_to_other_key_columns() -> None:
    tags = parse_schema(PAPER_SCHEMA).table("Tags")
    assert tags is not None
    assert tags.cardinalities == (CardinalityConstraint("tag", 10, ("docId",)),)
    assert tags.cardinalities[0].describe() == "CARDINALITY (tag, 10) PER (docId)"


def test_locations_point_at_defining_tokens() -> None:
    catalog = parse_schema(PAPER_SCHEMA, "paper.sql")
    tags = catalog.table("tags")
    assert tags is not None
    assert tags.location == Location("paper.sql", 3, 14)
    assert tags.column("tag").location == Location("paper.sql", 3, 34)  # type: ignore[union-attr]
    assert tags.cardinalities[0].location == Location("paper.sql", 5, 8)


# ------------------------------------------------------------------ language features


def test_cardinality_with_explicit_per() -> None:
    catalog = parse("""
        CREATE TABLE Orders (id INT, customer INT, status VARCHAR(10), PRIMARY KEY (id))
          WITH CARDINALITY (status, 5) PER (customer);
    """)
    assert catalog.tables[0].cardinalities == (CardinalityConstraint("status", 5, ("customer",)),)


def test_several_cardinalities_comma_separated_and_repeated_with() -> None:
    catalog = parse("""
        CREATE TABLE Edges (a INT, b INT, c INT, label TEXT, PRIMARY KEY (a, b, c))
          WITH CARDINALITY (b, 10), CARDINALITY (label, 3) PER (a, b)
          WITH CARDINALITY (c, 7);
    """)
    assert catalog.tables[0].cardinalities == (
        CardinalityConstraint("b", 10, ("a", "c")),
        CardinalityConstraint("label", 3, ("a", "b")),
        CardinalityConstraint("c", 7, ("a", "b")),
    )


def test_comments_are_ignored_everywhere() -> None:
    catalog = parse("""
        -- the documents
        CREATE /* inline */ TABLE Documents ( -- trailing
            docId BIGINT /* multi
            line */ PRIMARY KEY,
            body TEXT -- last column
        ) /* before the semicolon */ ;
        -- a comment at the end, without newline""")
    assert catalog.tables[0].column_names == ("docId", "body")
    assert catalog.tables[0].primary_key == ("docId",)


def test_keywords_are_case_insensitive_and_names_keep_their_case() -> None:
    catalog = parse("""
        create Table Documents (DocId bigint Primary Key, Stamp BigInt temporal nOt NuLl);
        CrEaTe InDeX byStamp oN documents (stamp);
        CREATE TABLE Tags (docid BIGINT, TAG varchar, primary key (DOCID, tag))
          with cardinality (Tag, 3) per (DocID);
    """)
    documents, tags = catalog.tables
    assert documents.column_names == ("DocId", "Stamp")
    assert documents.temporal_columns == ("Stamp",)
    assert [c.type for c in documents.columns] == ["BIGINT", "BIGINT"]
    # References are stored with the declared spelling.
    assert catalog.indexes == (Index("byStamp", "Documents", ("Stamp",)),)
    assert tags.primary_key == ("docid", "TAG")
    assert tags.cardinalities == (CardinalityConstraint("TAG", 3, ("docid",)),)


def test_keywords_may_be_column_names_where_unambiguous() -> None:
    catalog = parse("CREATE TABLE t (key INT PRIMARY KEY, index INT, temporal INT, text TEXT);")
    assert catalog.tables[0].column_names == ("key", "index", "temporal", "text")


def test_quoted_identifiers() -> None:
    catalog = parse('CREATE TABLE "Odd ""Name""" ("my col" INT PRIMARY KEY, "select" TEXT);')
    table = catalog.tables[0]
    assert table.name == 'Odd "Name"'
    assert table.column_names == ("my col", "select")


def test_column_types_with_arguments() -> None:
    catalog = parse("""
        CREATE TABLE t (a INTEGER PRIMARY KEY, b VARCHAR(255), c DECIMAL(10, 2),
                        d DOUBLE, e BOOLEAN NULL, f TIMESTAMP, g DATE);
    """)
    assert [c.type for c in catalog.tables[0].columns] == [
        "INTEGER", "VARCHAR(255)", "DECIMAL(10,2)", "DOUBLE", "BOOLEAN", "TIMESTAMP", "DATE"]


def test_column_level_primary_key() -> None:
    catalog = parse("CREATE TABLE t (id INT PRIMARY KEY NOT NULL, v TEXT);")
    assert catalog.tables[0].primary_key == ("id",)


def test_indexes_including_unique() -> None:
    catalog = parse("""
        CREATE INDEX early ON Items (price);  -- before its table: fine
        CREATE TABLE Items (id INT PRIMARY KEY, price DECIMAL(8,2), name TEXT);
        CREATE UNIQUE INDEX byName ON items (NAME, Price);
    """)
    assert catalog.indexes == (
        Index("early", "Items", ("price",)),
        Index("byName", "Items", ("name", "price"), unique=True),
    )
    assert catalog.indexes_on("ITEMS") == catalog.indexes
    # A unique index on plain columns is a unique key of its table.
    assert catalog.tables[0].unique_keys == (UniqueKey(("name", "price"), "byName"),)
    assert catalog.indexes[1].location == Location("schema.sql", 4, 21)


def test_foreign_keys_with_forward_reference_and_default_columns() -> None:
    catalog = parse("""
        CREATE TABLE Tags (docId BIGINT, tag TEXT, PRIMARY KEY (docId, tag),
                           FOREIGN KEY (DOCID) REFERENCES documents (DocId));
        CREATE TABLE Orders (id INT PRIMARY KEY, item INT,
                             CONSTRAINT fk_item FOREIGN KEY (item) REFERENCES Items);
        CREATE TABLE Documents (docId BIGINT PRIMARY KEY);
        CREATE TABLE Items (code INT PRIMARY KEY);
    """)
    tags, orders = catalog.tables[0], catalog.tables[1]
    assert tags.foreign_keys == (ForeignKey(("docId",), "Documents", ("docId",)),)
    assert tags.foreign_keys[0].location == Location("schema.sql", 3, 20)
    # Without a column list the reference is to the other table's primary key.
    assert orders.foreign_keys == (ForeignKey(("item",), "Items", ("code",)),)


def test_empty_statements_and_optional_final_semicolon() -> None:
    assert parse("").tables == ()
    assert parse(" ;; -- nothing\n") == Catalog((), (), "schema.sql")
    catalog = parse(";CREATE TABLE t (a INT PRIMARY KEY);;CREATE TABLE u (b INT PRIMARY KEY)")
    assert [t.name for t in catalog.tables] == ["t", "u"]


def test_load_schema_reads_file_and_names_it_in_errors(tmp_path: Path) -> None:
    good = tmp_path / "good.sql"
    good.write_text(PAPER_SCHEMA)
    assert load_schema(good).source == str(good)
    assert [t.name for t in load_schema(str(good)).tables] == ["Documents", "Tags"]

    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE TABLE t (a INT,\n)")
    with pytest.raises(InputError) as info:
        load_schema(bad)
    assert info.value.location == Location(str(bad), 2, 1)
    assert str(info.value).startswith(f"{bad}:2:1: unexpected ')'")


def test_load_schema_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sql"
    with pytest.raises(InputError) as info:
        load_schema(missing)
    assert "cannot read schema file" in info.value.message
    assert info.value.location == Location(str(missing), 1, 1)


# ------------------------------------------------------------------ syntax errors


def test_syntax_error_names_what_was_found_and_expected() -> None:
    err = assert_error("CREATE TABLE t (a INT, )", "unexpected ')'; expected a column name", 1, 24)
    assert err.message == ("unexpected ')'; expected a column name, PRIMARY KEY, UNIQUE, "
                           "FOREIGN KEY, CHECK or CONSTRAINT")
    assert str(err) == f"schema.sql:1:24: {err.message}"


@pytest.mark.parametrize("text, message, line, column", [
    ("CREATE TABLE (a INT)", "unexpected '('; expected a table name", 1, 14),
    ("CREATE TABLE t (a @)", "unexpected character '@'; expected a column type", 1, 19),
    ("CREATE TABLE t (a INT b INT)",
     "unexpected 'b'; expected a column option (TEMPORAL, PRIMARY KEY, NOT NULL, NULL, DEFAULT, "
     "UNIQUE, REFERENCES, ...), '(', '[', '.', ARRAY, ',' or ')'", 1, 23),
    ("CREATE TABLE t (a INT PRIMARY KEY)\n  WITH CARDINALITY (a, ten);",
     "unexpected 'ten'; expected an integer", 2, 24),
    ("CREATE TABLE t (a VARCHAR(x))", "unexpected 'x'; expected an integer", 1, 27),
    ("CREATE TABLE t (a INT PRIMARY KEY)\nCREATE TABLE u (b INT PRIMARY KEY);",
     "unexpected 'CREATE'; expected a table option (WITH, WITHOUT ROWID, STRICT, PARTITION BY, "
     "INHERITS, TABLESPACE, USING), ';' or end of input (is a ';' missing before it?)", 2, 1),
    ("CREATE INDEX i t (a);", "unexpected 't'; expected ON", 1, 16),
    ("DROP TABLE t;", "DROP TABLE t is not applied: piql reads a schema as it stands", 1, 1),
    ("DROP t;", "unexpected 'DROP'; expected CREATE, ALTER TABLE, COMMENT ON, ';' or end of input",
     1, 1),
    ("CREATE TABLE t (a INT,\n   PRIMARY KEY a)", "unexpected 'a'; expected '('", 2, 16),
    ("CREATE TABLE t (a INT", "unexpected end of input; expected a column option (TEMPORAL", 1, 22),
    ("CREATE TABLE t (a INT PRIMARY KEY) WITH CARDINALITY (a, 2", "unexpected end of input; expected ')'", 1, 58),
    ("CREATE TABLE t (a INT) /* never closed", "comment '/*' is never closed with '*/'", 1, 24),
    ('CREATE TABLE "t (a INT);', "quoted name is never closed", 1, 14),
    ('CREATE TABLE "" (a INT);', "a quoted name cannot be empty", 1, 14),
])
def test_syntax_errors(text: str, message: str, line: int, column: int) -> None:
    assert_error(text, message, line, column)


# ------------------------------------------------------------------ semantic errors


def test_duplicate_table_is_case_insensitive() -> None:
    assert_error("""\
        CREATE TABLE Tags (a INT PRIMARY KEY);
        CREATE TABLE tags (b INT PRIMARY KEY);
    """, "duplicate table 'tags' (first defined at line 1, column 14)", 2, 14)


def test_duplicate_column() -> None:
    assert_error("CREATE TABLE t (a INT PRIMARY KEY, b INT, A TEXT);",
                 "duplicate column 'A' in table 't' (first defined at line 1, column 17)", 1, 43)


def test_table_without_primary_key() -> None:
    assert_error("\nCREATE TABLE Events (at BIGINT, what TEXT);",
                 "table 'Events' has no primary key; add PRIMARY KEY (...)", 2, 14)


def test_column_and_table_primary_key_together() -> None:
    assert_error("CREATE TABLE t (a INT PRIMARY KEY, b INT,\n                PRIMARY KEY (a, b));",
                 "table 't' has more than one primary key (the first is at line 1, column 23)", 2, 17)


def test_unknown_primary_key_column() -> None:
    assert_error("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, c));",
                 "unknown column 'c' in PRIMARY KEY of table 't' (known columns: a, b)", 1, 47)


def test_repeated_primary_key_column() -> None:
    assert_error("CREATE TABLE t (a INT, PRIMARY KEY (a, A));",
                 "column 'a' appears twice in PRIMARY KEY of table 't'", 1, 40)


def test_unknown_foreign_key_column_suggests_a_close_name() -> None:
    assert_error("""\
        CREATE TABLE d (docId INT PRIMARY KEY);
        CREATE TABLE t (id INT PRIMARY KEY, docId INT, FOREIGN KEY (docid2) REFERENCES d (docId));
    """, "unknown column 'docid2' in FOREIGN KEY of table 't'; did you mean 'docId'?", 2, 61)


def test_foreign_key_to_missing_table() -> None:
    assert_error("""\
        CREATE TABLE t (id INT PRIMARY KEY, ref INT,
            FOREIGN KEY (ref) REFERENCES Nowhere (id));
    """, "FOREIGN KEY references unknown table 'Nowhere' (known tables: t)", 2, 34)


def test_foreign_key_to_unknown_referenced_column() -> None:
    assert_error("""\
        CREATE TABLE t (id INT PRIMARY KEY, ref INT, FOREIGN KEY (ref) REFERENCES u (nope));
        CREATE TABLE u (code INT PRIMARY KEY, name TEXT);
    """, "unknown column 'nope' in REFERENCES u (...) (known columns: code, name)", 1, 78)


def test_foreign_key_column_count_mismatch() -> None:
    assert_error("""\
        CREATE TABLE u (a INT, b INT, PRIMARY KEY (a, b));
        CREATE TABLE t (id INT PRIMARY KEY, x INT,
                        FOREIGN KEY (x) REFERENCES u);
    """, "FOREIGN KEY has 1 column but references 2 columns of 'u' (a, b)", 3, 17)


@pytest.mark.parametrize("limit", ["0", "-3", "2.5", "1e3"])
def test_cardinality_limit_must_be_a_positive_integer(limit: str) -> None:
    assert_error(f"CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b))\n  WITH CARDINALITY (b, {limit});",
                 f"cardinality limit must be a positive integer, not {limit}", 2, 24)


def test_cardinality_limit_too_large() -> None:
    assert_error("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b)) WITH CARDINALITY (b, 1234567890123456789);",
                 "cardinality limit 1234567890123456789 is too large", 1, 72)


def test_unknown_cardinality_column() -> None:
    assert_error("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b)) WITH CARDINALITY (c, 3);",
                 "unknown column 'c' in CARDINALITY of table 't' (known columns: a, b)", 1, 69)


def test_unknown_per_column() -> None:
    assert_error("CREATE TABLE t (a INT PRIMARY KEY, b INT)\n  WITH CARDINALITY (b, 3) PER (x);",
                 "unknown column 'x' in PER of table 't' (known columns: a, b)", 2, 32)


def test_cardinality_column_inside_its_per_list() -> None:
    assert_error("CREATE TABLE t (a INT PRIMARY KEY, b INT) WITH CARDINALITY (b, 3) PER (a, B);",
                 "CARDINALITY column 'b' cannot also be in its own PER list", 1, 75)


def test_cardinality_without_per_on_non_key_column() -> None:
    err = assert_error("CREATE TABLE t (a INT PRIMARY KEY, b INT)\n  WITH CARDINALITY (b, 3);",
                       "CARDINALITY (b, 3) needs PER (...)", 2, 21)
    assert "'b' is not part of the primary key of 't'" in err.message


def test_cardinality_without_per_on_single_column_key() -> None:
    err = assert_error("CREATE TABLE t (a INT PRIMARY KEY, b INT) WITH CARDINALITY (a, 3);",
                       "CARDINALITY (a, 3) needs PER (...)", 1, 61)
    assert "nothing to group it by" in err.message


def test_index_on_missing_table() -> None:
    assert_error("CREATE TABLE t (a INT PRIMARY KEY);\nCREATE INDEX i ON tt (a);",
                 "CREATE INDEX i is on unknown table 'tt'; did you mean 't'?", 2, 19)


def test_index_on_unknown_column() -> None:
    assert_error("CREATE TABLE t (a INT PRIMARY KEY);\nCREATE INDEX i ON t (a, b);",
                 "unknown column 'b' in index 'i' on table 't' (known columns: a)", 2, 25)


def test_duplicate_index_name() -> None:
    assert_error("""\
        CREATE TABLE t (a INT PRIMARY KEY, b INT);
        CREATE INDEX ix ON t (b);
        CREATE INDEX IX ON t (a, b);
    """, "duplicate index 'IX' (first defined at line 2, column 14)", 3, 14)


def test_index_named_like_a_table() -> None:
    assert_error("CREATE TABLE t (a INT PRIMARY KEY, b INT); CREATE INDEX T ON t (b);",
                 "index name 'T' is already the name of a table", 1, 57)


def test_all_errors_are_collected_in_file_order() -> None:
    err = error_of("""\
        CREATE TABLE a (x INT);
        CREATE TABLE b (y INT PRIMARY KEY) WITH CARDINALITY (y, 0);
        CREATE INDEX i ON nowhere (x);
    """)
    lines = [e.location.line for e in err.all_errors]  # type: ignore[attr-defined]
    assert lines == [1, 2, 3]
    assert err is err.all_errors[0]  # type: ignore[attr-defined]


def test_a_schema_file_that_is_not_utf8_is_an_error_at_the_first_bad_byte(tmp_path):
    path = tmp_path / "latin1.sql"
    path.write_bytes(b"CREATE TABLE t (\n  id BIGINT PRIMARY KEY, -- the caf\xe9 id\n  x INT);\n")
    with pytest.raises(InputError) as caught:
        load_schema(path)
    assert "not UTF-8" in caught.value.message
    assert caught.value.location == Location(str(path), 2, len("  id BIGINT PRIMARY KEY, -- the caf") + 1)


def test_a_schema_file_with_a_utf8_byte_order_mark_loads(tmp_path):
    path = tmp_path / "bom.sql"
    path.write_bytes(b"\xef\xbb\xbfCREATE TABLE t (id BIGINT PRIMARY KEY);\n")
    assert [t.name for t in load_schema(path).tables] == ["t"]


@pytest.mark.parametrize("statement, needle", [
    ("CREATE TABLE _piql_meta (k VARCHAR PRIMARY KEY);", "_piql_meta"),
    ("CREATE TABLE _PIQL_stuff (k VARCHAR PRIMARY KEY);", "_PIQL_stuff"),
    ("CREATE TABLE t (k VARCHAR PRIMARY KEY); CREATE INDEX _piql_dirty_epochs ON t (k);",
     "_piql_dirty_epochs"),
])
def test_names_piql_keeps_for_its_own_tables_are_refused(statement, needle):
    """Issue 12, item 9: piql's runtime creates _piql_meta and _piql_dirty_epochs in every
    store; a table of that name made deploy fail with a raw SQLite error."""
    with pytest.raises(InputError) as caught:
        parse_schema(statement, "s.sql")
    assert "reserved" in caught.value.message
    assert caught.value.location.column == statement.index(needle) + 1
