"""Memory efficacy as of any instant (SPEC sections 16 and 17): set-based DuckDB over the stored tables.

One query gathers every compared outcome as (subject, side, win, excess) and counts them per
subject; ``verdicts.with_verdicts`` adds the Wilson intervals and the verdict. Only what was known
at ``as_of`` counts, so a warehouse built later answers a read as of ``T`` exactly as one built at
``T`` did. The choices where SPEC is silent (also in docs/efficacy.md):

- lesson: a decision counts when its case's chain is eligible (SPEC section 5, whatever run is
  primary), every position of its execution is closed at ``as_of`` and the run primary at
  ``as_of`` (the ``evaluation_primaries`` interval containing it) is complete and known; its
  outcome is that run's, by the reflection rule (``reflection.outcome_sql``: excess return against
  noise_k x volatility x sqrt(horizon_days), noise_k from the role registry). The split instant is
  the ``known_at`` of the role's first reflection of the class known at ``as_of``; a role without
  such a lesson has every decision "before". Symbol rows use the role's split instant.
- methodology: its graduation at ``as_of`` is the latest ``graduated`` lifecycle event at or before
  it (what ``methodologies.graduated_at`` holds on a warehouse built then; a methodology demoted
  since still counts); its outcomes are the applied ``methodology_cases`` known at ``as_of``.
- injection: runs are scheduled runs; "after" = scored outcomes of runs the methodology was
  injected into, "before" = scored outcomes of scheduled runs of the methodology's asset class
  with no injection at all, started at or after the first run it was injected into started.
- mean excess return: lessons only (methodology and injection outcomes have no excess return).
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.defs.efficacy.verdicts import COUNT_COLUMNS, with_verdicts
from tradingmem_assets.defs.role_memory.reasons import chain_eligible_sql
from tradingmem_assets.defs.role_memory.reflection import outcome_sql
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.tables import raw_table
from tradingmem_assets.lib.vocabulary import SETTLED_POSITION_STATUSES, TRAINABLE_CLASSES
from tradingmem_assets.lib.warehouse import read_frame, table_exists

ROLES_VIEW = "_tm_efficacy_roles"


def _sql_list(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


# The stored tables the read needs (raw ones included), in the order a first run creates them.
INPUT_TABLES = (
    raw_table("trading_decisions"),
    raw_table("position_lifecycles"),
    raw_table("benchmark_profiles"),
    raw_table("institution_runs"),
    tables.EVALUATION_RUNS,
    tables.EVALUATION_PRIMARIES,
    tables.ROLE_CASES,
    tables.ROLE_REFLECTIONS,
    tables.INSTITUTION_REFLECTIONS,
    tables.METHODOLOGIES,
    tables.METHODOLOGY_LIFECYCLE_EVENTS,
    tables.METHODOLOGY_CASES,
    tables.METHODOLOGY_CASE_HINTS,
)

EFFICACY_SQL = f"""
WITH
-- lessons ------------------------------------------------------------------------------------
pos AS (  -- executions whose every position is closed at as_of
    SELECT execution_id
    FROM {raw_table("position_lifecycles")}
    WHERE opened_at <= $as_of
    GROUP BY execution_id
    HAVING bool_and(status IN ({_sql_list(SETTLED_POSITION_STATUSES)})
                    AND closed_at IS NOT NULL AND closed_at <= $as_of)
),
decided AS (  -- eligible decisions with the outcome of their primary complete run at as_of
    SELECT rc.role_id, rc.symbol, d.decided_at, r.excess_return AS excess,
           {outcome_sql("r.excess_return", "ro.noise_k * r.volatility * sqrt(p.horizon_days)")} AS outcome
    FROM {tables.ROLE_CASES} rc
    JOIN {ROLES_VIEW} ro ON ro.role_id = rc.role_id
    JOIN {raw_table("trading_decisions")} d ON d.decision_id = rc.decision_id AND d.decided_at <= $as_of
    JOIN pos ON pos.execution_id = rc.execution_id
    JOIN {tables.EVALUATION_PRIMARIES} ep ON ep.decision_id = rc.decision_id
         AND ep.primary_from <= $as_of AND (ep.primary_until IS NULL OR ep.primary_until > $as_of)
    JOIN {tables.EVALUATION_RUNS} r ON r.run_id = ep.run_id AND r.status = 'complete' AND r.known_at <= $as_of
    JOIN {raw_table("benchmark_profiles")} p ON p.profile_id = r.profile_id
    WHERE {chain_eligible_sql("rc")}
),
scored AS (SELECT * FROM decided WHERE outcome IS NOT NULL),
firsts AS (  -- the instant each role's first lesson of each trainable class became known
    SELECT role_id, classification AS subject_id, min(known_at) AS split_at
    FROM {tables.ROLE_REFLECTIONS}
    WHERE classification IN ({_sql_list(TRAINABLE_CLASSES)}) AND known_at <= $as_of
    GROUP BY ALL
),
lesson_subjects AS (  -- every role with a scored decision or a lesson, per trainable class
    SELECT r.role_id, c.subject_id, f.split_at
    FROM (SELECT role_id FROM scored UNION SELECT role_id FROM firsts) r
    CROSS JOIN (SELECT unnest([{_sql_list(TRAINABLE_CLASSES)}]) AS subject_id) c
    LEFT JOIN firsts f ON f.role_id = r.role_id AND f.subject_id = c.subject_id
),
lesson_sides AS (
    SELECT s.role_id, s.subject_id, d.symbol, d.outcome = 'win' AS win, d.excess,
           coalesce(d.decided_at >= s.split_at, false) AS after
    FROM lesson_subjects s LEFT JOIN scored d ON d.role_id = s.role_id
),
-- methodologies ------------------------------------------------------------------------------
graduations AS (
    SELECT e.methodology_id, max(e.ts) AS graduated_at
    FROM {tables.METHODOLOGY_LIFECYCLE_EVENTS} e
    JOIN {tables.METHODOLOGIES} m ON m.methodology_id = e.methodology_id AND m.known_at <= $as_of
    WHERE e.event = 'graduated' AND e.ts <= $as_of
    GROUP BY ALL
),
ladder AS (
    SELECT c.methodology_id, c.correct, ir.started_at
    FROM {tables.METHODOLOGY_CASES} c
    JOIN {tables.INSTITUTION_REFLECTIONS} ir ON ir.run_id = c.run_id AND ir."window" = c."window"
    WHERE c.applied AND c.known_at <= $as_of
),
methodology_sides AS (
    SELECT g.methodology_id, l.correct AS win, coalesce(l.started_at >= g.graduated_at, false) AS after
    FROM graduations g LEFT JOIN ladder l ON l.methodology_id = g.methodology_id
),
-- injections ---------------------------------------------------------------------------------
runs AS (
    SELECT run_id, started_at, asset_class
    FROM {raw_table("institution_runs")} WHERE started_at <= $as_of
),
injected AS (
    SELECT DISTINCT h.methodology_id, h.run_id
    FROM {tables.METHODOLOGY_CASE_HINTS} h JOIN runs USING (run_id)
    WHERE h.injected_at <= $as_of
),
outcomes AS (  -- the scored ladder outcomes of scheduled runs known at as_of
    SELECT ir.run_id, ir.correct, r.started_at, r.asset_class
    FROM {tables.INSTITUTION_REFLECTIONS} ir JOIN runs r USING (run_id)
    WHERE ir.kind = 'scheduled' AND ir.status = 'scored' AND ir.known_at <= $as_of
),
targets AS (  -- each injected methodology, its asset class and the start of its period
    SELECT m.methodology_id, m.asset_class, min(r.started_at) AS period_from
    FROM {tables.METHODOLOGIES} m JOIN injected i USING (methodology_id) JOIN runs r USING (run_id)
    WHERE m.known_at <= $as_of
    GROUP BY ALL
),
injection_outcomes AS (
    SELECT i.methodology_id, o.correct, true AS after
    FROM injected i JOIN outcomes o USING (run_id)
    UNION ALL
    SELECT t.methodology_id, o.correct, false AS after
    FROM targets t
    JOIN outcomes o ON o.asset_class = t.asset_class AND o.started_at >= t.period_from
    WHERE NOT EXISTS (SELECT 1 FROM injected i WHERE i.run_id = o.run_id)
),
injection_sides AS (
    SELECT t.methodology_id, t.asset_class, o.correct AS win, coalesce(o.after, false) AS after
    FROM targets t LEFT JOIN injection_outcomes o USING (methodology_id)
),
-- every compared outcome ---------------------------------------------------------------------
sides AS (
    SELECT 0 AS kind_order, 'lesson' AS subject_kind, subject_id, role_id, 'role' AS scope, after, win, excess
    FROM lesson_sides
    UNION ALL
    SELECT 0, 'lesson', subject_id, role_id, 'symbol:' || symbol, after, win, excess
    FROM lesson_sides WHERE symbol IS NOT NULL
    UNION ALL
    SELECT 1, 'methodology', methodology_id, NULL, 'methodology', after, win, NULL::DOUBLE
    FROM methodology_sides
    UNION ALL
    SELECT 2, 'injection', methodology_id, NULL, 'asset_class:' || coalesce(asset_class, 'unknown'), after,
           win, NULL::DOUBLE
    FROM injection_sides
)
SELECT subject_kind, subject_id, role_id, scope,
       count(win) FILTER (WHERE NOT after) AS before_n,
       count(win) FILTER (WHERE NOT after AND win) AS before_wins,
       count(win) FILTER (WHERE after) AS after_n,
       count(win) FILTER (WHERE after AND win) AS after_wins,
       -- exact decimal sums: a float sum would depend on the order threads add in
       avg(excess::DECIMAL(38, 18)) FILTER (WHERE NOT after AND win IS NOT NULL)::DOUBLE
           AS mean_excess_before,
       avg(excess::DECIMAL(38, 18)) FILTER (WHERE after AND win IS NOT NULL)::DOUBLE AS mean_excess_after,
       $as_of::TIMESTAMPTZ AS as_of
FROM sides
GROUP BY kind_order, subject_kind, subject_id, role_id, scope
HAVING scope NOT LIKE 'symbol:%' OR (before_n > 0 AND after_n > 0)
ORDER BY kind_order, role_id NULLS LAST, subject_id, scope = 'role' DESC, scope
"""


class EfficacyInputsMissing(LookupError):
    """A table the read needs is not materialized yet; the message names it."""


def missing_inputs(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [t for t in INPUT_TABLES if not table_exists(con, t)]


def efficacy_counts(con: duckdb.DuckDBPyConnection, registry: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """Per subject: outcomes and wins on each side, mean excess returns (``COUNT_COLUMNS``).

    ``registry``: the role registry frame (``admission.registry_frame``), for each role's noise_k.
    """
    missing = missing_inputs(con)
    if missing:
        raise EfficacyInputsMissing(
            f"{', '.join(missing)} not materialized yet: run trading_memory_job first"
        )
    con.register(ROLES_VIEW, registry.select("role_id", "noise_k"))
    try:
        frame = read_frame(con, EFFICACY_SQL, {"as_of": as_of})
    finally:
        con.unregister(ROLES_VIEW)
    return frame.select(COUNT_COLUMNS)


def memory_efficacy(con: duckdb.DuckDBPyConnection, registry: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """The ``memory_efficacy`` rows as of ``as_of`` (``verdicts.MEMORY_EFFICACY_DTYPES``), from the stored tables."""
    return with_verdicts(efficacy_counts(con, registry, as_of))


def stored_efficacy(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The table as the last materialization wrote it."""
    if not table_exists(con, tables.MEMORY_EFFICACY):
        raise EfficacyInputsMissing(
            f"{tables.MEMORY_EFFICACY} is not materialized yet: run trading_memory_job first"
        )
    return read_frame(con, f"SELECT * FROM {tables.MEMORY_EFFICACY}")


def efficacy_rows(
    con: duckdb.DuckDBPyConnection, *, role_id: str | None = None, subject_id: str | None = None
) -> list[dict]:
    """The stored efficacy rows of a lesson's role (its classes, all scopes) or of a methodology
    (``explain`` shows them beside the evidence); empty before memory_efficacy is materialized."""
    if not table_exists(con, tables.MEMORY_EFFICACY):
        return []
    where, params = ("role_id = ?", [role_id]) if role_id is not None else ("subject_id = ?", [subject_id])
    return read_frame(
        con,
        f"SELECT * FROM {tables.MEMORY_EFFICACY} WHERE {where} ORDER BY subject_kind, subject_id, scope",
        params,
    ).to_dicts()
