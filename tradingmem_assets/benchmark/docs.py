"""The measured part of ``docs/performance.md``, written from the benchmark's reports (SPEC section 14).

``tradingmem benchmark --write-docs docs/performance.md`` keeps each report it makes in
``docs/benchmarks/scale-<SF>.json`` (the latest one of each scale factor), then rewrites the block
between ``BEGIN`` and ``END`` in the page from every report kept there: SPEC section 14's targets,
each judged from the reports' medians, then every figure by scale factor and the steps' medians.
Everything outside the markers (the analysis, written by people) is left as it is. Pure: no
Dagster, no queries; reports are the dicts ``benchmark()`` returns.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tradingmem_assets.benchmark import core_seconds

BEGIN = "<!-- benchmark:begin: written by `tradingmem benchmark --write-docs`, edit outside the markers -->"
END = "<!-- benchmark:end -->"
REPORTS_FOLDER = "benchmarks"
LANDING_PREFIX = "raw__"
CORE_LABEL = "core (the 8 trading landing tables + evaluation + role_cases)"

Figure = Callable[[dict], float | None]  # one repetition's value of a figure (None: not measured)


def _at(*path: str) -> Figure:
    def get(run: dict) -> float | None:
        value: object = run
        for key in path:  # a probe or a repetition that failed has no figures
            if not isinstance(value, dict) or key not in value or value.get("error"):
                return None
            value = value[key]
        return float(value) if isinstance(value, int | float) else None

    get.probe = path[0] if len(path) > 1 else None  # type: ignore[attr-defined]
    return get


def _failure(report: dict, figure: Figure) -> str | None:
    """How the figure's probe failed in the repetitions that have no value of it, if it did."""
    probe = getattr(figure, "probe", None)
    for run in report.get("runs", []):
        error = (run.get(probe) or {}).get("error") if probe else None
        if error:
            return f"failed ({str(error).split(':')[0]})"
    return None


_END_TO_END = _at("end_to_end_s")
_PEAK_RSS = _at("peak_rss_mb")
_BARE = _at("bare_sql", "reference_s")
_RATIO = _at("bare_sql", "ratio")
_RECALL_P95 = _at("recall", "p95_ms")
_RECALL_MEDIAN = _at("recall", "median_ms")
_COLD_RECALL = _at("cold_recall", "median_s")
_AUDIT = _at("audit", "seconds")


def _incremental(name: str, what: str) -> Figure:
    return _at("incremental", f"{name}_{what}")


def _steps(run: dict) -> dict[str, float]:
    """The seconds of each step of a repetition that succeeded (none of one that failed)."""
    return {} if run.get("error") else run.get("step_s") or {}


def _landing_sum(steps: dict[str, float]) -> float:
    return sum(v for k, v in steps.items() if k.startswith(LANDING_PREFIX))


def _landing(run: dict) -> float | None:
    steps = _steps(run)
    return _landing_sum(steps) if steps else None


def _outside_steps(run: dict) -> float | None:
    """The run's seconds outside its steps (its start and end, Dagster between the steps)."""
    total, steps = _END_TO_END(run), _steps(run)
    return None if total is None or not steps else total - sum(steps.values())


def _core(run: dict) -> float | None:
    """The core's seconds, from the steps: measured even when the bare reference failed."""
    steps = _steps(run)
    return core_seconds(steps) if steps else None


def values(report: dict, figure: Figure) -> list[float]:
    """The figure's value in each repetition that has it."""
    return [v for v in map(figure, report.get("runs", [])) if v is not None]


def median(report: dict, figure: Figure) -> float | None:
    found = values(report, figure)
    return statistics.median(found) if found else None


def _spread(report: dict, figure: Figure, unit: Unit) -> str:
    """The median, with the repetitions' range in brackets when there are several."""
    found = values(report, figure)
    if not found:
        return _failure(report, figure) or "–"
    number, suffix = unit
    text = number(statistics.median(found)) + suffix
    return f"{text} ({number(min(found))}–{number(max(found))})" if len(found) > 1 else text


Unit = tuple[Callable[[float], str], str]  # how a number is spelled, and its unit's suffix
seconds: Unit = (lambda x: f"{x:.2f}" if x < 10 else f"{x:.1f}", " s")
mib: Unit = (lambda x: f"{x:,.0f}", " MiB")
share: Unit = (lambda x: f"{x * 100:.1f}", " %")
millis: Unit = (lambda x: f"{x:.1f}", " ms")
times: Unit = (lambda x: f"{x:.2f}", "×")


def spelled(x: float, unit: Unit) -> str:
    return unit[0](x) + unit[1]


def scale_name(scale: float) -> str:
    return f"SF {scale:g}"


@dataclass(frozen=True)
class Target:
    """One of SPEC section 14's targets: its wording, the reports it reads and how it is judged."""

    text: str
    judge: Callable[[dict[float, dict]], tuple[str, bool | None]]  # (measured, met; None: no report)


def _single(scale: float, figure: Figure, limit: float, unit: Unit):
    def judge(reports: dict[float, dict]) -> tuple[str, bool | None]:
        report = reports.get(scale)
        if report is None:
            return f"no {scale_name(scale)} report", None
        value = median(report, figure)
        if value is None:  # a failed probe, or a report written before the figure was measured
            return _failure(report, figure) or "not in the report", None
        return _spread(report, figure, unit), value <= limit

    return judge


def _every_scale(figure: Figure, limit: float, unit: Unit):
    def judge(reports: dict[float, dict]) -> tuple[str, bool | None]:
        measured = [(s, median(r, figure), r) for s, r in sorted(reports.items())]
        measured = [(s, v, r) for s, v, r in measured if v is not None]
        if not measured:
            return "no report with it", None
        text = "; ".join(f"{scale_name(s)}: {_spread(r, figure, unit)}" for s, _, r in measured)
        return text, all(v <= limit for _, v, _ in measured)

    return judge


def _sf30_over_sf10(reports: dict[float, dict]) -> tuple[str, bool | None]:
    big, small = reports.get(30.0), reports.get(10.0)
    a = None if big is None else median(big, _END_TO_END)
    b = None if small is None else median(small, _END_TO_END)
    if a is None or b is None:
        return "needs an SF 30 and an SF 10 report", None
    fastest = min(values(small, _END_TO_END))
    return (
        f"{spelled(a / b, times)} the SF 10 median ({spelled(a, seconds)} / {spelled(b, seconds)}; "
        f"{spelled(a / fastest, times)} its fastest repetition)",
        a / b <= 3.3,
    )


TARGETS = (
    Target("SF 10 end-to-end ≤ 60 s", _single(10.0, _END_TO_END, 60.0, seconds)),
    Target("SF 10 peak RSS of the main job ≤ 3 GiB (3,072 MiB)", _single(10.0, _PEAK_RSS, 3072.0, mib)),
    Target(f"SF 10 {CORE_LABEL} ≤ 1.5× the bare DuckDB SQL reference", _single(10.0, _RATIO, 1.5, times)),
    Target("SF 30 peak RSS of the main job ≤ 4 GiB (4,096 MiB)", _single(30.0, _PEAK_RSS, 4096.0, mib)),
    Target("SF 30 end-to-end ≤ 3.3× SF 10's", _sf30_over_sf10),
    Target(
        "replay (unchanged files and `as_of`) ≤ 20 % of the full build",
        _every_scale(_incremental("replay", "ratio"), 0.2, share),
    ),
    Target(
        "next day (files grown by one weekday) ≤ 50 % of the full build",
        _every_scale(_incremental("next_day", "ratio"), 0.5, share),
    ),
    Target("SF 10 recall p95 ≤ 20 ms in process", _single(10.0, _RECALL_P95, 20.0, millis)),
    Target("SF 10 `tradingmem recall` ≤ 1.5 s as a fresh process", _single(10.0, _COLD_RECALL, 1.5, seconds)),
    Target("SF 10 audit pass ≤ 5 s", _single(10.0, _AUDIT, 5.0, seconds)),
)

# the rows of the table by scale factor: (label, figure, unit)
FIGURES: tuple[tuple[str, Figure, Unit], ...] = (
    ("end-to-end, main job", _END_TO_END, seconds),
    ("peak RSS of the main job", _PEAK_RSS, mib),
    ("the landing steps, together", _landing, seconds),
    ("the run outside its steps", _outside_steps, seconds),
    (CORE_LABEL, _core, seconds),
    ("bare DuckDB SQL reference of the core", _BARE, seconds),
    ("ratio core / bare SQL", _RATIO, times),
    ("replay, share of the full build", _incremental("replay", "ratio"), share),
    ("next day, share of the full build", _incremental("next_day", "ratio"), share),
    ("next day, seconds", _incremental("next_day", "s"), seconds),
    ("quiet day (a later `as_of`, nothing new landed), share", _incremental("quiet_day", "ratio"), share),
    ("recall in process, p95", _RECALL_P95, millis),
    ("recall in process, median", _RECALL_MEDIAN, millis),
    ("`tradingmem recall` as a fresh process", _COLD_RECALL, seconds),
    ("audit pass (both hashes)", _AUDIT, seconds),
)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render(reports: dict[float, dict]) -> str:
    """The block between the markers (markers included), from the reports by scale factor."""
    scales = sorted(reports)
    lines = [
        BEGIN,
        "## Measured by the benchmark",
        "",
        f"Written by `tradingmem benchmark --write-docs` from the reports kept in `{REPORTS_FOLDER}/` beside "
        "this page, the latest of each scale factor. Medians of the repetitions, their range in "
        "brackets; a target is judged on the median. MiB from the process's own high-water mark.",
        "",
        "### SPEC section 14's targets",
        "",
        _row(["target", "measured", ""]),
        _row(["---"] * 3),
    ]
    for target in TARGETS:
        measured, met = target.judge(reports)
        lines.append(_row([target.text, measured, {True: "met", False: "**not met**", None: "–"}[met]]))
    lines += ["", "### Every figure, by scale factor", ""]
    lines.append(_row(["figure", *map(scale_name, scales)]))
    lines.append(_row(["---"] * (len(scales) + 1)))
    lines.append(_row(["measured at, commit", *(_provenance(reports[s]) for s in scales)]))
    lines.append(_row(["repetitions", *(_repetitions(reports[s]) for s in scales)]))
    lines.append(_row(["decisions", *(f"{reports[s].get('decisions') or 0:,}" for s in scales)]))
    for label, figure, unit in FIGURES:
        lines.append(_row([label, *(_spread(reports[s], figure, unit) for s in scales)]))
    lines += ["", "### Steps (median seconds)", ""]
    lines.append(_row(["step", *map(scale_name, scales)]))
    lines.append(_row(["---"] * (len(scales) + 1)))
    step_medians = {s: reports[s].get("median", {}).get("step_s", {}) for s in scales}
    landing = (f"{_landing_sum(step_medians[s]):.2f}" for s in scales)
    lines.append(_row(["the landing steps (their medians, summed)", *landing]))
    others = {k for s in scales for k in step_medians[s] if not k.startswith(LANDING_PREFIX)}
    largest = scales[-1] if scales else None
    for step in sorted(others, key=lambda k: (-step_medians[largest].get(k, 0.0), k)):
        lines.append(_row([f"`{step}`", *(_step(step_medians[s], step) for s in scales)]))
    lines.append(END)
    return "\n".join(lines)


def _step(steps: dict[str, float], step: str) -> str:
    return f"{steps[step]:.2f}" if step in steps else "–"


def _provenance(report: dict) -> str:
    """When the first repetition's run started (its Dagster run record), and the commit measured."""
    when = min((r["started_at"] for r in report.get("runs", []) if r.get("started_at")), default=None)
    parts = [f"{when[:16].replace('T', ' ')} UTC" if when else "–"]
    if report.get("commit"):
        parts.append(f"`{report['commit']}`")
    return ", ".join(parts)


def _repetitions(report: dict) -> str:
    runs = report.get("runs", [])
    failed = sum(1 for r in runs if not r.get("success"))
    return f"{len(runs)}" + (f" ({failed} failed)" if failed else "")


def report_path(folder: Path, scale: float) -> Path:
    return folder / f"scale-{scale:g}.json"


def load_reports(folder: Path) -> dict[float, dict]:
    """Every report kept in ``folder``, by scale factor."""
    reports = {}
    for path in sorted(folder.glob("scale-*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        reports[float(report["scale"])] = report
    return reports


def with_block(page: str, block: str) -> str:
    """``page`` with its block between the markers replaced by ``block`` (appended when it has none)."""
    start, end = page.find(BEGIN), page.find(END)
    if start == -1 or end < start:
        return page.rstrip("\n") + "\n\n" + block + "\n"
    return page[:start] + block + page[end + len(END) :]


def write_docs(page: Path, report: dict) -> Path:
    """Keep ``report`` beside ``page`` (replacing the last report of its scale factor), then rewrite
    the page's measured block from every report kept. Returns where the report was kept."""
    folder = page.parent / REPORTS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    kept = report_path(folder, float(report["scale"]))
    kept.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    text = page.read_text(encoding="utf-8") if page.exists() else "# Performance (SPEC section 14)\n"
    page.write_text(with_block(text, render(load_reports(folder))), encoding="utf-8")
    return kept
