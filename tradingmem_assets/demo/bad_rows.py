"""Deliberately invalid rows appended to some landing files, so landing validation has work to do.

Bad rows: BAD_ROWS (table -> descriptions) lists the deliberately invalid rows appended at the end
of some files; demo_bad_row_counts() gives their counts (independent of scale). A duplicate-key
bad row always comes after the good row it duplicates.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import polars as pl

from tradingmem_assets.demo.tables import TABLE_COLUMNS

BAD_ROWS: dict[str, list[str]] = {
    "trading_decisions": [
        "duplicate key: a second row with decision_id d_0000001 and different text",
        "null decision_id",
        "direction 'sideways' outside long/short",
    ],
    "trade_fills": [
        "negative qty (-5.0) on an existing execution",
        "duplicate key: a second row with fill_id f_00000001",
    ],
    "price_bars": [
        "duplicate key: a second MKTIDX bar at 2004-01-01T21:00Z with a different close",
        "null symbol",
    ],
    "benchmark_profiles": ["min_coverage 1.5 outside 0-1 (profile abs_14d)"],
    "agent_turns": ["null turn_id", "duplicate key: a second row with turn_id t_0000001"],
    "institution_runs": ["kind 'adhoc' outside scheduled/lazy/manual", "null run_id"],
    "customers": [
        "unparseable opened_at 'not-a-date'",
        "duplicate key: a second row with customer_id c_000001",
    ],
    "questionnaire_results": [
        "investor_type 'C9' outside C1-C5",
        "unparseable assessed_at '2024-02-30T10:00:00Z'",
    ],
    "customer_transactions": [
        "product_risk_level 'R7' outside R1-R5",
        "side 'hold' outside buy/sell",
    ],
    "memory_unit": ["confidence 2.0 outside 0-1"],
    "kb_documents": ["visibility 'secret' outside public/internal"],
    "legacy_role_memory": ["unparseable created_at '2021-13-45T25:61:00Z'"],
}


def demo_bad_row_counts() -> dict[str, int]:
    """How many deliberately bad rows each landing table gets (the same at every scale)."""
    return {table: len(BAD_ROWS.get(table, [])) for table in TABLE_COLUMNS}


def _bad_rows(table: str, good: pl.DataFrame) -> list[dict[str, Any]]:
    """The rows BAD_ROWS describes, in order; each copies a good row so only the named defect differs."""

    def first(**over: Any) -> dict[str, Any]:
        return {**good.row(0, named=True), **over}

    rows: dict[str, Callable[[], list[dict[str, Any]]]] = {
        "trading_decisions": lambda: [
            first(decision_text="Duplicate of the first decision with other words."),
            first(decision_id=None, preview_id=None),
            first(decision_id="d_bad_0001", direction="sideways", preview_id=None),
        ],
        "trade_fills": lambda: [first(fill_id="f_bad_0001", qty=-5.0), first(price=1.0)],
        "price_bars": lambda: [
            first(symbol="MKTIDX", ts=datetime(2004, 1, 1, 21, tzinfo=UTC), close=1.0),
            first(symbol=None),
        ],
        "benchmark_profiles": lambda: [
            {"profile_id": "abs_14d", "horizon_days": 14, "benchmark_symbol": None, "min_coverage": 1.5}
        ],
        "agent_turns": lambda: [first(turn_id=None), first(user_message="duplicate turn")],
        "institution_runs": lambda: [first(run_id="ir_bad_0001", kind="adhoc"), first(run_id=None)],
        "customers": lambda: [
            first(customer_id="c_bad_01", opened_at="not-a-date"),
            first(real_name="Duplicate Person"),
        ],
        "questionnaire_results": lambda: [
            first(assessment_id="qa_bad_01", investor_type="C9"),
            first(assessment_id="qa_bad_02", assessed_at="2024-02-30T10:00:00Z"),
        ],
        "customer_transactions": lambda: [
            first(txn_id="tx_bad_01", product_risk_level="R7"),
            first(txn_id="tx_bad_02", side="hold"),
        ],
        "memory_unit": lambda: [first(unit_id="mu_bad_01", customer_id="c_000003", confidence=2.0)],
        "kb_documents": lambda: [
            {
                "doc_id": "kb_bad_01",
                "title": "Board minutes",
                "visibility": "secret",
                "body": "Not for anyone.",
            }
        ],
        "legacy_role_memory": lambda: [first(legacy_id="lg_bad_01", created_at="2021-13-45T25:61:00Z")],
    }
    made = rows[table]() if table in rows else []
    if len(made) != len(BAD_ROWS.get(table, [])):
        raise AssertionError(f"bad rows of {table} out of step with BAD_ROWS")
    return made


def _bad_frame(good: pl.DataFrame, rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame([{c: r.get(c) for c in good.columns} for r in rows], schema=good.schema, orient="row")
