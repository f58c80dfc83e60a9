"""The benchmarks' progress output: plain lines in a log, a bar only on a terminal."""
from __future__ import annotations

import io

from piql.bench.common import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_in_a_log_is_plain_lines():
    log = io.StringIO()
    progress = Progress(log)
    for done in range(0, 101, 10):
        progress("load", done, 100)
    progress("queries", 0, 4)
    progress("queries", 4, 4)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and "\x1b" not in log.getvalue()
    assert lines[0] == "load: started (100 steps)"
    assert lines[1:4] == ["load: 30/100", "load: 50/100", "load: 80/100"]  # each quarter once
    assert lines[4].startswith("load: done 100/100 in ")
    assert lines[5] == "queries: started (4 steps)" and lines[6].startswith("queries: done 4/4")
    assert len(lines) == 7


def test_a_step_left_unfinished_ends_when_the_next_starts():
    log = io.StringIO()
    progress = Progress(log)
    progress("generate", 0, 10)
    progress("load", 0, 2)
    assert log.getvalue().splitlines() == ["generate: started (10 steps)", "load: started (2 steps)"]


def test_progress_on_a_terminal_is_a_bar():
    screen = Terminal()
    progress = Progress(screen)
    for done in range(0, 11):
        progress("queries", done, 10)
    shown = screen.getvalue()
    assert "queries" in shown and "10/10" in shown and "\r" in shown
    assert "started" not in shown
