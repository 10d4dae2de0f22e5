"""Reflection (SPEC section 6): outcome labels, the classification ladder and role-specific lessons.

A matured, scoring-eligible case is classified once per run that was its primary run at some
instant (``evaluation_primaries``), first match wins:
flat -> ``variance``; an exogenous market event for the symbol inside the run's window ->
``exogenous``; a required evidence kind missing from the decision -> ``missing_data``; a loss ->
``logic_error``; otherwise ``sound``. Classification is always deterministic; only the lesson text
of the two trainable classes may come from a pluggable ``Reflector`` (the LLM one lives in
``llm_reflector.py``). A reflection of (case, run) is knowable (``known_at``) at the later of the
position's close + maturity_days and the run's known_at, and is made only when the run was still
primary then: so a warehouse built late holds the reflections one built along the way made.
Classification runs in DuckDB over the whole batch (a temp table that spills
under the connection's ``memory_limit``); only the trainable rows come into Polars, for their lesson.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import duckdb
import polars as pl

from tradingmem_assets.defs.role_memory.reasons import chain_eligible_sql
from tradingmem_assets.defs.role_memory.recall import RECALL_INDEX, rebuild_recall_index
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.vocabulary import TRAINABLE_CLASSES
from tradingmem_assets.lib.warehouse import (
    ensure_table,
    read_frame,
    scalar,
    staged,
    table_exists,
    transaction,
)

LESSON_MAX_CHARS = 280
DETERMINISTIC = "deterministic"

ROLE_REFLECTIONS_DTYPES = table_dtypes(tables.ROLE_REFLECTIONS)


def outcome_sql(excess: str, band: str) -> str:
    """``win`` above the noise band, ``loss`` below minus the band, ``flat`` within (NULL without data)."""
    return (
        f"CASE WHEN {excess} IS NULL OR {band} IS NULL THEN NULL "
        f"WHEN {excess} > {band} THEN 'win' WHEN {excess} < -{band} THEN 'loss' ELSE 'flat' END"
    )


# The ladder of SPEC section 6 over columns outcome, exogenous_event, missing_evidence.
CLASSIFICATION_SQL = """
CASE WHEN outcome = 'flat' THEN 'variance'
     WHEN exogenous_event THEN 'exogenous'
     WHEN len(missing_evidence) > 0 THEN 'missing_data'
     WHEN outcome = 'loss' THEN 'logic_error'
     ELSE 'sound' END
"""
TRAINABLE_SQL = "classification IN (" + ", ".join(f"'{c}'" for c in TRAINABLE_CLASSES) + ")"


def classified(rows: str) -> str:
    """SQL: the rows of ``rows`` (a table, view or subquery) with ``classification`` and ``trainable``."""
    with_class = f"SELECT *, {CLASSIFICATION_SQL} AS classification FROM {rows}"
    return f"SELECT *, {TRAINABLE_SQL} AS trainable FROM ({with_class})"


def truncate_lesson(expr: pl.Expr, limit: int = LESSON_MAX_CHARS) -> pl.Expr:
    return (
        pl.when(expr.str.len_chars() > limit).then(expr.str.slice(0, limit - 1) + pl.lit("…")).otherwise(expr)
    )


def _pct(expr: pl.Expr) -> pl.Expr:
    return (expr * 100).round(1).cast(pl.String) + pl.lit("%")


def deterministic_lesson_expr() -> pl.Expr:
    """The offline lesson: names the role, the symbol, what was missing or wrong, and what to do next."""
    head = pl.format("[{}] {} {}", pl.col("role_id"), pl.col("symbol"), pl.col("direction"))
    missing = pl.col("missing_evidence").list.join(", ")
    no_modes = pl.col("failure_modes").is_null() | (pl.col("failure_modes").list.len() == 0)
    generic = pl.lit("the role's failure modes")
    modes = pl.when(no_modes).then(generic).otherwise(pl.col("failure_modes").list.join(" / "))
    first_mode = pl.when(no_modes).then(generic).otherwise(pl.col("failure_modes").list.first())
    missing_data = pl.format(
        "{}: decided without {}. Next time gather {} before entering; watch for {}.",
        head,
        missing,
        missing,
        first_mode,
    )
    logic_error = pl.format(
        "{} lost {} vs a {} noise band with the required evidence in hand. Next time test the thesis "
        "against {} before entering. {}",
        head,
        _pct(-pl.col("excess_return")),
        _pct(pl.col("noise_band")),
        modes,
        pl.col("reflection_prompt"),
    )
    text = (
        pl.when(pl.col("classification") == "missing_data")
        .then(missing_data)
        .when(pl.col("classification") == "logic_error")
        .then(logic_error)
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    return truncate_lesson(text)


class Reflector(Protocol):
    """Writes the lesson of trainable cases; classification is never delegated."""

    name: str

    def write_lessons(self, trainable: pl.DataFrame) -> pl.DataFrame:
        """Given classified trainable rows, return case_id, run_id, lesson, reflector (one row per input row)."""
        ...


class DeterministicReflector:
    name = DETERMINISTIC

    def write_lessons(self, trainable: pl.DataFrame) -> pl.DataFrame:
        return trainable.select(
            "case_id",
            "run_id",
            deterministic_lesson_expr().alias("lesson"),
            pl.lit(DETERMINISTIC).alias("reflector"),
        )


REFLECTION_INPUTS = "_tm_reflection_inputs"
REFLECTION_BATCH = "_tm_reflection_batch"

# ``_rf_pairs``: every (chain-eligible case, complete run that was its primary at some instant) not
# reflected yet, for its run (by any reflection, a manual re-run too). When none can have been
# (a first build, a manual re-run), with every column at once; otherwise their keys first, with
# whether each was reflected (counted for the metadata), then the wide rows of the others only: at
# a later day nearly every pair was (all but 4,968 of 772,000 at SF 10), and joining every pair's
# wide row took 1.2-1.5 s, against 0.7-0.9 s for the keys and the few wide rows.
_PAIRS_FROM = f"""
FROM main.role_cases rc
JOIN _tm_roles ro ON ro.role_id = rc.role_id
JOIN main.evaluation_primaries ep ON ep.decision_id = rc.decision_id
JOIN main.evaluation_runs r ON r.run_id = ep.run_id AND r.status = 'complete'
WHERE {chain_eligible_sql("rc")}
  AND ($case_id::VARCHAR IS NULL OR (rc.case_id = $case_id AND ep.primary_until IS NULL))"""
_PAIR_COLUMNS = """rc.case_id, rc.decision_id, rc.role_id, rc.symbol, rc.scenario, rc.direction,
       rc.decision_text, {ep}.run_id, {ep}.primary_from, {ep}.primary_until, rc.execution_id,
       r.known_at AS run_known_at, r.execution_id AS run_execution_id, r.profile_id, r.excess_return,
       r.volatility"""
ALL_PAIRS_SQL = f"""CREATE OR REPLACE TEMP TABLE _rf_pairs AS
SELECT {_PAIR_COLUMNS.format(ep="ep")}{_PAIRS_FROM};"""
NEW_PAIRS_SQL = f"""CREATE OR REPLACE TEMP TABLE _rf_keys AS
SELECT rc.case_id, ep.run_id, ep.primary_from, ep.primary_until,
       EXISTS (SELECT 1 FROM main.role_reflections rr WHERE rr.case_id = rc.case_id AND rr.run_id = ep.run_id)
           AS reflected{_PAIRS_FROM};

CREATE OR REPLACE TEMP TABLE _rf_pairs AS
SELECT {_PAIR_COLUMNS.format(ep="k")}
FROM _rf_keys k
JOIN main.role_cases rc ON rc.case_id = k.case_id
JOIN main.evaluation_runs r ON r.run_id = k.run_id
WHERE NOT k.reflected;"""


# Inputs of the ladder for every eligible case with an outcome not reflected yet for its run (or one
# case, reflected or not), classified, from ``_rf_pairs``.
# Exogenous events are few: each symbol's event times come as one list, tested against the window.
# The run's numbers are only needed for lessons: ``TRAINABLE_ROWS_SQL`` adds them to trainable rows.
# In stages (narrow temp tables DuckDB can spill): the (case, run) pairs with their run's two
# measured numbers first, then the wide rows; one query over all of it ran out of memory at SF 30.
INPUTS_SCRIPT = """
CREATE OR REPLACE TEMP TABLE _rf_pos AS
SELECT execution_id, max(closed_at) AS closed_at
FROM raw.position_lifecycles WHERE closed_at <= $as_of GROUP BY execution_id;

CREATE OR REPLACE TEMP TABLE _rf_events AS
SELECT symbol, list(ts) AS ts FROM raw.market_events WHERE exogenous AND ts <= $as_of GROUP BY symbol;

{pairs}

CREATE OR REPLACE TEMP TABLE {into} AS
WITH base AS (
    SELECT b.* EXCLUDE (run_execution_id, profile_id),
           e.executed_at AS window_start,
           e.executed_at + to_days(p.horizon_days::INTEGER) AS window_end,
           p.horizon_days, ro.noise_k, ro.maturity_days, pos.closed_at,
           pos.closed_at + to_days(ro.maturity_days::INTEGER) AS matures_at,
           ro.required_evidence, ro.failure_modes, ro.reflection_prompt,
           coalesce(list_transform(json_extract_string(d.evidence, '$[*]'), lambda x: lower(trim(x))),
                    []::VARCHAR[]) AS evidence,
           ev.ts AS event_times
    FROM _rf_pairs b
    JOIN _tm_roles ro ON ro.role_id = b.role_id
    JOIN raw.trade_executions e ON e.execution_id = b.run_execution_id
    JOIN raw.benchmark_profiles p ON p.profile_id = b.profile_id
    JOIN raw.trading_decisions d ON d.decision_id = b.decision_id
    LEFT JOIN _rf_pos pos ON pos.execution_id = b.execution_id
    LEFT JOIN _rf_events ev ON ev.symbol = b.symbol
),
inputs AS (
    SELECT b.* EXCLUDE (evidence, event_times),
           {outcome} AS outcome,
           greatest(b.matures_at, b.run_known_at) AS known_at,
           list_filter(b.required_evidence, lambda k: NOT list_contains(b.evidence, lower(trim(k))))
               AS missing_evidence,
           coalesce(len(list_filter(b.event_times, lambda t: t >= b.window_start AND t <= b.window_end)) > 0,
                    false) AS exogenous_event
    FROM base b
),
timed AS (  -- matured: knowable by now, while the run was still primary
    SELECT i.*,
           coalesce(i.known_at <= $as_of AND (i.primary_until IS NULL OR i.known_at < i.primary_until), false)
               AS matured
    FROM inputs i
    WHERE i.outcome IS NOT NULL
)
{classified};
"""


@dataclass(frozen=True)
class ReflectionInputs:
    table: str  # temp table: one row per pair to reflect, classified
    already_reflected: int  # eligible pairs left out because they were reflected before


def reflection_inputs(
    con: duckdb.DuckDBPyConnection,
    registry: pl.DataFrame,
    as_of: datetime,
    case_id: str | None = None,
    into: str = REFLECTION_INPUTS,
) -> ReflectionInputs:
    """Temp table ``into``: everything the ladder and a lesson need, per chain-eligible case and run
    that was its primary and has no reflection yet, with ``outcome``, ``known_at``, ``matured``,
    ``classification`` and ``trainable``. With ``case_id``: that case's current primary run,
    reflected before or not (a manual re-run)."""
    pending_only = case_id is None and table_exists(con, tables.ROLE_REFLECTIONS)
    script = INPUTS_SCRIPT.format(
        into=into,
        pairs=NEW_PAIRS_SQL if pending_only else ALL_PAIRS_SQL,
        classified=classified("timed"),
        outcome=outcome_sql("b.excess_return", "b.noise_k * b.volatility * sqrt(b.horizon_days)"),
    )
    con.register("_tm_roles", registry)
    try:
        with staged(con, script, {"as_of": as_of, "case_id": case_id}, keep=into):
            already = scalar(con, "SELECT count(*) FROM _rf_keys WHERE reflected") if pending_only else 0
    finally:
        con.unregister("_tm_roles")
    return ReflectionInputs(table=into, already_reflected=already)


@dataclass(frozen=True)
class ReflectionBatch:
    table: str  # temp table of the new reflections (ROLE_REFLECTIONS_DTYPES columns)
    immature: int  # eligible cases with an outcome that have not matured yet


# reflection_id: "rr_" + the first 16 hex digits of sha256("<case_id>|<run_id>"); a manual re-run
# (``force``) is a record of its own: sha256("<case_id>|<run_id>|<reflected_at ISO-8601>"), knowable
# from when it was made.
BATCH_SQL = """
CREATE OR REPLACE TEMP TABLE {into} AS
SELECT 'rr_' || left(sha256(i.case_id || '|' || i.run_id || CASE WHEN $3 THEN '|' || $2 ELSE '' END), 16)
           AS reflection_id,
       i.case_id, i.role_id, i.run_id, i.classification, i.trainable, i.outcome, l.lesson,
       coalesce(l.reflector, '{deterministic}') AS reflector, $1::TIMESTAMPTZ AS reflected_at,
       CASE WHEN $3 THEN greatest(i.known_at, $1::TIMESTAMPTZ) ELSE i.known_at END AS known_at
FROM {inputs} i
LEFT JOIN _tm_lessons l ON l.case_id = i.case_id AND l.run_id = i.run_id
WHERE i.matured
"""
_LESSONS_DTYPES = {"case_id": pl.String, "run_id": pl.String, "lesson": pl.String, "reflector": pl.String}

# The trainable rows of a batch with their run's numbers, as the reflector gets them.
TRAINABLE_ROWS_SQL = """
SELECT i.*, i.noise_k * i.volatility * sqrt(i.horizon_days) AS noise_band
FROM {inputs} i
WHERE i.matured AND i.trainable
ORDER BY i.role_id, i.case_id, i.run_id
"""


def reflect(
    con: duckdb.DuckDBPyConnection,
    inputs: ReflectionInputs,
    as_of: datetime,
    reflector: Reflector,
    *,
    force: bool = False,
    into: str = REFLECTION_BATCH,
) -> ReflectionBatch:
    """Reflect the matured cases of ``inputs`` (``force``: a manual re-run, a record of its own).

    Only the trainable rows come into Polars, for the reflector's lesson; the batch is temp table ``into``.
    """
    trainable = read_frame(con, TRAINABLE_ROWS_SQL.format(inputs=inputs.table))
    lessons = reflector.write_lessons(trainable) if trainable.height else pl.DataFrame(schema=_LESSONS_DTYPES)
    lessons = lessons.select(
        "case_id", "run_id", truncate_lesson(pl.col("lesson")).alias("lesson"), "reflector"
    )
    con.register("_tm_lessons", lessons)
    try:
        con.execute(
            BATCH_SQL.format(into=into, inputs=inputs.table, deterministic=DETERMINISTIC),
            [as_of, as_of.isoformat(), force],
        )
    finally:
        con.unregister("_tm_lessons")
    immature = scalar(con, f"SELECT count(*) FILTER (WHERE NOT matured) FROM {inputs.table}")
    return ReflectionBatch(table=into, immature=immature)


# --- manual reflection of one case (tradingmem reflect CASE_ID) ---------------------------------


class ReflectionRefused(ValueError):
    """The case cannot be reflected (unknown, not eligible, not matured); the message says why."""


def reflect_case(
    con: duckdb.DuckDBPyConnection,
    registry: pl.DataFrame,
    case_id: str,
    as_of: datetime,
    reflector: Reflector,
) -> pl.DataFrame:
    """Re-run the reflector for one eligible, matured case; the one-row batch is not written yet."""
    if not table_exists(con, tables.ROLE_CASES):
        raise ReflectionRefused("main.role_cases does not exist yet: materialize role_cases first")
    found = con.execute("SELECT status, reasons FROM main.role_cases WHERE case_id = ?", [case_id]).fetchall()
    if not found:
        raise ReflectionRefused(f"no role case {case_id!r}")
    status, reasons = found[0]
    if status != "eligible":
        raise ReflectionRefused(
            f"case {case_id} is {status} ({', '.join(reasons)}): only scoring-eligible cases are reflected"
        )
    inputs = reflection_inputs(con, registry, as_of, case_id)
    found = con.execute(f"SELECT matured, matures_at FROM {inputs.table}").fetchall()
    if not found:
        raise ReflectionRefused(f"case {case_id} has no complete primary evaluation run to reflect on")
    matured, matures = found[0]
    if not matured:
        raise ReflectionRefused(
            f"case {case_id} has not matured yet: it matures at {matures} (as_of {as_of})"
        )
    batch = reflect(con, inputs, as_of, reflector, force=True)
    return read_frame(con, f"SELECT * FROM {batch.table}").cast(ROLE_REFLECTIONS_DTYPES)  # type: ignore[arg-type]


def record_reflections(con: duckdb.DuckDBPyConnection, rows: pl.DataFrame | str) -> int:
    """Append reflections whose id is not stored yet (a repeat at the same as_of records nothing).

    ``rows``: a frame, or the name of a table such as ``ReflectionBatch.table`` (``ROLE_REFLECTIONS_DTYPES``
    columns). The recall index is rebuilt in the same transaction, so recall sees the new reflections
    at once.
    """
    source = rows if isinstance(rows, str) else "_tm_new_reflections"
    if not isinstance(rows, str):
        con.register(source, rows)
    columns = ROLE_REFLECTIONS_DTYPES.names()
    try:
        with transaction(con):
            ensure_table(con, tables.ROLE_REFLECTIONS, pl.DataFrame(schema=ROLE_REFLECTIONS_DTYPES))
            appended = con.execute(
                f"INSERT INTO main.role_reflections ({', '.join(columns)}) "
                f"SELECT {', '.join(f'n.{c}' for c in columns)} FROM {source} n "
                "ANTI JOIN main.role_reflections r ON r.reflection_id = n.reflection_id "
                "ORDER BY n.role_id, n.case_id, n.reflection_id"
            ).fetchall()[0][0]
            if appended or not table_exists(con, RECALL_INDEX):
                rebuild_recall_index(con)
    finally:
        if not isinstance(rows, str):
            con.unregister(source)
    return appended
