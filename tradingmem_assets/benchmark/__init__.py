"""Benchmark: synthetic landing data at a scale factor, per-asset and end-to-end time, peak memory.

Each repetition runs in a fresh subprocess (so peak RSS is that run's own) on a fresh warehouse;
the report gives every repetition and the medians. Not a test: machines here are noisy.

    tradingmem benchmark --scale 1 --repeat 3 [--no-incremental] [--json] [--write-docs PAGE]

The demo world is written once; the full build reads the landing files as they stood at the end
of the last weekday before its anchor, at that instant (``days.py``). In each repetition, after
the main job, the probes time the other targets: one audit pass, recall latency (in process, then
``tradingmem recall`` as a fresh process), and the bare DuckDB SQL reference of the admission +
evaluation core (reference.py) on the same landing files, with the ratio of the project's core
steps to it. Then a replay, the next day (files grown by one weekday of rows) and a quiet day
after it. ``docs.py`` writes the measured block of ``docs/performance.md`` from the reports.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def peak_rss_mb() -> float:
    """This process's peak RSS. On Linux, VmHWM of its own address space: ``ru_maxrss`` survives
    fork and exec, so a repetition started by a parent that holds the generated world (gigabytes
    at SF 30) would report the parent's peak instead of its own."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux, bytes on macOS


def run_once(landing_dir: Path, database: Path, as_of: str, next_day: tuple[Path, str] | None = None) -> dict:
    """One repetition inside this process: the main job, then the probes of the other targets, then
    (with ``next_day``: the landing folder one day later and that day's end) the incremental runs."""
    from tradingmem_assets.defs.operations.runs import run_main_job, scratch_instance

    with scratch_instance() as instance:
        report = run_main_job(instance, database=str(database), landing_dir=str(landing_dir), as_of=as_of)
        record = instance.get_run_record_by_id(report.run_id)
        started = record.start_time if record is not None else None  # the run's own record of it
        out: dict = {
            "started_at": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds")
            if started
            else None,
            "success": report.success,
            "error": report.error,
            "end_to_end_s": round(report.seconds, 3),
            "step_s": {k: round(v, 3) for k, v in sorted(report.step_seconds.items())},
            "peak_rss_mb": round(peak_rss_mb(), 1),  # the main job's: the probes come after
        }
        for name, probe in PROBES.items():
            try:
                out[name] = probe(instance, database, landing_dir, as_of)
            except Exception as exc:  # a missing capability is reported, never hidden
                out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        if "error" not in out["bare_sql"]:
            out["bare_sql"].update(core_ratio(out["step_s"], out["bare_sql"]))
        if next_day is not None:
            out["incremental"] = _incremental(
                instance, database, landing_dir, as_of, next_day, report.seconds
            )
    out["peak_rss_all_mb"] = round(peak_rss_mb(), 1)  # with the probes and the incremental runs
    return out


PROBES: dict[str, Callable[[Any, Path, Path, str], dict]] = {}


def probe(name: str):
    def register(fn):
        PROBES[name] = fn
        return fn

    return register


def fresh_run_dir(root: Path, i: int) -> Path:
    """Repetition ``i``'s folder, emptied: a warehouse left there by an earlier benchmark in the same
    ``--workdir`` would make the run a later day of it (or be refused as an earlier one)."""
    folder = root / f"run{i}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def benchmark(
    scale: float,
    repeats: int,
    workdir: Path | None = None,
    say: Callable[[str], None] = lambda _m: None,
    incremental: bool = True,
) -> dict:
    from tradingmem_assets.benchmark.days import landing_until, last_weekday
    from tradingmem_assets.demo import DEMO_AS_OF, write_demo_world

    root = Path(workdir or tempfile.mkdtemp(prefix="tradingmem-bench-"))
    say(f"generating landing data at scale {scale}")
    started = time.perf_counter()
    summary = write_demo_world(root / "world", scale=scale)
    generate_s = time.perf_counter() - started
    # the full build reads the files as they stood at the end of a weekday; the next day, as they
    # stood one weekday later (grown by that day's rows)
    day, next_day = last_weekday(DEMO_AS_OF)
    landing, next_landing = root / "landing", root / "landing_next_day"
    kept = landing_until(root / "world", landing, day)
    grown = landing_until(root / "world", next_landing, next_day)
    runs = []
    for i in range(repeats):
        folder = fresh_run_dir(root, i)
        database = folder / "tradingmem.duckdb"
        # the repetition's own landing folder: its next day grows these files in place
        run_landing = shutil.copytree(landing, folder / "landing")
        say(f"repetition {i + 1}/{repeats}")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "tradingmem_assets.benchmark",
                "--one",
                str(run_landing),
                str(database),
                day.isoformat(),
                *([str(next_landing), next_day.isoformat()] if incremental else []),
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"benchmark repetition {i + 1} failed:\n{proc.stderr[-4000:]}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    steps = sorted({k for r in runs for k in r["step_s"]})
    median = {
        "end_to_end_s": statistics.median(r["end_to_end_s"] for r in runs),
        "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
        "peak_rss_all_mb": statistics.median(r["peak_rss_all_mb"] for r in runs),
        "step_s": {k: statistics.median(r["step_s"].get(k, 0.0) for r in runs) for k in steps},
    }
    for name in (*PROBES, "incremental"):
        values = [r[name] for r in runs if isinstance(r.get(name), dict) and "error" not in r[name]]
        if values:
            median[name] = {
                k: statistics.median(v[k] for v in values)
                for k, first in values[0].items()
                if isinstance(first, int | float)
            }
    return {
        "scale": scale,
        "repeats": repeats,
        "commit": _commit(),  # the code measured (each repetition has its run's start)
        "as_of": day.isoformat(),
        "next_day_as_of": next_day.isoformat(),
        "landing_rows": summary.rows,
        "next_day_landed_rows": {t: grown[t] - kept[t] for t in kept if grown[t] != kept[t]},
        "decisions": summary.rows.get("trading_decisions"),
        "generate_s": round(generate_s, 3),
        "median": median,
        "runs": runs,
    }


def _commit() -> str | None:
    """The project's git commit (``+`` when its files differ from it), or None outside a checkout."""
    here = Path(__file__).parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(here), *args], capture_output=True, text=True, timeout=30)
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    if commit and git("status", "--porcelain", "--untracked-files=no", "--", str(here.parent)):
        commit += "+"
    return commit


def format_report(report: dict) -> str:
    m = report["median"]
    lines = [
        f"scale {report['scale']} ({report['decisions']:,} decisions), {report['repeats']} repetition(s), "
        f"landing generated in {report['generate_s']:.1f}s",
        f"end-to-end (median): {m['end_to_end_s']:.2f}s   peak RSS (median): {m['peak_rss_mb']:.0f} MB "
        f"(main job), {m['peak_rss_all_mb']:.0f} MB (with the probes)",
        "per asset (median seconds):",
    ]
    for step, seconds in sorted(m["step_s"].items(), key=lambda kv: -kv[1]):
        lines.append(f"  {step:<45} {seconds:8.3f}")
    for name in (*PROBES, "incremental"):
        if name in m:
            lines.append(f"{name}: " + ", ".join(f"{k}={v}" for k, v in m[name].items()))
    return "\n".join(lines)


@probe("audit")
def _audit_pass(instance: Any, database: Path, landing_dir: Path, as_of: str) -> dict:
    """One methodology audit pass (both table hashes included) on the run's warehouse."""
    from tradingmem_assets.defs.operations.runs import run_main_job

    report = run_main_job(
        instance,
        database=str(database),
        landing_dir=str(landing_dir),
        as_of=as_of,
        job_name="methodology_audit_job",
    )
    if not report.success:
        raise RuntimeError(report.error)
    return {"seconds": round(report.seconds, 3), "asset_s": round(sum(report.step_seconds.values()), 3)}


@probe("recall")
def _recall_latency(instance: Any, database: Path, landing_dir: Path, as_of: str) -> dict:
    """Median and p95 latency of recall queries (role filter, with and without a symbol filter)."""
    from tradingmem_assets.defs.role_memory.recall import search_cases
    from tradingmem_assets.lib.warehouse import connection

    queries = [
        "trend confirmed by volume",
        "valuation too rich",
        "earnings surprise drift",
        "funding flipped",
        "rate differential priced in",
    ]
    with connection(database, read_only=True) as con:
        roles = [
            r for (r,) in con.execute("SELECT DISTINCT role_id FROM main.role_cases ORDER BY 1").fetchall()
        ]
        symbols = [
            s for (s,) in con.execute("SELECT DISTINCT symbol FROM main.role_cases ORDER BY 1").fetchall()
        ]
        search_cases(con, roles[0], queries[0])  # warm-up: imports and first plan
        timings, hits = [], 0
        for i in range(60):
            role, query = roles[i % len(roles)], queries[i % len(queries)]
            symbol = symbols[i % len(symbols)] if i % 2 else None
            started = time.perf_counter()
            hits += len(search_cases(con, role, query, symbol=symbol, k=5, as_of=as_of))
            timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return {
        "median_ms": round(statistics.median(timings), 2),
        "p95_ms": round(timings[int(len(timings) * 0.95) - 1], 2),
        "hits": hits,
    }


@probe("cold_recall")
def _cold_recall(instance: Any, database: Path, landing_dir: Path, as_of: str) -> dict:
    """Seconds of ``tradingmem recall`` as a fresh process (its imports included), three times, on
    the role with the most recallable rows (ROLE_MEMORY_MODE=active for the command only)."""
    from tradingmem_assets.lib.warehouse import connection

    with connection(database, read_only=True) as con:
        rows = con.execute(
            "SELECT role_id FROM main.role_recall_index GROUP BY role_id "
            "ORDER BY count(*) DESC, role_id LIMIT 1"
        ).fetchall()
    if not rows:
        raise RuntimeError("no recallable row: nothing to recall")
    env = {**os.environ, "TRADINGMEM_DB": str(database), "ROLE_MEMORY_MODE": "active"}
    command = [sys.executable, "-m", "tradingmem_assets.cli", "recall", "trend confirmed by volume"]
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([*command, "--role", rows[0][0], "--json"], env=env, capture_output=True, check=True)
        timings.append(time.perf_counter() - started)
    return {"median_s": round(statistics.median(timings), 3), "max_s": round(max(timings), 3)}


CORE_STEPS = ("evaluation", "role_cases")


def _incremental(
    instance: Any, database: Path, landing_dir: Path, as_of: str, next_day: tuple[Path, str], full_s: float
) -> dict:
    """The main job again on the same landing files and as_of (a replay); then one day later, the
    files of ``landing_dir`` grown by that day's rows (copied in from ``next_day``'s folder: a
    landing table's fingerprint names its folder, so the folder stays the same); then one more
    day on those files, when nothing new landed (a quiet day: only time moved)."""
    from datetime import datetime, timedelta

    from tradingmem_assets.defs.operations.runs import landing_ingested, run_main_job

    next_landing, next_as_of = next_day
    quiet_as_of = (datetime.fromisoformat(next_as_of) + timedelta(days=1)).isoformat()
    out: dict = {}
    for name, when in (("replay", as_of), ("next_day", next_as_of), ("quiet_day", quiet_as_of)):
        if name == "next_day":  # the day's rows land in the same folder, as a feed's would
            shutil.copytree(next_landing, landing_dir, dirs_exist_ok=True)
        report = run_main_job(instance, database=str(database), landing_dir=str(landing_dir), as_of=when)
        if not report.success:
            return {"error": f"{name}: {report.error}"}
        out[f"{name}_s"] = round(report.seconds, 3)
        out[f"{name}_ratio"] = round(report.seconds / full_s, 3)
        out[f"{name}_step_s"] = {k: round(v, 3) for k, v in sorted(report.step_seconds.items())}
        out[f"{name}_ingested"] = landing_ingested(instance, report.run_id)
    return out


@probe("bare_sql")
def _bare_sql(instance: Any, database: Path, landing_dir: Path, as_of: str) -> dict:
    """The bare SQL reference of the core on the same landing files, and the project's ratio to it."""
    from datetime import datetime

    from tradingmem_assets.benchmark.reference import run_reference
    from tradingmem_assets.defs.resources import DUCKDB_MEMORY_LIMIT
    from tradingmem_assets.lib.registry import load_registry
    from tradingmem_assets.settings import SETTINGS

    reference = run_reference(
        landing_dir,
        database.with_name("bare_reference.duckdb"),
        datetime.fromisoformat(as_of),
        load_registry(SETTINGS.roles_file).rows(),
        memory_limit=DUCKDB_MEMORY_LIMIT,
    )
    return {"reference_s": reference["total_s"], "reference_load_s": reference["load_s"]}


def core_seconds(step_s: dict[str, float]) -> float:
    """The project's landing (trading tables) + evaluation + role_cases seconds."""
    from tradingmem_assets.benchmark.reference import TRADING_TABLES

    return sum(step_s.get(f"raw__{t}", 0.0) for t in TRADING_TABLES) + sum(
        step_s.get(s, 0.0) for s in CORE_STEPS
    )


def core_ratio(step_s: dict[str, float], bare: dict) -> dict:
    """The core's seconds and their ratio to the bare SQL."""
    core = core_seconds(step_s)
    return {"core_s": round(core, 3), "ratio": round(core / bare["reference_s"], 2)}
