"""Role statistics (SPEC section 7): per role, case counts by status and classification, win rate
and mean excess return from primary, complete runs only (legacy scores never count)."""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.warehouse import read_frame

ROLE_STATS_DTYPES = table_dtypes(tables.ROLE_STATS)

# Scores come only from the primary, complete evaluation run of scoring-eligible cases; nothing
# else (legacy scores, migrated_role_cases, non-primary versions) is ever read here.
ROLE_STATS_SQL = """
WITH latest AS (  -- the newest reflection (at as_of) of each scoring-eligible case's current primary run
    SELECT rc.role_id, arg_max(rr.classification, (rr.known_at, rr.reflection_id)) AS classification
    FROM main.role_reflections rr
    JOIN main.role_cases rc ON rc.case_id = rr.case_id AND rc.primary_run_id = rr.run_id
    WHERE rr.known_at <= $1 AND rc.scoring_eligible
    GROUP BY rr.case_id, rc.role_id
),
cases AS (
    SELECT role_id,
           count(case_id) AS cases,
           count(case_id) FILTER (WHERE status = 'eligible') AS eligible,
           count(case_id) FILTER (WHERE status = 'pending') AS pending,
           count(case_id) FILTER (WHERE status = 'ineligible') AS ineligible,
           count(case_id) FILTER (WHERE status = 'quarantined') AS quarantined
    FROM main.role_cases GROUP BY role_id
),
reflected AS (
    SELECT role_id,
           count(*) AS reflected,
           count(*) FILTER (WHERE classification = 'variance') AS variance,
           count(*) FILTER (WHERE classification = 'exogenous') AS exogenous,
           count(*) FILTER (WHERE classification = 'missing_data') AS missing_data,
           count(*) FILTER (WHERE classification = 'logic_error') AS logic_error,
           count(*) FILTER (WHERE classification = 'sound') AS sound
    FROM latest GROUP BY role_id
),
scored AS (
    SELECT rc.role_id,
           count(*) AS scored,
           count(*) FILTER (WHERE rc.outcome = 'win') AS wins,
           count(*) FILTER (WHERE rc.outcome = 'loss') AS losses,
           count(*) FILTER (WHERE rc.outcome = 'flat') AS flats,
           -- summed in a fixed order (the stored order of the cases): the same mean run after run
           avg(r.excess_return ORDER BY rc.symbol, rc.case_id) AS mean_excess_return
    FROM main.role_cases rc
    JOIN main.evaluation_runs r ON r.run_id = rc.primary_run_id AND r.is_primary AND r.status = 'complete'
    WHERE rc.scoring_eligible AND r.excess_return IS NOT NULL AND rc.outcome IS NOT NULL
    GROUP BY rc.role_id
),
role_ids AS (
    SELECT role_id FROM _tm_roles UNION SELECT role_id FROM main.role_cases
)
SELECT ri.role_id,
       ri.role_id IN (SELECT role_id FROM _tm_roles) AS declared,
       coalesce(c.cases, 0) AS cases,
       coalesce(c.eligible, 0) AS eligible,
       coalesce(c.pending, 0) AS pending,
       coalesce(c.ineligible, 0) AS ineligible,
       coalesce(c.quarantined, 0) AS quarantined,
       coalesce(l.reflected, 0) AS reflected,
       coalesce(l.variance, 0) AS variance,
       coalesce(l.exogenous, 0) AS exogenous,
       coalesce(l.missing_data, 0) AS missing_data,
       coalesce(l.logic_error, 0) AS logic_error,
       coalesce(l.sound, 0) AS sound,
       coalesce(s.scored, 0) AS scored,
       coalesce(s.wins, 0) AS wins,
       coalesce(s.losses, 0) AS losses,
       coalesce(s.flats, 0) AS flats,
       CASE WHEN s.scored > 0 THEN s.wins / s.scored END AS win_rate,
       s.mean_excess_return
FROM role_ids ri
LEFT JOIN cases c ON c.role_id = ri.role_id
LEFT JOIN reflected l ON l.role_id = ri.role_id
LEFT JOIN scored s ON s.role_id = ri.role_id
ORDER BY ri.role_id
"""


def role_stats(con: duckdb.DuckDBPyConnection, registry: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """Per role: case counts by status and by classification, win rate and mean excess return."""
    con.register("_tm_roles", registry.select("role_id"))
    try:
        frame = read_frame(con, ROLE_STATS_SQL, [as_of])
    finally:
        con.unregister("_tm_roles")
    return frame.cast(ROLE_STATS_DTYPES)  # type: ignore[arg-type]
