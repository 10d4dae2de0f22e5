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


def _rows(con: duckdb.DuckDBPyConnection, table: str, sql: str, params: list) -> list[dict]:
    return read_frame(con, sql, params).to_dicts() if table_exists(con, table) else []


def methodology_evidence(con: duckdb.DuckDBPyConnection, methodology_id: str) -> dict | None:
    """One methodology and the chain behind it: lifecycle events, outcomes, the institution runs and
    reflections they came from, and its injections (None: no such methodology)."""
    found = _rows(
        con,
        tables.METHODOLOGIES,
        f"SELECT * FROM {tables.METHODOLOGIES} WHERE methodology_id = ?",
        [methodology_id],
    )
    if not found:
        return None
    cases = _rows(
        con,
        tables.METHODOLOGY_CASES,
        f"SELECT * FROM {tables.METHODOLOGY_CASES} WHERE methodology_id = ? ORDER BY recorded_at",
        [methodology_id],
    )
    run_ids = sorted({c["run_id"] for c in cases})
    institution_runs = tables.raw_table("institution_runs")
    return {
        "methodology": found[0],
        "lifecycle_events": _rows(
            con,
            tables.METHODOLOGY_LIFECYCLE_EVENTS,
            f"SELECT * FROM {tables.METHODOLOGY_LIFECYCLE_EVENTS} WHERE methodology_id = ? "
            "ORDER BY ts, event_id",
            [methodology_id],
        ),
        "outcomes": cases,
        "institution_reflections": _rows(
            con,
            tables.INSTITUTION_REFLECTIONS,
            f"SELECT * FROM {tables.INSTITUTION_REFLECTIONS} WHERE list_contains(?, run_id) "
            'ORDER BY run_id, "window"',
            [run_ids],
        ),
        "institution_runs": _rows(
            con,
            institution_runs,
            f"SELECT * FROM {institution_runs} WHERE list_contains(?, run_id) ORDER BY started_at",
            [run_ids],
        ),
        "injections": _rows(
            con,
            tables.METHODOLOGY_CASE_HINTS,
            f"SELECT * FROM {tables.METHODOLOGY_CASE_HINTS} WHERE methodology_id = ?",
            [methodology_id],
        ),
    }


def learning_evidence(con: duckdb.DuckDBPyConnection, learning_id: str) -> dict | None:
    """One learning and the feedback on it, oldest first (None: no such learning)."""
    found = _rows(
        con, tables.LEARNINGS, f"SELECT * FROM {tables.LEARNINGS} WHERE learning_id = ?", [learning_id]
    )
    if not found:
        return None
    feedback = tables.raw_table("learning_feedback")
    return {
        "learning": found[0],
        "feedback": _rows(
            con, feedback, f"SELECT * FROM {feedback} WHERE learning_id = ? ORDER BY ts", [learning_id]
        ),
    }
