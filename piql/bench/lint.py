"""``piql bench lint``: how long ``piql lint`` takes end to end, as a CI job runs it.

Each run is a new process running the ``piql lint`` command on the files (the TPC-W
example by default), timed from start to exit: interpreter start-up, imports, reading
and parsing the files, planning every query and writing the report. The figure is the
median wall time of the runs, with their CPU time beside it (the machine may be shared:
CPU time shows what load added to the wall time).

The runs read compiled bytecode from a cache of their own (``PYTHONPYCACHEPREFIX``),
filled by the unmeasured warm-up runs, as an installed package has its bytecode; so the
figure does not depend on whether the source tree's ``__pycache__`` may be written
(``PYTHONDONTWRITEBYTECODE``). The schema parser's tables ship with piql
(``piql.language.schema_parser``), so the first run needs no cache of its own either.
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from piql.bench.common import machine, median, percentile, progress, write_json

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tpcw"
TARGET_SECONDS = 0.5  # issue 17: lint of examples/tpcw stays under half a second


@dataclass(frozen=True)
class Settings:
    """What one run measures."""

    schema: str = str(EXAMPLE / "schema.sql")
    queries: tuple[str, ...] = (str(EXAMPLE / "queries.sql"),)
    runs: int = 10
    warmup: int = 2


def command(settings: Settings) -> list[str]:
    """The command timed: the installed ``piql`` script beside this interpreter, else
    ``python -m piql``."""
    script = Path(sys.executable).with_name("piql")
    start = [str(script)] if script.is_file() else [sys.executable, "-m", "piql"]
    return start + ["lint", "--no-config", settings.schema, *settings.queries]


def run(settings: Settings, out: Path) -> dict[str, Any]:
    """Time the runs; write ``lint.json`` under ``out``."""
    argv = command(settings)
    cache = Path(tempfile.mkdtemp(prefix="piql-bench-lint-"))
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    walls: list[float] = []
    cpus: list[float] = []
    exit_code = None
    try:
        total = settings.warmup + settings.runs
        for number in range(total):
            progress("lint", number, total)
            wall, cpu, exit_code = _time(argv, env)
            if number >= settings.warmup:
                walls.append(wall)
                cpus.append(cpu)
        progress("lint", total, total)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    document = {
        "benchmark": "lint", "command": " ".join(argv), "exit_code": exit_code,
        "machine": dict(machine(), load_average=list(os.getloadavg())),
        "runs": settings.runs, "warmup": settings.warmup,
        "wall_seconds": walls, "cpu_seconds": cpus,
        "wall_seconds_median": median(walls), "wall_seconds_p90": percentile(walls, 90),
        "cpu_seconds_median": median(cpus), "target_seconds": TARGET_SECONDS,
    }
    write_json(out / "lint.json", document)
    return document


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall and CPU seconds (user + system, of the child) of one run, and its exit status."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode > 1:  # 0 and 1 are verdicts; 2 is an input error: nothing was timed
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: "
                           f"{done.stderr.decode(errors='replace').strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def summary(document: dict[str, Any]) -> str:
    wall, target = document["wall_seconds_median"], document["target_seconds"]
    verdict = "within" if wall < target else "over"
    load = ", ".join(f"{x:.2f}" for x in document["machine"]["load_average"])
    return (f"{document['command']}\n"
            f"median of {document['runs']} runs: {wall:.3f} s wall ({verdict} the {target} s "
            f"target), p90 {document['wall_seconds_p90']:.3f} s; CPU {document['cpu_seconds_median']:.3f} s"
            f"\nload average {load} on {document['machine']['cpus']} CPUs")
