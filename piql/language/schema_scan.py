"""Splitting a schema file into statements, and deciding which ones piql reads.

A schema as applications have it (a migration, ``pg_dump -s``, ``sqlite3
.schema``) holds much that does not affect bounds: ``SET`` lines, ``GRANT``,
``CREATE FUNCTION`` with a ``$$`` body, ``ALTER ... OWNER TO``, psql's
``\\connect``. This module finds the statements the way psql does (strings,
quoted names, dollar quotes, comments and parentheses hide a ``;``; a line
starting with a backslash is a psql command) and classifies each by its
leading words:

- ``CREATE TABLE``, ``CREATE [UNIQUE] INDEX``, ``ALTER TABLE`` with an action
  that matters (keys, columns, NOT NULL, types) and ``COMMENT ON TABLE`` /
  ``COMMENT ON COLUMN`` are left for the lark grammar;
- statements that do not affect bounds become :class:`Skipped` (an info note
  each); piql blanks their text out before parsing, which keeps every line and
  column of the rest of the file where it was;
- ``DROP`` of a table or index is an error unless the file creates it again
  later (``pg_dump --clean``, idempotent migrations): piql reads a schema as it
  stands, not a history of changes;
- anything else is left for the grammar, whose syntax error names it.

It also collects the ``-- piql: ...`` comment lines that carry annotations.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from piql.errors import InputError, Location

__all__ = ["Annotation", "ScannedSchema", "Skipped", "Statement", "scan_schema"]

_WORD = re.compile(r"(?:[^\W\d]|_)[\w$]*")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+")
_DOLLAR = re.compile(r"\$(?:(?:[^\W\d]|_)\w*)?\$")
_PIQL_COMMENT = re.compile(r"--[ \t]*piql[ \t]*:", re.IGNORECASE)


@dataclass(frozen=True)
class Token:
    """A token of the statement splitter: a word (``upper`` set), a quoted name, or punctuation."""

    kind: str  # "word" | "quoted" | "string" | "number" | "punct"
    text: str
    start: int
    end: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else ""

    @property
    def name(self) -> str:
        """The identifier this token spells (quotes removed), for names of relations."""
        if self.kind == "quoted":
            quote = self.text[0]
            return self.text[1:-1].replace(quote * 2, quote)
        return self.text


@dataclass
class Statement:
    """One statement: its tokens (comments left out) and where it starts and ends."""

    tokens: list[Token] = field(default_factory=list)
    start: int = 0
    end: int = 0  # just past the last token
    meta: bool = False  # a psql backslash command (one line, no ';')
    unclosed: tuple[str, int] | None = None  # an unterminated string or comment: message, offset

    def words(self, count: int) -> list[str]:
        """The first ``count`` tokens upper-cased (words) or as written (others)."""
        return [t.upper or t.text for t in self.tokens[:count]]


@dataclass(frozen=True)
class Skipped:
    """A statement piql does not read; ``relation`` is what it would have defined, if a relation."""

    kind: str  # e.g. "SET", "CREATE FUNCTION", "ALTER TABLE ... OWNER TO"
    reason: str
    location: Location
    start: int
    end: int
    relation: str | None = None  # a view, partition, ... that queries cannot use


@dataclass(frozen=True)
class Annotation:
    """A ``-- piql: ...`` comment line: the text after ``piql:`` and where that text starts."""

    text: str
    offset: int
    owner: int | None  # index into ScannedSchema.statements of the CREATE TABLE it follows


@dataclass
class ScannedSchema:
    """The statements of a file, which ones piql skips, and its annotation comments."""

    text: str
    file: str
    statements: list[Statement]
    skipped: list[Skipped]
    annotations: list[Annotation]
    table_statements: dict[int, int]  # start offset of a CREATE TABLE -> its index in statements

    def blanked(self) -> str:
        """The text with every skipped statement replaced by spaces (newlines kept)."""
        chars = list(self.text)
        for skipped in self.skipped:
            for i in range(skipped.start, skipped.end):
                if chars[i] != "\n":
                    chars[i] = " "
        return "".join(chars)


class _Lines:
    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def location(self, file: str, offset: int) -> Location:
        line = bisect_right(self.starts, offset)
        return Location(file, line, offset - self.starts[line - 1] + 1)


def scan_schema(text: str, file: str) -> ScannedSchema:
    """Split ``text`` into statements and classify them (see the module docstring).

    Raises :class:`InputError` for a ``DROP`` piql cannot apply, and for an
    unterminated string or comment inside a statement piql would skip (the
    grammar reports those in the statements it reads).
    """
    lines = _Lines(text)
    statements, comments = _split(text)
    scanned = ScannedSchema(text, file, statements, [], [], {})
    created: dict[str, list[int]] = {}  # lower-cased table / index name -> statement starts
    for index, statement in enumerate(statements):
        table = _created_table(statement)
        if table is not None:
            scanned.table_statements[statement.start] = index
        name = table or _created_index(statement)
        if name is not None:
            created.setdefault(name.lower(), []).append(statement.start)
    for statement in statements:
        verdict = _classify(statement, created, lines, file)
        if verdict is None:
            continue
        if statement.unclosed is not None:
            message, offset = statement.unclosed
            raise InputError(message, lines.location(file, offset))
        scanned.skipped.append(verdict)
    scanned.annotations = _annotations(text, comments, statements, scanned.table_statements)
    return scanned


# --------------------------------------------------------------------------- splitting


def _split(text: str) -> tuple[list[Statement], list[tuple[int, int]]]:
    """Statements and the ``-- piql:`` comments (start and end offsets of each line)."""
    statements: list[Statement] = []
    comments: list[tuple[int, int]] = []
    current = Statement()
    depth = 0  # parentheses
    atomic = 0  # BEGIN ATOMIC ... END of an SQL-standard function body
    i, n = 0, len(text)

    def finish(end: int) -> None:
        nonlocal current, depth, atomic
        if current.tokens or current.meta:
            current.end = end
            statements.append(current)
        current, depth, atomic = Statement(), 0, 0

    def add(kind: str, start: int, end: int) -> None:
        if not current.tokens:
            current.start = start
        current.tokens.append(Token(kind, text[start:end], start, end))
        current.end = end

    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            if _PIQL_COMMENT.match(text, i):
                comments.append((i, end))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                current.unclosed = ("comment '/*' is never closed with '*/'", i)
                break
            i = end + 2
        elif c == "\\" and not current.tokens:
            end = text.find("\n", i)
            end = n if end < 0 else end
            current.start, current.meta = i, True
            current.tokens.append(Token("punct", text[i:end], i, end))
            finish(end)
            i = end
        elif c == ";" and depth == 0 and atomic == 0:
            finish(current.end)
            i += 1
        elif c in "'":
            escapes = bool(current.tokens) and current.tokens[-1].end == i and \
                current.tokens[-1].upper == "E"
            end = _string_end(text, i, escapes)
            if end < 0:
                current.unclosed = ("string is never closed: \"'\" has no matching \"'\"", i)
                break
            add("string", i, end)
            i = end
        elif c in '"`':
            end = _quoted_end(text, i, c)
            if end < 0:
                current.unclosed = (
                    f"quoted name is never closed: '{c}' has no matching '{c}' on its line", i)
                break
            add("quoted", i, end)
            i = end
        elif c == "$" and (m := _DOLLAR.match(text, i)):
            close = text.find(m.group(), m.end())
            if close < 0:
                current.unclosed = (f"dollar-quoted string {m.group()} is never closed", i)
                break
            add("string", i, close + len(m.group()))
            i = close + len(m.group())
        elif m := _WORD.match(text, i):
            add("word", i, m.end())
            atomic = _atomic_depth(current, atomic)
            i = m.end()
        elif m := _NUMBER.match(text, i):
            add("number", i, m.end())
            i = m.end()
        else:
            if c == "(":
                depth += 1
            elif c == ")":
                depth = max(0, depth - 1)
            add("punct", i, i + 1)
            i += 1
    if current.unclosed is not None and not current.tokens:
        current.start = current.unclosed[1]
    if current.unclosed is not None:
        current.end = n
        statements.append(current)
    else:
        finish(current.end)
    return statements, comments


def _string_end(text: str, i: int, escapes: bool) -> int:
    j = i + 1
    while True:
        j = text.find("'", j) if not escapes else _escaped_quote(text, j)
        if j < 0:
            return -1
        if text.startswith("''", j):
            j += 2
            continue
        return j + 1


def _escaped_quote(text: str, j: int) -> int:
    while j < len(text):
        if text[j] == "\\":
            j += 2
        elif text[j] == "'":
            return j
        else:
            j += 1
    return -1


def _quoted_end(text: str, i: int, quote: str) -> int:
    j = i + 1
    while j < len(text):
        if text[j] == "\n":
            return -1
        if text[j] == quote:
            if text.startswith(quote * 2, j):  # a doubled quote stands for one
                j += 2
                continue
            return j + 1
        j += 1
    return -1


def _atomic_depth(statement: Statement, depth: int) -> int:
    """Track the bodies that hold ';': ``BEGIN ATOMIC ... END`` of a PostgreSQL
    CREATE FUNCTION/PROCEDURE and ``BEGIN ... END`` of an SQLite CREATE TRIGGER."""
    tokens = statement.tokens
    word = tokens[-1].upper
    if depth == 0:
        if word == "ATOMIC" and len(tokens) > 1 and tokens[-2].upper == "BEGIN" and \
                any(t.upper in ("FUNCTION", "PROCEDURE") for t in tokens[:6]):
            return 1
        if word == "BEGIN" and tokens[0].upper == "CREATE" and \
                any(t.upper == "TRIGGER" for t in tokens[1:4]):
            return 1
        return 0
    if word == "CASE":
        return depth + 1
    if word == "END":
        return depth - 1
    return depth


# --------------------------------------------------------------------------- classification

_TABLE_PREFIXES = {"GLOBAL", "LOCAL", "TEMP", "TEMPORARY", "UNLOGGED"}
# Statements that never define or change a table, by their first word.
_ALWAYS_SKIPPED = {
    "SET", "RESET", "SELECT", "GRANT", "REVOKE", "BEGIN", "START", "COMMIT", "END", "ROLLBACK",
    "SAVEPOINT", "RELEASE", "PRAGMA", "ANALYZE", "VACUUM", "REINDEX", "CLUSTER", "CHECKPOINT",
    "DO", "REFRESH", "SECURITY", "INSERT", "UPDATE", "DELETE", "LOCK", "NOTIFY", "LISTEN",
    "DISCARD", "IMPORT", "CALL",
}
NO_EFFECT = "does not affect bounds"
_RELATIONS_NOT_READ = {
    "VIEW": "piql plans queries over tables, not views",
    "MATERIALIZED VIEW": "piql plans queries over tables, not views",
    "FOREIGN TABLE": "its rows live in another server",
    "VIRTUAL TABLE": "an SQLite module (such as FTS) that piql cannot bound",
}
# ALTER TABLE actions that do not affect bounds, by their first word(s).
_IRRELEVANT_ACTIONS = ("OWNER", "ENABLE", "DISABLE", "REPLICA", "CLUSTER", "SET", "RESET",
                       "ATTACH", "DETACH", "INHERIT", "NO", "FORCE", "VALIDATE", "OF", "NOT",
                       "RENAME CONSTRAINT")
# ALTER TABLE ... ALTER [COLUMN] c <action>: the ones that change NOT NULL or the type matter.
# (SET / DROP DEFAULT: piql keeps a constant DEFAULT, and notes any other where it is)
_RELEVANT_COLUMN_ACTIONS = (("SET", "NOT"), ("DROP", "NOT"), ("TYPE",), ("SET", "DATA"),
                             ("SET", "DEFAULT"), ("DROP", "DEFAULT"))


def _classify(statement: Statement, created: dict[str, list[int]], lines: _Lines,
              file: str) -> Skipped | None:
    """A :class:`Skipped` for a statement piql does not read; None to parse it."""
    location = lines.location(file, statement.start)

    def skip(kind: str, reason: str, relation: str | None = None) -> Skipped:
        return Skipped(kind, reason, location, statement.start, statement.end, relation)

    if statement.meta:
        command = statement.tokens[0].text.split()[0]
        return skip(f"psql command {command}", f"not SQL; {NO_EFFECT}")
    words = statement.words(8)
    if not words:
        return None
    first = words[0]
    if first in _ALWAYS_SKIPPED:
        kind = "SECURITY LABEL" if first == "SECURITY" else first
        if first == "SELECT" and any(t.upper == "SET_CONFIG" for t in statement.tokens[:6]):
            kind = "SELECT set_config(...)"
        return skip(kind, NO_EFFECT)
    if first == "CREATE":
        return _classify_create(statement, words, skip)
    if first == "ALTER":
        return _classify_alter(statement, words, skip)
    if first == "COMMENT" and len(words) > 2 and words[1] == "ON":
        if words[2] in ("TABLE", "COLUMN") or words[2] not in _KIND_WORDS:
            return None
        return skip(f"COMMENT ON {_object_kind(words[2:])}", NO_EFFECT)
    if first == "DROP":
        return _classify_drop(statement, words, created, skip, lines, file)
    return None


def _classify_create(statement: Statement, words: list[str], skip) -> Skipped | None:
    rest = words[1:]
    if rest[:2] == ["OR", "REPLACE"]:
        rest = rest[2:]
    while rest and rest[0] in _TABLE_PREFIXES | {"RECURSIVE"}:
        rest = rest[1:]
    what = rest[0] if rest else ""
    if what == "TABLE":
        name = _name_after(statement, "TABLE")
        if name is not None and name.lower().startswith("sqlite_"):
            return skip("CREATE TABLE", "an SQLite internal table", name)
        after = _after_name(statement, "TABLE")
        if after in ("PARTITION", "OF", "AS"):
            name = _name_after(statement, "TABLE")
            reason = {"PARTITION": "a partition; piql reads its parent table",
                      "OF": "a typed table; piql does not read columns from a type",
                      "AS": "piql cannot know its columns or key"}[after]
            label = {"PARTITION": "CREATE TABLE ... PARTITION OF", "OF": "CREATE TABLE ... OF",
                     "AS": "CREATE TABLE ... AS"}[after]
            return skip(label, reason, name)
        return None
    if what == "INDEX" or rest[:2] == ["UNIQUE", "INDEX"]:
        return None
    for kind, reason in _RELATIONS_NOT_READ.items():
        if " ".join(rest[:len(kind.split())]) == kind:
            return skip(f"CREATE {kind}", reason, _name_after(statement, kind.split()[-1]))
    if not rest or rest[0] not in _KIND_WORDS:
        return None  # a typo (CREATE TALBE) or SQL piql does not know: the grammar says so
    return skip(f"CREATE {_object_kind(rest)}", NO_EFFECT)


def _classify_alter(statement: Statement, words: list[str], skip) -> Skipped | None:
    if len(words) < 2 or words[1] not in _KIND_WORDS:
        return None
    if words[1] != "TABLE":
        return skip(f"ALTER {_object_kind(words[1:])}", NO_EFFECT)
    actions = _alter_actions(statement)
    if not actions:
        return None
    described: list[str] = []
    for action in actions:
        label = _irrelevant_action(action)
        if label is None:
            return None
        described.append(label)
    if actions[0][:2] == ["ATTACH", "PARTITION"]:
        # pg_dump creates a partition as a table, then attaches it: piql reads the parent.
        tokens = statement.tokens
        at = next(i for i, t in enumerate(tokens) if t.upper == "ATTACH") + 2
        end = _skip_name(tokens, at)
        if end > at:
            return skip("ALTER TABLE ... ATTACH PARTITION", "a partition; piql reads its parent table",
                        tokens[end - 1].name)
    return skip("ALTER TABLE ... " + described[0], NO_EFFECT)


def _alter_actions(statement: Statement) -> list[list[str]]:
    """The words of each action of ``ALTER TABLE [IF EXISTS] [ONLY] name action, ...``."""
    tokens = statement.tokens[2:]
    i = 0
    while i < len(tokens) and tokens[i].upper in ("IF", "EXISTS", "ONLY"):
        i += 1
    i = _skip_name(tokens, i)
    if i < len(tokens) and tokens[i].text == "*":
        i += 1
    actions: list[list[str]] = [[]]
    depth = 0
    for token in tokens[i:]:
        if token.text == "(":
            depth += 1
        elif token.text == ")":
            depth -= 1
        elif token.text == "," and depth == 0:
            actions.append([])
            continue
        actions[-1].append(token.upper or token.text)
    return [a for a in actions if a]


def _irrelevant_action(action: list[str]) -> str | None:
    """A label for an ALTER TABLE action that does not affect bounds; None if it may."""
    if action[0] == "ALTER":
        rest = action[2:] if len(action) > 1 and action[1] == "COLUMN" else action[1:]
        rest = rest[1:]  # the column name
        if not rest or any(tuple(rest[:len(r)]) == r for r in _RELEVANT_COLUMN_ACTIONS):
            return None
        return "ALTER COLUMN ... " + " ".join(w for w in rest[:2] if w.isalpha() and w.isupper())
    if action[0] == "RENAME" and len(action) > 1 and action[1] == "CONSTRAINT":
        return "RENAME CONSTRAINT"
    if action[0] in _IRRELEVANT_ACTIONS and action[0] != "RENAME CONSTRAINT":
        words = [w for w in action[:3] if w.isalpha() and w.isupper()]
        if action[0] == "OWNER":
            words = ["OWNER TO"]
        elif action[0] in ("ENABLE", "DISABLE", "NO", "FORCE", "NOT", "SET", "RESET"):
            words = words[:3] if action[0] in ("ENABLE", "DISABLE") else words[:2]
        else:
            words = words[:1]
        return " ".join(words)
    return None


def _classify_drop(statement: Statement, words: list[str], created: dict[str, list[int]],
                   skip, lines: _Lines, file: str) -> Skipped | None:
    what = words[1] if len(words) > 1 else ""
    if what not in _KIND_WORDS:
        return None
    if what not in ("TABLE", "INDEX"):
        return skip(f"DROP {_object_kind(words[1:])}", NO_EFFECT)
    name = _name_after(statement, what)
    later = [s for s in created.get((name or "").lower(), []) if s > statement.start]
    if name is not None and later:
        return skip(f"DROP {what}", f"drops {name}, which the file creates again after it")
    raise InputError(
        f"DROP {what} {name or ''} is not applied: piql reads a schema as it stands, not a "
        "history of changes; give it the current schema (pg_dump -s, sqlite3 .schema) or "
        "leave the statement out".replace("  ", " "),
        lines.location(file, statement.start))


def _object_kind(words: list[str]) -> str:
    """``SEQUENCE``, ``DEFAULT PRIVILEGES``, ``MATERIALIZED VIEW``, ... from the words after the verb."""
    kept: list[str] = []
    for word in words:
        if not word.isalpha() or word not in _KIND_WORDS:
            break
        kept.append(word)
        if word not in _KIND_PREFIX_WORDS:
            break
    return " ".join(kept) or (words[0] if words else "statement")


_KIND_PREFIX_WORDS = {"DEFAULT", "MATERIALIZED", "FOREIGN", "EVENT", "TEXT", "SEARCH", "ACCESS",
                      "USER", "DATA", "CONSTRAINT", "LARGE", "OPERATOR", "UNIQUE", "GLOBAL",
                      "LOCAL", "TEMP", "TEMPORARY", "UNLOGGED", "OR", "REPLACE", "TRUSTED",
                      "PROCEDURAL"}
_KIND_WORDS = _KIND_PREFIX_WORDS | {
    "EXTENSION", "SEQUENCE", "TYPE", "FUNCTION", "PROCEDURE", "VIEW", "TRIGGER", "SCHEMA",
    "DOMAIN", "COLLATION", "AGGREGATE", "OPERATOR", "CAST", "POLICY", "RULE", "PUBLICATION",
    "SUBSCRIPTION", "STATISTICS", "CONFIGURATION", "DICTIONARY", "PARSER", "TEMPLATE",
    "LANGUAGE", "SERVER", "WRAPPER", "MAPPING", "ROLE", "USER", "GROUP", "TABLESPACE",
    "METHOD", "CONVERSION", "TRANSFORM", "PRIVILEGES", "DATABASE", "INDEX", "TABLE",
    "OBJECT", "ROUTINE", "CLASS", "FAMILY", "SYSTEM", "DEFAULT", "COLUMN", "EXTENSION",
}


def _skip_name(tokens: list[Token], i: int) -> int:
    """The position after a (qualified) name starting at ``i``."""
    if i < len(tokens) and tokens[i].kind in ("word", "quoted"):
        i += 1
        while i + 1 < len(tokens) and tokens[i].text == "." and tokens[i + 1].kind in ("word", "quoted"):
            i += 2
    return i


def _name_position(statement: Statement, keyword: str) -> int | None:
    """Where the name after ``keyword`` (and IF [NOT] EXISTS, CONCURRENTLY, ONLY) starts."""
    tokens = statement.tokens
    for i, token in enumerate(tokens[:8]):
        if token.upper == keyword:
            j = i + 1
            while j < len(tokens) and tokens[j].upper in ("IF", "NOT", "EXISTS", "CONCURRENTLY", "ONLY"):
                j += 1
            return j
    return None


def _name_after(statement: Statement, keyword: str) -> str | None:
    """The unqualified name after ``keyword``: ``public.users`` -> ``users``."""
    start = _name_position(statement, keyword)
    if start is None or start >= len(statement.tokens):
        return None
    end = _skip_name(statement.tokens, start)
    if end == start:
        return None
    return statement.tokens[end - 1].name


def _after_name(statement: Statement, keyword: str) -> str | None:
    """The word right after the name that follows ``keyword``."""
    start = _name_position(statement, keyword)
    if start is None:
        return None
    end = _skip_name(statement.tokens, start)
    if end < len(statement.tokens) and end > start:
        return statement.tokens[end].upper or statement.tokens[end].text
    return None


def _created_table(statement: Statement) -> str | None:
    words = statement.words(6)
    if not words or words[0] != "CREATE" or statement.meta:
        return None
    rest = [w for w in words[1:] if w not in _TABLE_PREFIXES]
    if rest[:1] != ["TABLE"] or _after_name(statement, "TABLE") != "(":
        return None
    return _name_after(statement, "TABLE")


def _created_index(statement: Statement) -> str | None:
    words = statement.words(3)
    if words[:2] == ["CREATE", "INDEX"] or words[:3] == ["CREATE", "UNIQUE", "INDEX"]:
        after = _name_position(statement, "INDEX")
        if after is not None and after < len(statement.tokens) and \
                statement.tokens[after].upper != "ON":
            return statement.tokens[after].name
    return None


# --------------------------------------------------------------------------- annotations


def _annotations(text: str, comments: list[tuple[int, int]], statements: list[Statement],
                 tables: dict[int, int]) -> list[Annotation]:
    """Each ``-- piql:`` line with the CREATE TABLE it is inside of or right after (if any)."""
    found: list[Annotation] = []
    starts = [s.start for s in statements]
    for start, end in comments:
        before = bisect_right(starts, start) - 1
        owner = before if before >= 0 and statements[before].start in tables else None
        match = _PIQL_COMMENT.match(text, start)
        assert match is not None
        found.append(Annotation(text[match.end():end], match.end(), owner))
    return found
