"""The lark parser of the schema language, ready in milliseconds.

Building the LALR tables of ``grammar/schema.lark`` takes a quarter of a second, longer
than the rest of a ``piql lint``. So piql ships them: ``grammar/schema.parser`` holds the
digest of the grammar it was built from and the parser as :meth:`lark.Lark.save` writes
it, and :func:`parser` loads it when the digest is the grammar's. When it is not (the
grammar was edited and the file not rebuilt, or a lark release reads it no more), the
parser is built and kept in the user's cache directory, as lark's ``cache`` option does,
so only the first run pays. Rebuild the shipped file after editing the grammar with
``make parser`` (a test checks that it matches the grammar).
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
from pathlib import Path

from lark import Lark

GRAMMAR_DIR = Path(__file__).resolve().parents[2] / "grammar"  # the source tree's copy
SHIPPED = "schema.parser"
OPTIONS = dict(parser="lalr", lexer="contextual", propagate_positions=True,
               start=["start", "annotation"])


@functools.lru_cache(maxsize=1)
def parser() -> Lark:
    """The parser, loaded once per process: the shipped one, else the user's cached one,
    else built (and cached)."""
    grammar = grammar_text()
    shipped = _load_shipped(digest(grammar))
    if shipped is not None:
        return shipped
    options: dict = {}
    cache = _cache_file(grammar)
    if cache is not None:
        options["cache"] = cache
    return Lark(grammar, **OPTIONS, **options)


def digest(grammar: str) -> str:
    """What identifies a grammar's text (and the parser options) in the shipped file."""
    return hashlib.sha256((grammar + repr(sorted(OPTIONS.items()))).encode()).hexdigest()


def grammar_text() -> str:
    return _resource_path(SHIPPED).with_name("schema.lark").read_text(encoding="utf-8")


def write_shipped() -> Path:
    """Build the parser from the grammar and write the shipped file; its path."""
    grammar = grammar_text()
    built = Lark(grammar, **OPTIONS)
    path = _resource_path(SHIPPED)
    with open(path, "wb") as out:
        pickle.dump(digest(grammar), out, protocol=pickle.HIGHEST_PROTOCOL)
        built.save(out)
    return path


def _load_shipped(wanted: str) -> Lark | None:
    """The shipped parser if it was built from this grammar (None otherwise, and when this
    lark cannot read it)."""
    try:
        with open(_resource_path(SHIPPED), "rb") as shipped:
            if pickle.load(shipped) != wanted:
                return None
            return Lark.load(shipped)
    except Exception:  # missing, stale, or another lark's format: build it instead
        return None


def _resource_path(name: str) -> Path:
    """A file of the grammar package: the installed ``piql.grammar``, or, in a source tree
    that was never installed, the top-level grammar/ directory."""
    try:
        from importlib.resources import files

        found = files("piql.grammar") / name
        if isinstance(found, Path):
            return found
        return Path(str(found))
    except (ImportError, TypeError, ModuleNotFoundError):
        return GRAMMAR_DIR / name


def _cache_file(grammar: str) -> str | None:
    """Where lark keeps a parser built here: a directory of the user's own (lark's default
    is the shared temporary directory, where another user could plant the pickle it loads).
    None when there is no such directory to write."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = os.path.join(base, "piql")
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if not os.access(directory, os.W_OK) or (hasattr(os, "getuid") and
                                                 os.stat(directory).st_uid != os.getuid()):
            return None
    except OSError:
        return None
    return os.path.join(directory, f"schema-parser-{digest(grammar)[:16]}-py{sys.version_info[0]}"
                                   f"{sys.version_info[1]}.lark")
