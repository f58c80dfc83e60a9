"""What ``piql bench tpcw`` shows: terminal tables and PNG figures in the style of the paper's
Figures 5 (BuyConfirm with and without view maintenance), 6 (p99 per web interaction)
and 7 (periodic refresh time)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from piql.bench.common import pyplot, save_figure
from piql.bench.tpcw_mix import MIX

FIGURES = ("tpcw-interactions.png", "tpcw-buyconfirm.png", "tpcw-refresh.png", "tpcw-ops.png")
BACKENDS = (("piql", "piql"), ("sqlite", "on demand, SQLite"), ("duckdb", "on demand, DuckDB"))


# -- figures --------------------------------------------------------------------------------
def plot_all(document: dict[str, Any], out: Path) -> list[Path]:
    """Write every figure under ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in FIGURES]
    plot_interactions(document, paths[0])
    plot_buy_confirm(document, paths[1])
    plot_refresh(document, paths[2])
    plot_ops(document, paths[3])
    return paths


def _labels(document: dict[str, Any]) -> list[str]:
    return [f"{r['items']} items\n{r['ebs']} EB" for r in document["scales"]]


def _series(document: dict[str, Any], interaction: str, backend: str, field: str) -> list[float]:
    values = []
    for result in document["scales"]:
        entry = result["interactions"][interaction].get(backend)
        values.append(entry[field] if entry else float("nan"))
    return values


def plot_interactions(document: dict[str, Any], path: Path) -> None:
    """Figure 6: p99 latency of every web interaction against scale, piql beside on demand."""
    plt = pyplot()
    labels = _labels(document)
    figure, axes = plt.subplots(1, 3, figsize=(16, 5), sharey=True)
    colors = plt.get_cmap("tab20")
    for axis, (backend, title) in zip(axes, BACKENDS):
        for number, interaction in enumerate(MIX):
            axis.plot(range(len(labels)), _series(document, interaction, backend, "p99_ms"),
                      marker="o", color=colors(number), label=interaction)
        _scale_axis(axis, labels, f"{title}: p99 per web interaction", "ms (log)")
        axis.set_yscale("log")
    axes[-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    figure.suptitle("TPC-W: 99th-percentile latency per web interaction as the data grows")
    save_figure(plt, figure, path, dpi=110)


def plot_buy_confirm(document: dict[str, Any], path: Path) -> None:
    """Figure 5: BuyConfirm's writes with and without view maintenance."""
    plt = pyplot()
    labels = _labels(document)
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    for key, title in (("with_views", "with view maintenance"),
                       ("without_views", "without view maintenance")):
        writes = [r["buy_confirm"][key]["writes"] for r in document["scales"]]
        for field, style in (("p99_ms", "-"), ("p50_ms", ":")):
            left.plot(range(len(labels)), [w[field] if w else float("nan") for w in writes],
                      marker="o", linestyle=style, label=f"{title}, {field[:3]}")
        right.plot(range(len(labels)), [r["buy_confirm"][key]["ops_max"] or 0
                                        for r in document["scales"]],
                   marker="o", label=f"{title}, most")
        bounds = [r["buy_confirm"][key]["bound_max"] for r in document["scales"]]
        if any(bounds):
            right.plot(range(len(labels)), [b or 0 for b in bounds], linestyle="--",
                       label=f"{title}, bound")
    _scale_axis(left, labels, "BuyConfirm writes: latency", "ms")
    _scale_axis(right, labels, "BuyConfirm writes: operations", "tuples read + written")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    figure.suptitle("TPC-W BuyConfirm: the cost of incremental view maintenance")
    save_figure(plt, figure, path, dpi=110)


def plot_refresh(document: dict[str, Any], path: Path) -> None:
    """Figure 7: periodic refresh of the SI-3 views, time and the busiest partition's reads."""
    plt = pyplot()
    labels = _labels(document)
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    latency = [r["refresh"].get("latency") for r in document["scales"]]
    for field, style in (("p50_ms", ":"), ("p99_ms", "-"), ("max_ms", "--")):
        left.plot(range(len(labels)), [l[field] if l else float("nan") for l in latency],
                  marker="o", linestyle=style, label=field[:-3])
    views = sorted({v for r in document["scales"] for v in r["refresh"].get("views", {})})
    for view in views:
        seen = [r["refresh"]["views"].get(view) for r in document["scales"]]
        right.plot(range(len(labels)), [s["max_partition_reads"] if s else float("nan")
                                        for s in seen], marker="o", label=view)
    _scale_axis(left, labels, "refresh of every SI-3 view", "ms")
    _scale_axis(right, labels, "tuples read by the busiest partition", "tuples")
    left.legend(fontsize=8)
    if views:
        right.legend(fontsize=8)
    figure.suptitle("TPC-W periodic refresh (SI-3): bounded serial work per partition")
    save_figure(plt, figure, path, dpi=110)


def plot_ops(document: dict[str, Any], path: Path) -> None:
    """Work per interaction: piql's operations (flat) beside SQLite's VM instructions."""
    plt = pyplot()
    labels = _labels(document)
    figure, (left, right) = plt.subplots(1, 2, figsize=(14, 5))
    colors = plt.get_cmap("tab20")
    for number, interaction in enumerate(MIX):
        ops = [r["interactions"][interaction].get("piql_ops") for r in document["scales"]]
        vm = [r["interactions"][interaction].get("sqlite_vm_instructions")
              for r in document["scales"]]
        left.plot(range(len(labels)), [o["max"] if o else float("nan") for o in ops],
                  marker="o", color=colors(number), label=interaction)
        right.plot(range(len(labels)), [v["p50"] if v else float("nan") for v in vm],
                   marker="o", color=colors(number), label=interaction)
    _scale_axis(left, labels, "piql: most operations in one interaction", "tuples (log)")
    _scale_axis(right, labels, "on demand, SQLite: VM instructions (median)", "instructions (log)")
    left.set_yscale("log")
    right.set_yscale("log")
    right.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    figure.suptitle("TPC-W: work per web interaction as the data grows")
    save_figure(plt, figure, path, dpi=110)


def _scale_axis(axis, labels: list[str], title: str, unit: str) -> None:
    axis.set_xticks(range(len(labels)))
    axis.set_xticklabels(labels, fontsize=8)
    axis.set_xlabel("scale")
    axis.set_ylabel(unit)
    axis.set_title(title, fontsize=10)
    axis.grid(True, alpha=0.3)


# -- terminal -------------------------------------------------------------------------------
def summary(document: dict[str, Any]) -> str:
    """Latency per interaction and scale, the targets, BuyConfirm and refresh, as text."""
    from piql.report import table

    parts = [_latency_table(document, table), "", _targets_table(document, table), "",
             _buy_confirm_table(document, table), "", _refresh_table(document, table)]
    problems = _problems(document)
    if problems:
        parts += ["", *problems]
    return "\n".join(parts)


def _ms(entry: dict | None, field: str) -> str:
    return "-" if not entry else f"{entry[field]:.2f}"


def _latency_table(document: dict[str, Any], table) -> str:
    postgres = _postgres_columns(document)
    rows = []
    for interaction in MIX:
        for result in document["scales"]:
            entry = result["interactions"][interaction]
            ops = entry.get("piql_ops")
            vm = entry.get("sqlite_vm_instructions")
            rows.append((interaction, f"{result['items']}/{result['ebs']}", entry["count"],
                         _ms(entry["piql"], "p50_ms"), _ms(entry["piql"], "p99_ms"),
                         f"{ops['max']} ({ops['bound_max']})" if ops else "-",
                         _ms(entry["sqlite"], "p50_ms"), _ms(entry["sqlite"], "p99_ms"),
                         _ms(entry["duckdb"], "p50_ms"), _ms(entry["duckdb"], "p99_ms"),
                         f"{vm['p50']:.0f}" if vm else "-",
                         *(_ms(entry.get(b), f) for b in postgres for f in ("p50_ms", "p99_ms"))))
    return table.render(["interaction", "items/EB", "n", "piql p50", "piql p99",
                         "piql ops max (bound)", "sqlite p50", "sqlite p99", "duckdb p50",
                         "duckdb p99", "sqlite VM instr p50",
                         *(f"{POSTGRES_TITLES[b]} {f}" for b in postgres for f in ("p50", "p99"))],
                        rows)


POSTGRES_TITLES = {"piql_postgres": "piql on PostgreSQL", "postgres": "postgres"}


def _postgres_columns(document: dict[str, Any]) -> tuple[str, ...]:
    """The PostgreSQL backends measured (``--postgres``), or none."""
    return tuple(POSTGRES_TITLES) if "postgres" in document.get("stores", {}) else ()


def _targets_table(document: dict[str, Any], table) -> str:
    targets = document["targets"]
    rows = []
    for interaction, entry in targets["interactions"].items():
        growth = entry["on_demand_p99_growth"]
        postgres = [_x(entry.get(k)) for k in ("piql_postgres_p99_ratio",
                                               "piql_postgres_p50_over_postgres")]
        rows.append((interaction, _x(entry["piql_p99_ratio"]),
                     "yes" if entry["piql_p99_within_target"] else "NO",
                     _x(entry["piql_ops_max_ratio"]), _x(growth["sqlite"]), _x(growth["duckdb"]),
                     _x(entry["sqlite_vm_p50_growth"]),
                     "yes" if entry["on_demand_scale_dependent"] else "no",
                     "yes" if entry["read_only"] else "no", _x(entry.get("piql_p50_over_sqlite")),
                     *(postgres if _postgres_columns(document) else ())))
    return table.render(["across scales (ms in ms, x = largest/smallest)", "piql p99 x",
                         f"<= {targets['p99_ratio_limit']}x", "piql ops x", "sqlite p99 growth",
                         "duckdb p99 growth", "sqlite VM growth", "on-demand scale-dependent",
                         "read-only", "largest: piql p50 / sqlite p50",
                         *(("piql on PostgreSQL p99 x", "largest: piql / postgres p50")
                           if _postgres_columns(document) else ())], rows)


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _buy_confirm_table(document: dict[str, Any], table) -> str:
    rows = []
    for result in document["scales"]:
        for key, title in (("with_views", "with views"), ("without_views", "without views")):
            entry = result["buy_confirm"][key]
            rows.append((f"{result['items']}/{result['ebs']}", title,
                         _ms(entry["writes"], "p50_ms"), _ms(entry["writes"], "p99_ms"),
                         entry["ops_p50"], entry["ops_max"], entry["bound_max"]))
    return table.render(["BuyConfirm writes: items/EB", "maintenance", "p50 ms", "p99 ms",
                         "ops p50", "ops max", "bound"], rows)


def _refresh_table(document: dict[str, Any], table) -> str:
    rows = []
    for result in document["scales"]:
        refresh = result["refresh"]
        latency = refresh.get("latency")
        reads = ", ".join(f"{name} {v['max_partition_reads']}/{v['per_partition_bound']}"
                          for name, v in refresh.get("views", {}).items()) or "-"
        rows.append((f"{result['items']}/{result['ebs']}", refresh.get("count", 0),
                     _ms(latency, "p50_ms"), _ms(latency, "p99_ms"), _ms(latency, "max_ms"), reads))
    return table.render(["SI-3 refresh: items/EB", "refreshes", "p50 ms", "p99 ms", "max ms",
                         "busiest partition reads / bound"], rows)


def _problems(document: dict[str, Any]) -> list[str]:
    lines = []
    if document["unbounded_queries_not_run"]:
        lines.append("not run (unbounded in piql): " + ", ".join(document["unbounded_queries_not_run"]))
    if document["unmapped_queries"]:
        lines.append("no interaction runs: " + ", ".join(document["unmapped_queries"]))
    for result in document["scales"]:
        for backend, errors in result["errors"].items():
            if errors["errors"]:
                lines.append(f"{result['items']}/{result['ebs']} {backend}: {errors['errors']} "
                             f"errors, e.g. {errors['first_errors'][0]}")
        answers = result["answers"]
        if answers["differ"]:
            lines.append(f"{result['items']}/{result['ebs']}: {answers['differ']} of "
                         f"{answers['compared']} answers differ between piql and SQLite")
    return lines
