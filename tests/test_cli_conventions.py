"""What users of other command-line tools expect of ``piql``: --version, colour on a
terminal only (NO_COLOR, FORCE_COLOR), --help with an example and exit statuses, a bad
flag answered with that command's usage, "did you mean" for misspelt names."""
from __future__ import annotations

import argparse
import os
import pty
import subprocess
import sys

import pytest

from piql.cli import build_parser, main
from piql.version import version
from tests.conftest import FIXTURES, PAPER_SCHEMA

UNBOUNDED = FIXTURES / "paper_unbounded_queries.sql"
COMMANDS = ["lint", "rules", "explain", "plan", "deploy", "query", "refresh", "check", "bench"]
ESC = "\x1b["


def piql(*argv, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "piql", *map(str, argv)], env=environ,
                          capture_output=True, text=True, **kwargs)


def on_a_terminal(*argv, env: dict[str, str] | None = None) -> str:
    """What piql writes to standard output when that is a terminal."""
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environ.update(env or {})
    leader, follower = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "piql", *map(str, argv)], env=environ,
                          stdout=follower, stderr=subprocess.DEVNULL) as process:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed when piql exited
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait()
    os.close(leader)
    return b"".join(chunks).decode()


def test_version():
    done = piql("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"piql {version()}"
    import piql as package

    assert package.__version__ == version() and version()[0].isdigit()


def test_colour_on_a_terminal_off_with_no_color():
    painted = on_a_terminal("lint", PAPER_SCHEMA, UNBOUNDED)
    assert f"{ESC}31merror[unbounded]" in painted and f"{ESC}31munbounded" in painted
    plain = on_a_terminal("lint", PAPER_SCHEMA, UNBOUNDED, env={"NO_COLOR": "1"})
    assert ESC not in plain and "error[unbounded]" in plain


def test_no_colour_when_piped_unless_forced():
    assert ESC not in piql("lint", PAPER_SCHEMA, UNBOUNDED).stdout
    forced = piql("lint", PAPER_SCHEMA, UNBOUNDED, env={"FORCE_COLOR": "1"}).stdout
    assert f"{ESC}31merror[unbounded]" in forced
    both = piql("lint", PAPER_SCHEMA, UNBOUNDED, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert ESC not in both.stdout


def test_machine_formats_are_never_coloured():
    out = piql("lint", PAPER_SCHEMA, UNBOUNDED, "--format", "json", env={"FORCE_COLOR": "1"})
    assert ESC not in out.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_has_an_example_and_exit_statuses(capsys, command):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: piql {command}")
    assert "example" in out and "exit status:" in out
    assert "  0  " in out and "  2  " in out


def test_top_level_help_points_at_the_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "--version" in out and "rules" in out and "examples:" in out


@pytest.mark.parametrize("argv, usage", [
    (["lint", "--bogus", "s.sql", "q.sql"], "usage: piql lint"),
    (["deploy", "s.sql", "q.sql", "--db", "x.db", "--lod", "t=f"], "usage: piql deploy"),
    (["bench", "tpcw", "--scalez", "1x1"], "usage: piql bench tpcw"),
    (["rules", "a", "b"], "usage: piql rules"),
])
def test_a_bad_flag_prints_that_commands_usage(capsys, argv, usage):
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage)
    assert "unrecognized arguments" in err


@pytest.mark.parametrize("argv, usage, flag", [
    (["bench", "twotags", "--scale", "10"], "usage: piql bench twotags", "--scale"),
    (["lint", "--sel", "unbounded", "s.sql", "q.sql"], "usage: piql lint", "--sel"),
    (["refresh", "s.sql", "q.sql", "--db", "x.db", "--ever", "1 min"], "usage: piql refresh",
     "--ever"),
])
def test_an_abbreviated_flag_is_not_taken_for_the_whole_one(capsys, argv, usage, flag):
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage) and f"unrecognized arguments: {flag}" in err


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_no_parser_takes_abbreviations():
    parsers = list(_parsers(build_parser()))
    assert len(parsers) > len(COMMANDS)  # the bench subcommands too
    assert not [p.prog for p in parsers if p.allow_abbrev]


def test_did_you_mean_for_columns_tables_and_qualified_columns(tmp_path):
    queries = tmp_path / "q.sql"
    queries.write_text("-- name: a\nSELECT * FROM Tags WHERE tagg = <x>\n"
                       "-- name: b\nSELECT d.txt FROM Documents d, Tags t WHERE d.docId = t.docId\n"
                       "-- name: c\nSELECT * FROM Tag\n"
                       "-- name: d\nSELECT * FROM Documents d, Tags t WHERE stamp = <x>\n")
    done = piql("lint", PAPER_SCHEMA, queries)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines == [
        f"piql: error: {queries}:2:26: unknown column 'tagg' in any relation of the query; "
        "did you mean 'tag'?",
        f"piql: error: {queries}:4:8: unknown column 'txt' in relation 'd'; did you mean 'text'?",
        f"piql: error: {queries}:6:15: unknown table 'Tag'; did you mean 'Tags'? (known tables: "
        "Documents, Tags)",
        f"piql: error: {queries}:8:41: unknown column 'stamp' in any relation of the query; "
        "did you mean 'd.timestamp'?",
    ]


def test_parser_builds_every_command():
    parser = build_parser()
    assert parser.prog == "piql"
