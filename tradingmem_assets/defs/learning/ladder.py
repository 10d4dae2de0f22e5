"""The reflection ladder (SPEC section 8): institution runs scored at 1/7/30 days feed methodologies.

- ``institution_reflections``: every run (any kind) at every window elapsed at ``as_of``:
  realized return of the run's symbol = last close at or before ``started_at + window`` / last close
  at or before ``started_at`` - 1. A window with no bar after ``started_at`` (or no bar before it) is
  ``no_price``; a run without exactly one valid portfolio_manager output is ``no_decision`` /
  ``multiple_decisions``; otherwise ``scored`` and ``correct`` = buy and return > +0.5 %, sell and
  return < -0.5 %, hold and |return| <= 0.5 %.
- ``methodology_cases``: for *scheduled* runs only, one case per (run, window, methodology cited by
  the run's valid outputs) with a verdict; ``recorded_at = started_at + window``. A case moves its
  methodology (``applied``) only if the methodology existed when the run started; citations of
  unknown ids stay visible for the audit's attribution check.
- Fold: applied cases in ``(recorded_at, case_id)`` order per methodology: times_used and
  times_correct are running counts, confidence the Wilson lower bound. Because times_used only
  grows, "graduated" after an outcome is exactly ``confidence >= threshold and times_used >=
  min_uses``, so the whole fold is set-based (window functions) and the ``graduated`` / ``demoted``
  events are the outcomes where that flag flips.
- ``methodology_case_hints``: every injection at or before ``as_of``, with whether the methodology
  was injectable (graduated) at ``injected_at``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.defs.learning.candidates import (
    INITIAL_CONFIDENCE,
    parse_candidates,
    resolve_candidates,
)
from tradingmem_assets.defs.learning.events import (
    all_events,
    case_hints,
    hashed_ids,
)
from tradingmem_assets.defs.learning.role_outputs import (
    read_outputs,
    read_proposals,
    run_citations,
    run_decisions,
    validate_outputs,
)
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.warehouse import read_frame
from tradingmem_assets.lib.wilson import wilson_lower_bounds

RETURN_BAND = 0.005

INSTITUTION_REFLECTIONS_DTYPES = table_dtypes(tables.INSTITUTION_REFLECTIONS)
METHODOLOGY_CASES_DTYPES = table_dtypes(tables.METHODOLOGY_CASES)
METHODOLOGIES_DTYPES = table_dtypes(tables.METHODOLOGIES)


# --------------------------------------------------------------------------------------- reflections


def reflect_runs(
    runs: pl.DataFrame,
    decisions: pl.DataFrame,
    bars: pl.DataFrame,
    windows: Sequence[int],
    as_of: datetime,
) -> pl.DataFrame:
    """One reflection per (run started at or before as_of, window elapsed at as_of).

    ``runs``: run_id, started_at, symbol, kind. ``decisions``: run_id, action, decision_problem.
    ``bars``: symbol, ts, close.
    """
    grid = (
        runs.filter(pl.col("started_at") <= as_of)
        .join(pl.DataFrame({"window": list(windows)}, schema={"window": pl.Int64}), how="cross")
        .with_columns((pl.col("started_at") + pl.duration(days=pl.col("window"))).alias("recorded_at"))
        .filter(pl.col("recorded_at") <= as_of)
    )
    px = bars.filter(pl.col("ts") <= as_of).select("symbol", "ts", "close").sort("symbol", "ts")

    def last_close(frame: pl.DataFrame, at: str, name: str) -> pl.DataFrame:
        """The symbol's last close known at column ``at``: as ``name``, with its bar's ``<name>_ts``."""
        closes = px.rename({"ts": f"{name}_ts", "close": name}).sort(f"{name}_ts")
        return frame.sort(at).join_asof(
            closes,
            left_on=at,
            right_on=f"{name}_ts",
            by="symbol",
            strategy="backward",
            check_sortedness=False,
        )

    both = last_close(last_close(grid, "started_at", "entry"), "recorded_at", "exit")
    both = both.join(decisions.select("run_id", "action", "decision_problem"), on="run_id", how="left")
    priced = (
        pl.col("entry").is_not_null()
        & pl.col("exit_ts").is_not_null()
        & (pl.col("exit_ts") > pl.col("started_at"))
    )
    ret = pl.when(priced).then(pl.col("exit") / pl.col("entry") - 1.0)
    status = (
        pl.when(~priced)
        .then(pl.lit("no_price"))
        .when(pl.col("decision_problem").is_not_null())
        .then(pl.col("decision_problem"))
        .when(pl.col("action").is_null())
        .then(pl.lit("no_decision"))
        .otherwise(pl.lit("scored"))
    )
    r = pl.col("realized_return")
    correct = (
        pl.when(pl.col("status") != "scored")
        .then(None)
        .when(pl.col("action") == "buy")
        .then(r > RETURN_BAND)
        .when(pl.col("action") == "sell")
        .then(r < -RETURN_BAND)
        .otherwise(r.abs() <= RETURN_BAND)
    )
    out = both.with_columns(ret.alias("realized_return"), status.alias("status"))
    out = out.with_columns(
        correct.alias("correct"),
        pl.when(pl.col("status") == "scored").then(pl.col("action")).alias("action"),
    )
    out = out.with_columns(pl.col("recorded_at").alias("known_at"))  # started_at + window
    return (
        out.select(INSTITUTION_REFLECTIONS_DTYPES.names())
        .cast(INSTITUTION_REFLECTIONS_DTYPES)
        .sort("recorded_at", "run_id", "window")  # in time order: a later day's come after
    )  # type: ignore[arg-type]


def build_cases(reflections: pl.DataFrame, citations: pl.DataFrame, base: pl.DataFrame) -> pl.DataFrame:
    """Cases of scheduled runs' verdicts for each cited methodology; ``applied`` if it existed then."""
    scored = reflections.filter((pl.col("kind") == "scheduled") & pl.col("correct").is_not_null())
    cases = scored.select("run_id", "window", "correct", "recorded_at", "started_at").join(
        citations, on="run_id", how="inner"
    )
    cases = cases.join(base.select("methodology_id", "created_at"), on="methodology_id", how="left")
    cases = cases.with_columns(
        (pl.col("created_at").is_not_null() & (pl.col("created_at") <= pl.col("started_at"))).alias("applied")
    )
    cases = hashed_ids(cases, "case_id", "mc_", ["run_id", "window", "methodology_id"]).with_columns(
        pl.col("recorded_at").alias("known_at")  # the run's started_at + window (SPEC section 16)
    )
    return (
        cases.select(METHODOLOGY_CASES_DTYPES.names())
        .cast(METHODOLOGY_CASES_DTYPES)
        .sort("recorded_at", "case_id")
    )  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------- fold


def fold_outcomes(cases: pl.DataFrame, *, threshold: float, min_uses: int) -> pl.DataFrame:
    """The state of each methodology after each applied outcome, and the transition it caused."""
    applied = cases.filter(pl.col("applied")).sort("methodology_id", "recorded_at", "case_id")
    timeline = applied.with_columns(
        pl.int_range(1, pl.len() + 1).over("methodology_id").cast(pl.Int64).alias("times_used"),
        pl.col("correct").cast(pl.Int64).cum_sum().over("methodology_id").alias("times_correct"),
    )
    conf = wilson_lower_bounds(
        timeline.get_column("times_correct").to_numpy(), timeline.get_column("times_used").to_numpy()
    )
    timeline = timeline.with_columns(pl.Series("confidence", conf, dtype=pl.Float64))
    timeline = timeline.with_columns(
        ((pl.col("confidence") >= threshold) & (pl.col("times_used") >= min_uses)).alias("graduated")
    )
    previous = pl.col("graduated").shift(1).over("methodology_id").fill_null(False)
    return timeline.with_columns(
        pl.when(pl.col("graduated") & ~previous)
        .then(pl.lit("graduated"))
        .when(~pl.col("graduated") & previous)
        .then(pl.lit("demoted"))
        .alias("transition")
    )


def outcome_events(timeline: pl.DataFrame) -> pl.DataFrame:
    """``outcome_recorded`` for every applied case, ``graduated`` / ``demoted`` where the state flips."""
    detail = pl.struct(
        "case_id", "run_id", "window", "correct", "times_used", "times_correct", "confidence"
    ).struct.json_encode()
    recorded = timeline.select(
        "case_id",
        "methodology_id",
        pl.lit("outcome_recorded").alias("event"),
        pl.col("recorded_at").alias("ts"),
        detail.alias("detail"),
    )
    flips = timeline.filter(pl.col("transition").is_not_null()).select(
        "case_id",
        "methodology_id",
        pl.col("transition").alias("event"),
        pl.col("recorded_at").alias("ts"),
        detail.alias("detail"),
    )
    return pl.concat([recorded, flips])


def apply_state(base: pl.DataFrame, timeline: pl.DataFrame) -> pl.DataFrame:
    """The ``methodologies`` table: proposal facts plus the state after the last applied outcome."""
    last = timeline.group_by("methodology_id").agg(
        pl.col("times_used").last(),
        pl.col("times_correct").last(),
        pl.col("confidence").last(),
        pl.col("graduated").last(),
        pl.col("recorded_at").last().alias("last_outcome_at"),
        pl.col("recorded_at").filter(pl.col("transition") == "graduated").max().alias("graduated_at"),
    )
    out = base.join(last, on="methodology_id", how="left").with_columns(
        pl.col("times_used").fill_null(0),
        pl.col("times_correct").fill_null(0),
        pl.col("confidence").fill_null(INITIAL_CONFIDENCE),
        pl.when(pl.col("graduated").fill_null(False)).then(0).otherwise(1).cast(pl.Int64).alias("quarantine"),
        pl.max_horizontal("last_proposed_at", "last_outcome_at", "created_at").alias("updated_at"),
        pl.col("created_at").alias("known_at"),  # its first accepted proposal's run started_at
    )
    return out.select(METHODOLOGIES_DTYPES.names()).cast(METHODOLOGIES_DTYPES).sort("methodology_id")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------- whole state


@dataclass(frozen=True)
class MethodologyState:
    """Everything the methodology loop writes, as a function of the landing data and ``as_of``."""

    methodologies: pl.DataFrame
    events: pl.DataFrame
    cases: pl.DataFrame
    hints: pl.DataFrame
    reflections: pl.DataFrame
    output_rejects: pl.DataFrame


def build_methodology_state(
    con: duckdb.DuckDBPyConnection,
    as_of: datetime,
    *,
    windows: Sequence[int],
    threshold: float,
    min_uses: int,
) -> MethodologyState:
    """Recompute the whole methodology state from ``raw.*`` (institution runs, outputs, injections, bars)."""
    valid, rejects = validate_outputs(read_outputs(con, as_of))
    runs = read_frame(
        con,
        "SELECT run_id, started_at, symbol, kind FROM raw.institution_runs WHERE started_at <= $1",
        [as_of],
    )
    bars = read_frame(con, "SELECT symbol, ts, close FROM raw.price_bars WHERE ts <= $1", [as_of])
    injections = read_frame(
        con,
        "SELECT injection_id, run_id, methodology_id, injected_at FROM raw.methodology_injections "
        "WHERE injected_at <= $1",
        [as_of],
    )
    proposals = (
        read_proposals(con, as_of)
        .join(
            rejects.select("output_id", pl.col("reason").alias("output_reason")), on="output_id", how="left"
        )
        .select(
            "output_id",
            "run_id",
            "started_at",
            pl.col("output_reason").is_null().alias("output_valid"),
            "output_reason",
            "proposed_methodology",
        )
    )
    resolved = resolve_candidates(parse_candidates(proposals))
    reflections = reflect_runs(runs, run_decisions(valid), bars, windows, as_of)
    cases = build_cases(reflections, run_citations(valid), resolved.base)
    timeline = fold_outcomes(cases, threshold=threshold, min_uses=min_uses)
    return MethodologyState(
        methodologies=apply_state(resolved.base, timeline),
        events=all_events(resolved.events, outcome_events(timeline)),
        cases=cases,
        hints=case_hints(injections, timeline, resolved.base, runs.get_column("run_id"), as_of),
        reflections=reflections,
        output_rejects=rejects,
    )
