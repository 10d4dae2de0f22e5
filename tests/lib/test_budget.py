"""The LLM budget tracker: hard caps refuse before the call, soft threshold warns, spend survives restarts."""

import json
import logging
from datetime import UTC, datetime

import duckdb
import pytest

from tradingmem_assets.lib.budget import (
    DEFAULT_LIMITS,
    BudgetExceededError,
    BudgetTracker,
    CategoryLimits,
    Usage,
    budget_summary,
    limits_from_env,
)

NOW = datetime(2024, 5, 20, 12, 0, tzinfo=UTC)
LIMITS = {c: CategoryLimits(daily_usd=1.0, monthly_usd=3.0, soft_usd=0.5) for c in DEFAULT_LIMITS}


def tracker(path, now=NOW, limits=LIMITS) -> tuple[duckdb.DuckDBPyConnection, BudgetTracker]:
    con = duckdb.connect(str(path))
    return con, BudgetTracker(con, limits=limits, clock=lambda: now)


def test_call_over_the_daily_hard_cap_is_refused_before_it_is_made(tmp_path):
    con, t = tracker(tmp_path / "w.duckdb")
    t.record("reflection", "earlier", "m", Usage(100, 10, 0.9))
    made = []
    with pytest.raises(BudgetExceededError) as err:
        t.call("reflection", "next", "m", 0.2, lambda: made.append(1) or ("x", Usage(1, 1, 0.2)))
    assert made == []
    assert err.value.window == "daily" and "reflection" in str(err.value)
    assert con.execute("SELECT count(*) FROM llm_usage").fetchall()[0][0] == 1


def test_monthly_cap_counts_earlier_days_of_the_same_month_only(tmp_path):
    con, _ = tracker(tmp_path / "w.duckdb")
    for day in (
        datetime(2024, 4, 30, tzinfo=UTC),
        datetime(2024, 5, 2, tzinfo=UTC),
        datetime(2024, 5, 10, tzinfo=UTC),
        datetime(2024, 5, 19, tzinfo=UTC),
    ):
        BudgetTracker(con, limits=LIMITS, clock=lambda d=day: d).record(
            "review", "earlier", "m", Usage(1, 1, 0.95)
        )
    t = BudgetTracker(con, limits=LIMITS, clock=lambda: NOW)
    assert t.check("review", 0.1).spent_month_usd == pytest.approx(2.85)  # April does not count
    with pytest.raises(BudgetExceededError) as err:
        t.check("review", 0.2)  # today's spend is 0, so only the month can refuse
    assert err.value.window == "monthly"


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_soft_threshold_warns_with_a_structured_record_and_the_call_proceeds(tmp_path):
    con, t = tracker(tmp_path / "w.duckdb")
    t.record("synthesis", "a", "m", Usage(1, 1, 0.45))
    handler = _Records()
    logger = logging.getLogger("tradingmem.budget")
    logger.addHandler(handler)
    try:
        result = t.call("synthesis", "b", "m", 0.1, lambda: ("ok", Usage(10, 5, 0.08)))
    finally:
        logger.removeHandler(handler)
    assert result == "ok"
    event = json.loads(handler.records[-1].getMessage())
    assert event["event"] == "llm_budget_soft_threshold" and event["category"] == "synthesis"
    assert t.warnings == [event]
    rows = con.execute(
        "SELECT task, input_tokens, output_tokens, cost_usd FROM llm_usage ORDER BY ts, task"
    ).fetchall()
    assert ("b", 10, 5, 0.08) in rows


def test_spend_survives_a_restart_with_a_new_tracker_over_the_same_file(tmp_path):
    path = tmp_path / "w.duckdb"
    con, t = tracker(path)
    t.call("institution", "run1", "m", 0.1, lambda: ("x", Usage(1000, 100, 0.99)))
    con.close()
    con2, restarted = tracker(path)
    assert restarted.check("institution", 0.0).spent_today_usd == pytest.approx(0.99)
    with pytest.raises(BudgetExceededError):
        restarted.check("institution", 0.02)
    con2.close()


def test_categories_have_separate_budgets_and_unknown_categories_are_rejected(tmp_path):
    _, t = tracker(tmp_path / "w.duckdb")
    t.record("reflection", "a", "m", Usage(1, 1, 1.0))
    assert t.check("review", 0.9).spent_today_usd == 0.0
    with pytest.raises(ValueError, match="unknown budget category"):
        t.check("misc", 0.1)


def test_usage_rows_carry_every_column_of_the_spec(tmp_path):
    con, t = tracker(tmp_path / "w.duckdb")
    t.record("reflection", "reflection:rc_1", "gpt-x", Usage(12, 3, 0.001))
    cols = [r[0] for r in con.execute("DESCRIBE llm_usage").fetchall()]
    assert cols == [
        "id",
        "category",
        "task",
        "model",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "date",
        "ts",
    ]
    assert con.execute("SELECT category, task, model, date FROM llm_usage").fetchall() == [
        ("reflection", "reflection:rc_1", "gpt-x", NOW.date())
    ]


def test_env_overrides_caps_and_bad_values_fall_back_to_defaults():
    limits = limits_from_env(
        {"TRADINGMEM_BUDGET_REVIEW_DAILY_USD": "0.25", "TRADINGMEM_BUDGET_REVIEW_SOFT_USD": "lots"}
    )
    assert limits["review"].daily_usd == 0.25
    assert limits["review"].soft_usd == DEFAULT_LIMITS["review"].soft_usd
    assert limits["reflection"] == DEFAULT_LIMITS["reflection"]


def test_summary_shows_today_and_month_per_category_with_status(tmp_path):
    con, t = tracker(tmp_path / "w.duckdb")
    t.record("reflection", "a", "m", Usage(1, 1, 0.6))
    t.record("review", "b", "m", Usage(1, 1, 1.0))
    rows = {r["category"]: r for r in budget_summary(con, LIMITS, NOW)}
    assert rows["reflection"]["today_usd"] == 0.6 and rows["reflection"]["status"] == "soft"
    assert rows["review"]["status"] == "exhausted"
    assert rows["synthesis"] == {
        "category": "synthesis",
        "today_usd": 0.0,
        "daily_cap_usd": 1.0,
        "soft_usd": 0.5,
        "month_usd": 0.0,
        "monthly_cap_usd": 3.0,
        "status": "ok",
    }
    # a warehouse without any LLM call yet reads as zero spend
    assert all(r["today_usd"] == 0.0 for r in budget_summary(duckdb.connect(), LIMITS, NOW))
