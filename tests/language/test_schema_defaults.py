"""Column DEFAULTs: constant literals are kept (typed) in the catalog; other expressions
are noted and skipped, as piql fills only constants."""
from __future__ import annotations

from tests.language.test_schema_ddl import assert_error, column, parse, skipped


def test_constant_defaults_are_kept_typed():
    catalog = parse("""
        CREATE TABLE t (id INT PRIMARY KEY, a INT DEFAULT -5, b REAL DEFAULT 2, c DOUBLE DEFAULT 1.5e3,
            d TEXT DEFAULT 'it''s', e VARCHAR(9) DEFAULT 'x'::character varying,
            f BOOLEAN DEFAULT FALSE, g TEXT DEFAULT E'a\\'b\\n', h INT DEFAULT + 7,
            i INT DEFAULT NULL, j INT);
    """)
    found = {c.name: c.default for c in catalog.tables[0].columns}
    assert found == {"id": None, "a": -5, "b": 2.0, "c": 1500.0, "d": "it's", "e": "x",
                     "f": False, "g": "a'b\n", "h": 7, "i": None, "j": None}
    assert type(found["b"]) is float and type(found["f"]) is bool
    assert not skipped(catalog)


def test_a_default_piql_does_not_fill_is_noted_and_skipped():
    catalog = parse("""
        CREATE TABLE t (id INT PRIMARY KEY,
            a INT DEFAULT nextval('t_a_seq'::regclass) NOT NULL,
            b BIGINT DEFAULT 1 + 1, c TIMESTAMP DEFAULT now(), d INT DEFAULT (3),
            e TEXT DEFAULT E'\\x41', f INT DEFAULT - -1, g INT DEFAULT '1'::integer);
    """)
    assert all(c.default is None for c in catalog.tables[0].columns)
    assert column(catalog, "t", "a").nullable is False  # the options after it still count
    notes = skipped(catalog)
    assert len(notes) == 7 and all("fills constant DEFAULTs only" in m for _, m in notes)
    assert "DEFAULT nextval('t_a_seq'::regclass) of t.a" in notes[0][1]


def test_a_default_of_another_type_is_refused_where_it_is():
    assert_error("CREATE TABLE t (id INT PRIMARY KEY, a INT DEFAULT 'x');",
                 "DEFAULT 'x' of t.a is no INT value", 1, 43)
    assert_error("CREATE TABLE t (id INT PRIMARY KEY, a TEXT DEFAULT 1);",
                 "DEFAULT 1 of t.a is no TEXT value", 1, 44)
    assert_error("CREATE TABLE t (id INT PRIMARY KEY, a BOOLEAN DEFAULT 1);",
                 "DEFAULT 1 of t.a is no BOOLEAN value", 1, 47)
    assert_error("CREATE TABLE t (id INT PRIMARY KEY, a BIGINT DEFAULT 9223372036854775808);",
                 "is no BIGINT value", 1, 46)


def test_a_default_of_a_column_added_by_alter_table_is_kept():
    catalog = parse("""
        CREATE TABLE t (id INT PRIMARY KEY);
        ALTER TABLE t ADD COLUMN n INT NOT NULL DEFAULT 0;
    """)
    assert column(catalog, "t", "n").default == 0


def test_alter_column_set_and_drop_default_change_the_columns_default():
    catalog = parse("""
        CREATE TABLE t (id INT PRIMARY KEY, a INT DEFAULT 1, b TEXT, c INT DEFAULT 2);
        ALTER TABLE t ALTER COLUMN a DROP DEFAULT, ALTER b SET DEFAULT 'z';
        ALTER TABLE ONLY t ALTER COLUMN c SET DEFAULT nextval('s'::regclass);
    """)
    assert [(c.name, c.default) for c in catalog.tables[0].columns] == [
        ("id", None), ("a", None), ("b", "z"), ("c", None)]
    assert [line for line, _ in skipped(catalog)] == [4]
    assert_error("CREATE TABLE t (id INT PRIMARY KEY, a INT);\nALTER TABLE t ALTER a SET DEFAULT 'x';",
                 "DEFAULT 'x' of t.a is no INT value", 2, 27)
