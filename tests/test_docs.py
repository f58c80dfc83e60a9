"""The documentation against the code: every link between the docs lands on a heading
that exists, and every ``piql`` command line the docs show names a command and options
the CLI has (so a renamed or removed option cannot linger in a doc)."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from piql.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

LINK = re.compile(r"\]\(([^)\s#]*\.md)?#([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$")
HTML_ANCHOR = re.compile(r'<a id="([^"]+)"></a>')
COMMAND = re.compile(r"^\s*(?:\$ )?(?:\.venv/bin/)?piql ((?:[^#\\]|\\.)*)")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := HEADING.match(line)):
            found.add(slug(heading.group(1)))
        found.update(HTML_ANCHOR.findall(line))
    return found


def fenced_lines(path: Path):
    """(line number, text) of every line inside a fenced code block."""
    fenced = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            yield number, line


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_link_between_the_docs_lands_on_a_heading(doc: Path):
    broken = []
    for match in LINK.finditer(doc.read_text()):
        target = doc.parent / match.group(1) if match.group(1) else doc
        if not target.exists() or match.group(2) not in anchors(target):
            broken.append(match.group(0))
    assert not broken, f"{doc.name}: links to no heading: {broken}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_documented_command_line_uses_options_the_cli_has(doc: Path):
    top = build_parser()
    wrong = []
    for number, line in fenced_lines(doc):
        found = COMMAND.match(line)
        if not found or not found.group(1).strip():
            continue
        words = found.group(1).split()
        if words[0].startswith("-"):
            parser = top
        elif words[0] not in subcommands(top):
            wrong.append(f"{doc.name}:{number}: no command {words[0]!r}")
            continue
        else:
            parser = subcommands(top)[words[0]]
            nested = subcommands(parser)
            if nested and len(words) > 1 and re.fullmatch(r"[a-z][a-z0-9-]*", words[1]):
                if words[1] not in nested:
                    wrong.append(f"{doc.name}:{number}: no {words[0]} {words[1]!r}")
                    continue
                parser = nested[words[1]]
        unknown = sorted(set(OPTION.findall(found.group(1))) - options(parser))
        if unknown:
            wrong.append(f"{doc.name}:{number}: {' '.join(words[:2])}: {unknown}")
    assert not wrong, "\n".join(wrong)


def test_issue_15_options_are_documented_where_the_cli_has_them():
    """The PostgreSQL options of issue 15, in the CLI and in docs/cli.md."""
    top = subcommands(build_parser())
    bench = subcommands(top["bench"])
    assert {"postgres", "sqlite"} <= set(_choices(top["plan"], "--dialect"))
    assert "--postgres" in options(bench["twotags"]) and "--postgres" in options(bench["tpcw"])
    cli = (ROOT / "docs" / "cli.md").read_text()
    for text in ("--dialect postgres", "psql -v ON_ERROR_STOP=1", "--postgres [URI]",
                 "--db postgresql://"):
        assert text in cli, text


def _choices(parser: argparse.ArgumentParser, flag: str) -> list[str]:
    return next(list(a.choices) for a in parser._actions if flag in a.option_strings)
