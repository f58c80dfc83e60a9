"""``column LIKE 'prefix%'`` as a key range: ``prefix <= column < successor(prefix)``.

piql's ``LIKE`` is case-sensitive (docs/language.md: the SQLite store sets ``PRAGMA
case_sensitive_like``, PostgreSQL's is so already) and text sorts by code point on both
stores (SQLite's BINARY collation compares UTF-8 bytes, which order as code points do;
the PostgreSQL store declares text ``COLLATE "C"``). So the strings a pattern's literal
prefix starts are exactly those in ``[prefix, successor(prefix))``, and a pattern that is
its prefix followed only by ``%`` matches exactly the range: the range then replaces the
condition. Any other pattern (``'ab_c%'``, ``'ab%c'``) reads the range of its prefix and
keeps ``LIKE`` as a filter on the rows read.

``LIKE ... ESCAPE`` is refused by the resolver, so ``%`` and ``_`` are always wildcards
and the literal prefix stops at the first of them.
"""
from __future__ import annotations

from typing import NamedTuple

WILDCARDS = "%_"
MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)  # not characters: UTF-8 cannot hold them


class PrefixRange(NamedTuple):
    """The strings ``lower <= s < upper`` (``upper`` None: no upper end); ``exact`` when
    they are exactly the strings the pattern matches."""

    lower: str
    upper: str | None
    exact: bool


def literal_prefix(pattern: str) -> str:
    """The characters before the pattern's first wildcard."""
    for position, char in enumerate(pattern):
        if char in WILDCARDS:
            return pattern[:position]
    return pattern


def successor(prefix: str) -> str | None:
    """The least string greater than every string starting with ``prefix`` (None when
    there is none: the prefix is all U+10FFFF). The last character that can grow grows by
    one code point (skipping the surrogates) and what follows it is dropped."""
    chars = list(prefix)
    while chars:
        point = ord(chars.pop()) + 1
        if point in _SURROGATES:
            point = _SURROGATES.stop
        if point <= MAX_CODE_POINT:
            return "".join(chars) + chr(point)
    return None


def prefix_range(pattern: str) -> PrefixRange | None:
    """The range of strings ``LIKE pattern`` can match, or None when the pattern starts
    with a wildcard (any string may match) or has none (it is an equality, ``=``)."""
    prefix = literal_prefix(pattern)
    if not prefix or prefix == pattern:
        return None
    exact = set(pattern[len(prefix):]) == {"%"}
    return PrefixRange(prefix, successor(prefix), exact)
