"""Learning tables for audit tests, written straight into a temp DuckDB with the SPEC section 8 columns.

The audit must not depend on the learning engineers' code, so these builders create the four
learning tables, the heartbeats and raw.institution_runs directly. ``healthy_learning_state``
is a small world whose every dimension is scored and whose expected scores are computed by hand
in ``EXPECTED``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl

AS_OF = datetime(2024, 7, 1, tzinfo=UTC)
TS = pl.Datetime("us", "UTC")

METHODOLOGY_SCHEMA = {
    "methodology_id": pl.String,
    "name": pl.String,
    "description": pl.String,
    "direction": pl.String,
    "primary_signal": pl.String,
    "timeframe": pl.String,
    "indicators": pl.String,
    "asset_class": pl.String,
    "phases": pl.String,
    "dedup_key": pl.String,
    "quarantine": pl.Int64,
    "confidence": pl.Float64,
    "times_used": pl.Int64,
    "times_correct": pl.Int64,
    "times_proposed": pl.Int64,
    "created_at": TS,
    "graduated_at": TS,
    "updated_at": TS,
}
EVENT_SCHEMA = {
    "event_id": pl.String,
    "methodology_id": pl.String,
    "event": pl.String,
    "ts": TS,
    "detail": pl.String,
}
CASE_SCHEMA = {
    "case_id": pl.String,
    "methodology_id": pl.String,
    "run_id": pl.String,
    "window": pl.Int64,
    "correct": pl.Boolean,
    "recorded_at": TS,
}
HINT_SCHEMA = {
    "methodology_id": pl.String,
    "run_id": pl.String,
    "injection_id": pl.String,
    "injected_at": TS,
    "injectable_at_injection": pl.Boolean,
}
HEARTBEAT_SCHEMA = {
    "run_id": pl.String,
    "job_name": pl.String,
    "status": pl.String,
    "ts": TS,
    "detail": pl.String,
}
RUNS_SCHEMA = {
    "run_id": pl.String,
    "started_at": TS,
    "symbol": pl.String,
    "asset_class": pl.String,
    "kind": pl.String,
}


def days_ago(n: float) -> datetime:
    return AS_OF - timedelta(days=n)


def methodology(mid: str, *, quarantine: int, graduated: datetime | None, created: datetime) -> dict:
    return {
        "methodology_id": mid,
        "name": f"method {mid}",
        "description": f"buy breakouts {mid}",
        "direction": "long",
        "primary_signal": "breakout",
        "timeframe": "1d",
        "indicators": '["sma"]',
        "asset_class": "equity",
        "phases": "[]",
        "dedup_key": mid.ljust(64, "0"),
        "quarantine": quarantine,
        "confidence": 0.6,
        "times_used": 6,
        "times_correct": 4,
        "times_proposed": 1,
        "created_at": created,
        "graduated_at": graduated,
        "updated_at": created,
    }


def healthy_learning_state() -> dict[str, list[dict]]:
    """Four methodologies; every dimension scored (see EXPECTED)."""
    ms = [
        methodology("m_a", quarantine=0, graduated=days_ago(20), created=days_ago(25)),
        methodology("m_b", quarantine=0, graduated=days_ago(20), created=days_ago(25)),
        methodology("m_c", quarantine=1, graduated=days_ago(20), created=days_ago(25)),
        methodology("m_d", quarantine=1, graduated=None, created=days_ago(25)),
    ]
    events = [(m, "created", 25) for m in ("m_a", "m_b", "m_c", "m_d")]
    events += [("m_a", "merged", 24), ("m_b", "merged", 24), (None, "rejected_injection", 23)]
    events += [(None, "rejected_invalid", 22)]
    events += [(m, "graduated", 20) for m in ("m_a", "m_b", "m_c")] + [("m_c", "demoted", 5)]
    event_rows = [
        {"event_id": f"e{i}", "methodology_id": m, "event": e, "ts": days_ago(d), "detail": "{}"}
        for i, (m, e, d) in enumerate(events)
    ]
    correct = {"m_a": 6, "m_b": 4, "m_c": 2}
    cases = [
        {
            "case_id": f"{m}_{j}",
            "methodology_id": m,
            "run_id": f"r{j}",
            "window": 1,
            "correct": j < correct[m],
            "recorded_at": days_ago(15 - j),
        }
        for m in ("m_a", "m_b", "m_c")
        for j in range(6)
    ]
    hints = [
        {
            "methodology_id": "m_a",
            "run_id": "r1",
            "injection_id": "i1",
            "injected_at": days_ago(10),
            "injectable_at_injection": True,
        },
        {
            "methodology_id": "m_b",
            "run_id": "r2",
            "injection_id": "i2",
            "injected_at": days_ago(9),
            "injectable_at_injection": True,
        },
    ]
    heartbeats = [
        {
            "run_id": f"hb{i}",
            "job_name": "trading_memory_job",
            "status": "ok",
            "ts": days_ago(i) + timedelta(hours=-1),
            "detail": "{}",
        }
        for i in range(30)
    ]
    runs = [
        {
            "run_id": f"r{j}",
            "started_at": days_ago(16 - j),
            "symbol": "BTC",
            "asset_class": "crypto_major",
            "kind": "scheduled",
        }
        for j in range(6)
    ]
    return {
        "main.methodologies": ms,
        "main.methodology_lifecycle_events": event_rows,
        "main.methodology_cases": cases,
        "main.methodology_case_hints": hints,
        "main.methodology_cron_runs": heartbeats,
        "raw.institution_runs": runs,
    }


EXPECTED = {
    "synthesis_quality": 75.0,  # 6 valid of 8 candidates
    "graduation_fp_rate": 100 * (1 - 1 / 3),  # m_c: 2/6 correct after graduation
    "attribution_integrity": 100.0,
    "coverage_health": 75.0,  # m_d has no outcome
    "quarantine_churn": 100 * (1 - 1 / 3),  # m_c graduated and was demoted
    "cron_health": 100.0,
}
EXPECTED_COMPOSITE = (
    0.22 * 75
    + 0.22 * EXPECTED["graduation_fp_rate"]
    + 0.22 * 100
    + 0.14 * 75
    + 0.08 * EXPECTED["quarantine_churn"]
    + 0.12 * 100
)

SCHEMAS = {
    "main.methodologies": METHODOLOGY_SCHEMA,
    "main.methodology_lifecycle_events": EVENT_SCHEMA,
    "main.methodology_cases": CASE_SCHEMA,
    "main.methodology_case_hints": HINT_SCHEMA,
    "main.methodology_cron_runs": HEARTBEAT_SCHEMA,
    "raw.institution_runs": RUNS_SCHEMA,
}


def write_learning_state(db: Path | str, state: dict[str, list[dict]]) -> None:
    """Create (replace) each table of ``state`` in the DuckDB file with the SPEC columns."""
    con = duckdb.connect(str(db))
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE SCHEMA IF NOT EXISTS raw")
        for table, rows in state.items():
            schema = SCHEMAS[table]
            frame = pl.DataFrame({c: [r.get(c) for r in rows] for c in schema}, schema=schema)
            con.register("_rows", frame)
            con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM _rows")
            con.unregister("_rows")
    finally:
        con.close()
