"""Project configuration of ``piql lint``: ``[tool.piql]`` in pyproject.toml, or piql.toml.

The nearest of the current directory and its parents that holds a ``piql.toml`` or a
``pyproject.toml`` with a ``[tool.piql]`` table is the project's (piql.toml first, as
ruff reads ruff.toml before pyproject.toml). Paths in it are relative to its directory.
Command-line flags override each setting.
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from piql.errors import InputError, Location
from piql.rules import Severity, codes_of

KEYS = ("schema", "queries", "select", "ignore", "fail-on", "partitions", "format")
FORMATS = ("text", "json", "sarif", "github")


@dataclass(frozen=True)
class LintConfig:
    """The settings of a project file; None (or empty) where it says nothing."""

    file: str | None = None
    schema: str | None = None
    queries: tuple[str, ...] = ()
    select: frozenset[str] | None = None
    ignore: frozenset[str] | None = None
    fail_on: Severity | None = None
    partitions: int | None = None
    format: str | None = None


def find(start: Path | None = None) -> Path | None:
    """The project file for ``start`` (default: the current directory), if any."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        own = directory / "piql.toml"
        if own.is_file():
            return own
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and _has_piql_table(pyproject):
            return pyproject
    return None


def _has_piql_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(r"^\s*\[\s*tool\s*\.\s*piql\s*\]", text, re.MULTILINE) is not None


def read(path: str | Path) -> LintConfig:
    """The settings of ``path`` (piql.toml, or a pyproject.toml's ``[tool.piql]``)."""
    file = Path(path)
    shown = _shown(file)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read the configuration: {getattr(err, 'strerror', None) or err}",
                         Location(shown, 1, 1)) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        found = re.search(r"\(at line (\d+), column (\d+)\)", str(err))
        where = Location(shown, int(found[1]), int(found[2])) if found else Location(shown, 1, 1)
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(err))
        raise InputError(f"not valid TOML: {message}", where) from None
    table: Any = document
    if file.name != "piql.toml":
        table = document.get("tool", {}).get("piql", {})
    if not isinstance(table, dict):
        raise InputError("[tool.piql] must be a table", Location(shown, 1, 1))
    return _settings(table, text, shown, file.parent)


def _settings(table: dict[str, Any], text: str, shown: str, base: Path) -> LintConfig:
    def where(key: str) -> Location:
        original = spelled.get(key, key)
        found = re.search(rf"^[ \t]*[\"']?{re.escape(original)}[\"']?[ \t]*=", text,
                          re.MULTILINE)
        line = text.count("\n", 0, found.start()) + 1 if found else 1
        return Location(shown, line, 1)

    def fail(key: str, message: str) -> InputError:
        return InputError(f"{key}: {message}", where(key))

    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}  # a setting's name as the file writes it (fail_on)
    for key, value in table.items():
        name = key.replace("_", "-")
        spelled[name] = key
        if name not in KEYS:
            raise fail(key, f"unknown setting (settings: {', '.join(KEYS)})")
        values[name] = value
    settings: dict[str, Any] = {"file": shown}
    if "schema" in values:
        if not isinstance(values["schema"], str):
            raise fail("schema", "expected a file name")
        settings["schema"] = _path(values["schema"], base)
    if "queries" in values:
        queries = values["queries"]
        queries = [queries] if isinstance(queries, str) else queries
        if not isinstance(queries, list) or not queries or \
                not all(isinstance(q, str) for q in queries):
            raise fail("queries", "expected a file name or a list of them")
        settings["queries"] = tuple(_path(q, base) for q in queries)
    for key in ("select", "ignore"):
        if key in values:
            if not isinstance(values[key], (list, str)):
                raise fail(key, "expected a list of rule codes")
            try:
                settings[key] = codes_of(values[key], key)
            except ValueError as err:
                raise InputError(str(err), where(key)) from None
    if "fail-on" in values:
        try:
            settings["fail_on"] = Severity(values["fail-on"])
        except ValueError:
            raise fail(spelled["fail-on"], f"expected error, warning or info, got "
                                  f"{values['fail-on']!r}") from None
    if "partitions" in values:
        partitions = values["partitions"]
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise fail("partitions", f"expected a positive integer, got {partitions!r}")
        settings["partitions"] = partitions
    if "format" in values:
        if values["format"] not in FORMATS:
            raise fail("format", f"expected one of {', '.join(FORMATS)}, got "
                                 f"{values['format']!r}")
        settings["format"] = values["format"]
    return LintConfig(**settings)


def _path(name: str, base: Path) -> str:
    """A file named in the configuration, as a path from the current directory."""
    if name == "-" or Path(name).is_absolute():
        return name
    return os.path.relpath(base / name)


def _shown(file: Path) -> str:
    try:
        return os.path.relpath(file)
    except ValueError:  # another drive on Windows
        return str(file)
