"""Reflection (SPEC section 6): outcome labels, the classification ladder and role-specific lessons.

A matured, scoring-eligible case is classified once per primary run, first match wins:
flat -> ``variance``; an exogenous market event for the symbol inside the run's window ->
``exogenous``; a required evidence kind missing from the decision -> ``missing_data``; a loss ->
``logic_error``; otherwise ``sound``. Classification is always deterministic; only the lesson text
of the two trainable classes may come from a pluggable ``Reflector`` (the LLM one lives in
``core/llm.py``). Every computation here is a Polars expression over the whole batch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import duckdb
import polars as pl

from tradingmem_assets.core.recall import RECALL_INDEX, rebuild_recall_index
from tradingmem_assets.core.vocabulary import TRAINABLE_CLASSES
from tradingmem_assets.warehouse import append_rows, ensure_table, read_frame, table_exists, transaction

LESSON_MAX_CHARS = 280
DETERMINISTIC = "deterministic"
UTC_TS = pl.Datetime("us", "UTC")

REFLECTIONS_SCHEMA = pl.Schema(
    {
        "reflection_id": pl.String(),
        "case_id": pl.String(),
        "role_id": pl.String(),
        "run_id": pl.String(),
        "classification": pl.String(),
        "trainable": pl.Boolean(),
        "lesson": pl.String(),
        "reflector": pl.String(),
        "reflected_at": UTC_TS,
    }
)


def outcome_expr(excess: pl.Expr, band: pl.Expr) -> pl.Expr:
    """``win`` above the noise band, ``loss`` below minus the band, ``flat`` within (null without data)."""
    return (
        pl.when(excess.is_null() | band.is_null())
        .then(pl.lit(None, dtype=pl.String))
        .when(excess > band)
        .then(pl.lit("win"))
        .when(excess < -band)
        .then(pl.lit("loss"))
        .otherwise(pl.lit("flat"))
    )


def classification_expr() -> pl.Expr:
    """The ladder of SPEC section 6 over columns outcome, exogenous_event, missing_evidence."""
    return (
        pl.when(pl.col("outcome") == "flat")
        .then(pl.lit("variance"))
        .when(pl.col("exogenous_event"))
        .then(pl.lit("exogenous"))
        .when(pl.col("missing_evidence").list.len() > 0)
        .then(pl.lit("missing_data"))
        .when(pl.col("outcome") == "loss")
        .then(pl.lit("logic_error"))
        .otherwise(pl.lit("sound"))
    )


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
        """Given classified trainable rows, return case_id, lesson, reflector (one row per input row)."""
        ...


class DeterministicReflector:
    name = DETERMINISTIC

    def write_lessons(self, trainable: pl.DataFrame) -> pl.DataFrame:
        return trainable.select(
            "case_id", deterministic_lesson_expr().alias("lesson"), pl.lit(DETERMINISTIC).alias("reflector")
        )


# Inputs of the ladder for every eligible case with an outcome (optionally one case).
INPUTS_SQL = """
WITH pos AS (
    SELECT execution_id, max(closed_at) AS closed_at
    FROM raw.position_lifecycles WHERE closed_at <= $1 GROUP BY execution_id
),
base AS (
    SELECT rc.case_id, rc.decision_id, rc.role_id, rc.symbol, rc.scenario, rc.direction, rc.decision_text,
           rc.outcome, rc.primary_run_id AS run_id, rc.execution_id,
           e.executed_at AS window_start,
           e.executed_at + to_days(p.horizon_days::INTEGER) AS window_end,
           p.horizon_days, ex.value AS excess_return, vol.value AS volatility,
           ro.noise_k * vol.value * sqrt(p.horizon_days) AS noise_band,
           ro.maturity_days, pos.closed_at,
           pos.closed_at + to_days(ro.maturity_days::INTEGER) AS matures_at,
           ro.required_evidence, ro.failure_modes, ro.reflection_prompt,
           coalesce(list_transform(json_extract_string(d.evidence, '$[*]'), lambda x: lower(trim(x))),
                    []::VARCHAR[]) AS evidence
    FROM main.role_cases rc
    JOIN _tm_roles ro ON ro.role_id = rc.role_id
    JOIN main.evaluation_runs r ON r.run_id = rc.primary_run_id
    JOIN raw.trade_executions e ON e.execution_id = r.execution_id
    JOIN raw.benchmark_profiles p ON p.profile_id = r.profile_id
    JOIN raw.trading_decisions d ON d.decision_id = rc.decision_id
    LEFT JOIN main.evaluation_components ex ON ex.run_id = r.run_id AND ex.component = 'excess_return'
    LEFT JOIN main.evaluation_components vol ON vol.run_id = r.run_id AND vol.component = 'volatility'
    LEFT JOIN pos ON pos.execution_id = rc.execution_id
    WHERE rc.status = 'eligible' AND rc.outcome IS NOT NULL AND ($2::VARCHAR IS NULL OR rc.case_id = $2)
)
SELECT b.*,
       coalesce(b.matures_at <= $1, false) AS matured,
       list_filter(b.required_evidence, lambda k: NOT list_contains(b.evidence, lower(trim(k))))
           AS missing_evidence,
       EXISTS (
           SELECT 1 FROM raw.market_events m
           WHERE m.symbol = b.symbol AND m.exogenous AND m.ts >= b.window_start AND m.ts <= b.window_end
             AND m.ts <= $1
       ) AS exogenous_event
FROM base b
ORDER BY b.role_id, b.case_id
"""


def reflection_inputs(
    con: duckdb.DuckDBPyConnection, registry: pl.DataFrame, as_of: datetime, case_id: str | None = None
) -> pl.DataFrame:
    """Everything the ladder and a lesson need, for eligible cases with an outcome (matured or not)."""
    con.register("_tm_roles", registry)
    try:
        return read_frame(con, INPUTS_SQL, [as_of, case_id])
    finally:
        con.unregister("_tm_roles")


def classify(inputs: pl.DataFrame) -> pl.DataFrame:
    """Add ``classification`` and ``trainable`` to the rows of ``reflection_inputs``."""
    return inputs.with_columns(classification_expr().alias("classification")).with_columns(
        pl.col("classification").is_in(list(TRAINABLE_CLASSES)).alias("trainable")
    )


def reflection_id_for(case_id: str, run_id: str, reflected_at: datetime) -> str:
    return "rr_" + hashlib.sha256(f"{case_id}|{run_id}|{reflected_at.isoformat()}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ReflectionBatch:
    rows: pl.DataFrame  # REFLECTIONS_SCHEMA
    immature: int  # eligible cases with an outcome that have not matured yet
    already_reflected: int  # matured cases whose primary run was reflected before


def reflect(
    inputs: pl.DataFrame,
    existing: pl.DataFrame,
    as_of: datetime,
    reflector: Reflector,
    *,
    force: bool = False,
) -> ReflectionBatch:
    """Reflect matured cases not yet reflected for their primary run (``force``: reflect them anyway)."""
    matured = inputs.filter(pl.col("matured"))
    todo = matured
    if not force:
        todo = matured.join(
            existing.select("case_id", "run_id").unique(), on=["case_id", "run_id"], how="anti"
        )
    classified = classify(todo)
    trainable = classified.filter(pl.col("trainable"))
    lessons = (
        reflector.write_lessons(trainable)
        if trainable.height
        else pl.DataFrame(schema={"case_id": pl.String, "lesson": pl.String, "reflector": pl.String})
    )
    ts = pl.lit(as_of).cast(UTC_TS)
    out = classified.join(lessons, on="case_id", how="left").with_columns(
        pl.col("reflector").fill_null(DETERMINISTIC),
        truncate_lesson(pl.col("lesson")).alias("lesson"),
        ts.alias("reflected_at"),
    )
    ids = [reflection_id_for(c, r, as_of) for c, r in out.select("case_id", "run_id").rows()]
    rows = (
        out.with_columns(pl.Series("reflection_id", ids, dtype=pl.String))
        .select(REFLECTIONS_SCHEMA.names())
        .cast(REFLECTIONS_SCHEMA)  # type: ignore[arg-type]
        .sort("role_id", "case_id")
    )
    return ReflectionBatch(
        rows=rows, immature=inputs.height - matured.height, already_reflected=matured.height - todo.height
    )


# --- role statistics (SPEC section 7) ------------------------------------------------------------

ROLE_STATS_SCHEMA = pl.Schema(
    {
        "role_id": pl.String(),
        "declared": pl.Boolean(),
        "cases": pl.Int64(),
        "eligible": pl.Int64(),
        "pending": pl.Int64(),
        "ineligible": pl.Int64(),
        "quarantined": pl.Int64(),
        "reflected": pl.Int64(),
        "variance": pl.Int64(),
        "exogenous": pl.Int64(),
        "missing_data": pl.Int64(),
        "logic_error": pl.Int64(),
        "sound": pl.Int64(),
        "scored": pl.Int64(),
        "wins": pl.Int64(),
        "losses": pl.Int64(),
        "flats": pl.Int64(),
        "win_rate": pl.Float64(),
        "mean_excess_return": pl.Float64(),
    }
)

# Scores come only from the primary, complete evaluation run of scoring-eligible cases; nothing
# else (legacy scores, migrated_role_cases, non-primary versions) is ever read here.
ROLE_STATS_SQL = """
WITH latest AS (
    SELECT rr.case_id, rr.classification
    FROM main.role_reflections rr
    JOIN main.role_cases rc ON rc.case_id = rr.case_id AND rc.primary_run_id = rr.run_id
    WHERE rr.reflected_at <= $1 AND rc.scoring_eligible
    QUALIFY row_number() OVER (
        PARTITION BY rr.case_id ORDER BY rr.reflected_at DESC, rr.reflection_id DESC) = 1
),
scored AS (
    SELECT rc.case_id, rc.outcome, ex.value AS excess_return
    FROM main.role_cases rc
    JOIN main.evaluation_runs r ON r.run_id = rc.primary_run_id AND r.is_primary AND r.status = 'complete'
    JOIN main.evaluation_components ex ON ex.run_id = r.run_id AND ex.component = 'excess_return'
    WHERE rc.scoring_eligible AND ex.value IS NOT NULL AND rc.outcome IS NOT NULL
),
role_ids AS (
    SELECT role_id FROM _tm_roles UNION SELECT role_id FROM main.role_cases
)
SELECT ri.role_id,
       ri.role_id IN (SELECT role_id FROM _tm_roles) AS declared,
       count(rc.case_id) AS cases,
       count(rc.case_id) FILTER (WHERE rc.status = 'eligible') AS eligible,
       count(rc.case_id) FILTER (WHERE rc.status = 'pending') AS pending,
       count(rc.case_id) FILTER (WHERE rc.status = 'ineligible') AS ineligible,
       count(rc.case_id) FILTER (WHERE rc.status = 'quarantined') AS quarantined,
       count(l.case_id) AS reflected,
       count(l.case_id) FILTER (WHERE l.classification = 'variance') AS variance,
       count(l.case_id) FILTER (WHERE l.classification = 'exogenous') AS exogenous,
       count(l.case_id) FILTER (WHERE l.classification = 'missing_data') AS missing_data,
       count(l.case_id) FILTER (WHERE l.classification = 'logic_error') AS logic_error,
       count(l.case_id) FILTER (WHERE l.classification = 'sound') AS sound,
       count(s.case_id) AS scored,
       count(s.case_id) FILTER (WHERE s.outcome = 'win') AS wins,
       count(s.case_id) FILTER (WHERE s.outcome = 'loss') AS losses,
       count(s.case_id) FILTER (WHERE s.outcome = 'flat') AS flats,
       CASE WHEN count(s.case_id) > 0
            THEN count(s.case_id) FILTER (WHERE s.outcome = 'win') / count(s.case_id) END AS win_rate,
       avg(s.excess_return) AS mean_excess_return
FROM role_ids ri
LEFT JOIN main.role_cases rc ON rc.role_id = ri.role_id
LEFT JOIN latest l ON l.case_id = rc.case_id
LEFT JOIN scored s ON s.case_id = rc.case_id
GROUP BY ri.role_id
ORDER BY ri.role_id
"""


def role_stats(con: duckdb.DuckDBPyConnection, registry: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """Per role: case counts by status and by classification, win rate and mean excess return."""
    con.register("_tm_roles", registry.select("role_id"))
    try:
        frame = read_frame(con, ROLE_STATS_SQL, [as_of])
    finally:
        con.unregister("_tm_roles")
    return frame.cast(ROLE_STATS_SCHEMA)  # type: ignore[arg-type]


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
    if not table_exists(con, "main.role_cases"):
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
    if inputs.height == 0:
        raise ReflectionRefused(f"case {case_id} has no complete primary evaluation run to reflect on")
    if not inputs.get_column("matured")[0]:
        matures = inputs.get_column("matures_at")[0]
        raise ReflectionRefused(
            f"case {case_id} has not matured yet: it matures at {matures} (as_of {as_of})"
        )
    return reflect(inputs, pl.DataFrame(schema=REFLECTIONS_SCHEMA), as_of, reflector, force=True).rows


def record_reflections(con: duckdb.DuckDBPyConnection, rows: pl.DataFrame) -> int:
    """Append reflections whose id is not stored yet (a repeat at the same as_of records nothing).

    The recall index is rebuilt in the same transaction, so recall sees the new reflections at once.
    """
    with transaction(con):
        ensure_table(con, "main.role_reflections", pl.DataFrame(schema=REFLECTIONS_SCHEMA))
        con.register("_tm_new_reflections", rows)
        try:
            fresh = read_frame(
                con,
                "SELECT n.* FROM _tm_new_reflections n "
                "ANTI JOIN main.role_reflections r USING (reflection_id)",
            )
        finally:
            con.unregister("_tm_new_reflections")
        appended = append_rows(con, "main.role_reflections", fresh.select(REFLECTIONS_SCHEMA.names()))
        if appended or not table_exists(con, RECALL_INDEX):
            rebuild_recall_index(con)
        return appended
