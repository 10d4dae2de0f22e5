"""Reads of the methodology state as of any instant (SPEC section 16), over the stored tables.

A methodology exists at ``T`` when its first accepted proposal is known at ``T``; its counters,
confidence and graduation at ``T`` are those after the last outcome known at ``T`` (the fold's
order: ``ts``, then the outcome's case id), read back from ``methodology_lifecycle_events``, so a
warehouse built later answers exactly what one built at ``T`` answered.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.defs.learning.candidates import INITIAL_CONFIDENCE
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import read_frame, table_exists

METHODOLOGIES_AS_OF_SQL = f"""
WITH events AS (
    SELECT methodology_id, event, ts, detail, json_extract_string(detail, '$.case_id') AS case_id
    FROM {tables.METHODOLOGY_LIFECYCLE_EVENTS}
    WHERE ts <= $as_of AND methodology_id IS NOT NULL
),
outcome AS (
    SELECT methodology_id, arg_max(detail, (ts, case_id)) AS detail
    FROM events WHERE event = 'outcome_recorded' GROUP BY methodology_id
),
flip AS (
    SELECT methodology_id, arg_max(event, (ts, case_id)) AS last_flip,
           max(ts) FILTER (WHERE event = 'graduated') AS graduated_at
    FROM events WHERE event IN ('graduated', 'demoted') GROUP BY methodology_id
),
proposed AS (
    SELECT methodology_id, count(*) AS times_proposed
    FROM events WHERE event IN ('created', 'merged') GROUP BY methodology_id
)
SELECT m.methodology_id, m.name, m.direction, m.primary_signal, m.timeframe, m.asset_class,
       coalesce(p.times_proposed, 0) AS times_proposed,
       coalesce(json_extract(o.detail, '$.times_used')::BIGINT, 0) AS times_used,
       coalesce(json_extract(o.detail, '$.times_correct')::BIGINT, 0) AS times_correct,
       coalesce(json_extract(o.detail, '$.confidence')::DOUBLE, $initial) AS confidence,
       CASE WHEN f.last_flip = 'graduated' THEN 0 ELSE 1 END AS quarantine,
       CASE WHEN f.last_flip = 'graduated' THEN f.graduated_at END AS graduated_at,
       m.known_at
FROM {tables.METHODOLOGIES} m
LEFT JOIN outcome o USING (methodology_id)
LEFT JOIN flip f USING (methodology_id)
LEFT JOIN proposed p USING (methodology_id)
WHERE m.known_at <= $as_of AND (NOT $injectable OR f.last_flip = 'graduated')
ORDER BY confidence DESC, times_used DESC, m.methodology_id
"""


def methodologies_as_of(
    con: duckdb.DuckDBPyConnection, as_of: datetime, *, injectable: bool = False
) -> pl.DataFrame:
    """The methodologies known at ``as_of`` with their state then; ``injectable``: graduated ones only."""
    if not (
        table_exists(con, tables.METHODOLOGIES) and table_exists(con, tables.METHODOLOGY_LIFECYCLE_EVENTS)
    ):
        raise LookupError("methodologies are not materialized yet: run trading_memory_job first")
    return read_frame(
        con,
        METHODOLOGIES_AS_OF_SQL,
        {"as_of": as_of, "injectable": injectable, "initial": INITIAL_CONFIDENCE},
    )
