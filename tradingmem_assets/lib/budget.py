"""The LLM budget tracker (SPEC section 8): a circuit breaker every LLM call goes through.

Usage (the whole API; see docs/role_memory.md)::

    tracker = BudgetTracker(con)                       # limits from TRADINGMEM_BUDGET_* env vars
    text = tracker.call("review", "review:turn_42", model, estimate_usd, lambda: do_call())
    # do_call() returns (result, Usage(input_tokens, output_tokens, cost_usd))

``call`` = ``check`` (raises ``BudgetExceededError`` *before* the call when estimate + spent so far
would pass the daily or monthly hard cap; logs a structured warning past the soft threshold) +
the call + ``record`` (appends the actual usage to ``main.llm_usage``). Spend is read from that
table on every check, so limits survive restarts and are shared by every process using the
warehouse. Budgets are real money: days and months are UTC calendar days of the *wall clock*,
never the replay anchor ``TRADINGMEM_AS_OF``.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TypeVar

import duckdb

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.vocabulary import BUDGET_CATEGORIES
from tradingmem_assets.lib.warehouse import table_exists

log = logging.getLogger("tradingmem.budget")
T = TypeVar("T")

USAGE_DDL = f"""
CREATE TABLE IF NOT EXISTS {tables.LLM_USAGE} (
    id VARCHAR PRIMARY KEY,
    category VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_usd DOUBLE NOT NULL,
    date DATE NOT NULL,
    ts TIMESTAMPTZ NOT NULL
)
"""


def ensure_usage_table(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``main.llm_usage`` if missing (so the table exists before the first LLM call)."""
    con.execute(USAGE_DDL)


@dataclass(frozen=True)
class CategoryLimits:
    """Hard caps per UTC day and month, and the daily soft threshold, in USD."""

    daily_usd: float
    monthly_usd: float
    soft_usd: float


DEFAULT_LIMITS: dict[str, CategoryLimits] = {
    "reflection": CategoryLimits(daily_usd=2.0, monthly_usd=30.0, soft_usd=1.5),
    "review": CategoryLimits(daily_usd=1.0, monthly_usd=15.0, soft_usd=0.75),
    "synthesis": CategoryLimits(daily_usd=2.0, monthly_usd=30.0, soft_usd=1.5),
    "institution": CategoryLimits(daily_usd=5.0, monthly_usd=100.0, soft_usd=4.0),
}


def _env_usd(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        log.warning("%s=%r is not a number of USD; using %s", name, raw, default)
        return default
    if value < 0:
        log.warning("%s=%r is negative; using %s", name, raw, default)
        return default
    return value


def limits_from_env(env: Mapping[str, str] | None = None) -> dict[str, CategoryLimits]:
    """Defaults overridden by TRADINGMEM_BUDGET_<CATEGORY>_{DAILY,MONTHLY,SOFT}_USD."""
    env = os.environ if env is None else env
    out = {}
    for category, d in DEFAULT_LIMITS.items():
        prefix = f"TRADINGMEM_BUDGET_{category.upper()}_"
        out[category] = CategoryLimits(
            daily_usd=_env_usd(env, prefix + "DAILY_USD", d.daily_usd),
            monthly_usd=_env_usd(env, prefix + "MONTHLY_USD", d.monthly_usd),
            soft_usd=_env_usd(env, prefix + "SOFT_USD", d.soft_usd),
        )
    return out


@dataclass(frozen=True)
class Pricing:
    """USD per million tokens; defaults are deliberately on the expensive side of small models."""

    input_usd_per_mtok: float = 0.60
    output_usd_per_mtok: float = 2.40

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_usd_per_mtok + output_tokens * self.output_usd_per_mtok) / 1_000_000

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Pricing:
        env = os.environ if env is None else env
        return cls(
            input_usd_per_mtok=_env_usd(env, "TRADINGMEM_LLM_INPUT_USD_PER_MTOK", cls.input_usd_per_mtok),
            output_usd_per_mtok=_env_usd(env, "TRADINGMEM_LLM_OUTPUT_USD_PER_MTOK", cls.output_usd_per_mtok),
        )


@dataclass(frozen=True)
class Usage:
    """What a finished call actually consumed."""

    input_tokens: int
    output_tokens: int
    cost_usd: float


class BudgetExceededError(RuntimeError):
    """The call would pass a hard cap; it was not made."""

    def __init__(self, category: str, window: str, cap_usd: float, spent_usd: float, estimate_usd: float):
        self.category, self.window = category, window
        self.cap_usd, self.spent_usd, self.estimate_usd = cap_usd, spent_usd, estimate_usd
        super().__init__(
            f"LLM budget exceeded for '{category}': {window} spend ${spent_usd:.4f} + estimated "
            f"${estimate_usd:.4f} would pass the {window} hard cap of ${cap_usd:.4f}; the call was not made "
            f"(raise TRADINGMEM_BUDGET_{category.upper()}_{window.upper()}_USD to allow more)"
        )


@dataclass(frozen=True)
class BudgetCheck:
    category: str
    estimate_usd: float
    spent_today_usd: float
    spent_month_usd: float
    soft_exceeded: bool


def _wall_clock() -> datetime:
    return datetime.now(UTC)


def _month_start(day: date) -> date:
    return day.replace(day=1)


def spend(con: duckdb.DuckDBPyConnection, now: datetime) -> dict[str, tuple[float, float]]:
    """Per category: (spent today, spent this month) in USD, UTC calendar; zeros without a usage table."""
    out = {c: (0.0, 0.0) for c in BUDGET_CATEGORIES}
    if not table_exists(con, tables.LLM_USAGE):
        return out
    today = now.astimezone(UTC).date()
    rows = con.execute(
        f"""SELECT category,
                   coalesce(sum(cost_usd) FILTER (WHERE date = ?), 0),
                   coalesce(sum(cost_usd), 0)
            FROM {tables.LLM_USAGE} WHERE date >= ? AND date <= ? GROUP BY category""",
        [today, _month_start(today), today],
    ).fetchall()
    for category, day_total, month_total in rows:
        out[category] = (float(day_total), float(month_total))
    return out


def budget_summary(
    con: duckdb.DuckDBPyConnection,
    limits: Mapping[str, CategoryLimits] | None = None,
    now: datetime | None = None,
) -> list[dict]:
    """Spend by category for today and this month with caps and a status (ok / soft / exhausted)."""
    limits = limits_from_env() if limits is None else limits
    now = _wall_clock() if now is None else now
    spent = spend(con, now)
    rows = []
    for category in BUDGET_CATEGORIES:
        lim = limits[category]
        day, month = spent.get(category, (0.0, 0.0))
        status = "ok"
        if day >= lim.soft_usd:
            status = "soft"
        if day >= lim.daily_usd or month >= lim.monthly_usd:
            status = "exhausted"
        rows.append(
            {
                "category": category,
                "today_usd": round(day, 6),
                "daily_cap_usd": lim.daily_usd,
                "soft_usd": lim.soft_usd,
                "month_usd": round(month, 6),
                "monthly_cap_usd": lim.monthly_usd,
                "status": status,
            }
        )
    return rows


@dataclass
class BudgetTracker:
    """Checks, then records, every LLM call against ``main.llm_usage`` in the warehouse ``con``."""

    con: duckdb.DuckDBPyConnection
    limits: Mapping[str, CategoryLimits] = field(default_factory=limits_from_env)
    clock: Callable[[], datetime] = _wall_clock
    warnings: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        ensure_usage_table(self.con)

    def _limits(self, category: str) -> CategoryLimits:
        if category not in BUDGET_CATEGORIES:
            raise ValueError(
                f"unknown budget category {category!r}; expected one of {', '.join(BUDGET_CATEGORIES)}"
            )
        return self.limits[category]

    def check(self, category: str, estimate_usd: float, task: str = "") -> BudgetCheck:
        """Raise ``BudgetExceededError`` if the call would pass a hard cap; warn past the soft threshold."""
        lim = self._limits(category)
        if estimate_usd < 0:
            raise ValueError(f"estimated cost must not be negative (got {estimate_usd})")
        day, month = spend(self.con, self.clock())[category]
        if day + estimate_usd > lim.daily_usd:
            raise BudgetExceededError(category, "daily", lim.daily_usd, day, estimate_usd)
        if month + estimate_usd > lim.monthly_usd:
            raise BudgetExceededError(category, "monthly", lim.monthly_usd, month, estimate_usd)
        soft = day + estimate_usd > lim.soft_usd
        if soft:
            event = {
                "event": "llm_budget_soft_threshold",
                "category": category,
                "task": task,
                "spent_today_usd": round(day, 6),
                "estimate_usd": round(estimate_usd, 6),
                "soft_usd": lim.soft_usd,
                "daily_cap_usd": lim.daily_usd,
            }
            self.warnings.append(event)
            log.warning(json.dumps(event, sort_keys=True))
        return BudgetCheck(category, estimate_usd, day, month, soft)

    def record(self, category: str, task: str, model: str, usage: Usage) -> str:
        """Append one call's actual usage (committed at once, outside any caller transaction semantics)."""
        self._limits(category)
        now = self.clock().astimezone(UTC)
        usage_id = "lu_" + uuid.uuid4().hex[:20]
        self.con.execute(
            f"INSERT INTO {tables.LLM_USAGE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                usage_id,
                category,
                task,
                model,
                int(usage.input_tokens),
                int(usage.output_tokens),
                float(usage.cost_usd),
                now.date(),
                now,
            ],
        )
        return usage_id

    def call(
        self, category: str, task: str, model: str, estimate_usd: float, fn: Callable[[], tuple[T, Usage]]
    ) -> T:
        """check -> fn() -> record; a refused call never reaches ``fn``."""
        self.check(category, estimate_usd, task)
        result, usage = fn()
        self.record(category, task, model, usage)
        return result

    def summary(self) -> list[dict]:
        return budget_summary(self.con, self.limits, self.clock())
