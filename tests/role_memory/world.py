"""(Helpers, no tests.) Tiny execution chains for Role Memory tests: one decision each, every link switchable.

``Chain`` rows can be loaded into an in-memory DuckDB (``load``: fast, for core tests, with
hand-made evaluation runs) or written as landing files of a ``World`` (``write_world``: real
ingestion and real evaluation through ``dg.materialize``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import duckdb
import polars as pl

from tradingmem_assets.defs.evaluation.components import create_components_view
from tradingmem_assets.defs.evaluation.scoring import EVALUATION_RUNS_DTYPES, run_id_for
from tradingmem_assets.defs.landing.invariants import LANDING_TABLES

SYMBOL = "AAA"
DECIDED = datetime(2024, 2, 1, 14, 0, tzinfo=UTC)
EXECUTED = datetime(2024, 2, 1, 14, 30, tzinfo=UTC)
CLOSED = datetime(2024, 2, 8, 15, 0, tzinfo=UTC)
AS_OF = datetime(2024, 7, 1, tzinfo=UTC)

PROFILES = [
    {"profile_id": "abs_7d", "horizon_days": 7, "benchmark_symbol": None, "min_coverage": 0.8},
    {"profile_id": "abs_30d", "horizon_days": 30, "benchmark_symbol": None, "min_coverage": 0.8},
    {"profile_id": "rel_mktidx_7d", "horizon_days": 7, "benchmark_symbol": "MKTIDX", "min_coverage": 0.8},
]


def bars(
    symbol: str = SYMBOL, start: datetime = datetime(2024, 1, 1, 21, tzinfo=UTC), days: int = 120
) -> list[dict]:
    """Daily bars (weekends included) alternating 100 / 101, so volatility is known in closed form."""
    out = []
    for i in range(days):
        close = 100.0 if i % 2 == 0 else 101.0
        out.append(
            {
                "symbol": symbol,
                "ts": start + timedelta(days=i),
                "open": close,
                "high": close,
                "low": close,
                "close": close,
                "volume": 1000.0,
            }
        )
    return out


def volatility_before(decided: datetime = DECIDED, symbol: str = SYMBOL) -> float:
    """Sample std of the log returns of the 30 bars strictly before ``decided`` (as evaluation does)."""
    closes = [b["close"] for b in bars(symbol) if b["ts"] < decided][-30:]
    rets = [math.log(b / a) for a, b in zip(closes, closes[1:], strict=False)]
    mean = sum(rets) / len(rets)
    return math.sqrt(sum((r - mean) ** 2 for r in rets) / (len(rets) - 1))


def exit_close(executed: datetime = EXECUTED, horizon_days: int = 7, symbol: str = SYMBOL) -> float:
    end = executed + timedelta(days=horizon_days)
    return [b for b in bars(symbol) if b["ts"] <= end][-1]["close"]


def band(noise_k: float = 1.0, horizon_days: int = 7) -> float:
    return noise_k * volatility_before() * math.sqrt(horizon_days)


def fill_price_for(excess: float, horizon_days: int = 7) -> float:
    """The fill price that makes the absolute-profile excess return equal ``excess``."""
    return exit_close(horizon_days=horizon_days) / (1 + excess)


class Chain:
    """Landing rows of several independent decisions (each with its own preview/execution ids)."""

    def __init__(self) -> None:
        self.tables: dict[str, list[dict]] = defaultdict(list)

    def add(
        self,
        decision_id: str,
        *,
        role_id: str | None = "valuation",
        skill_id: str | None = "equity_research",
        symbol: str = SYMBOL,
        direction: str = "long",
        account_id: str = "acct1",
        market: str = "spot",
        scenario: str | None = "earnings_season",
        decision_text: str | None = "buy AAA below fair value",
        evidence: str | None = '["fundamentals", "price_history"]',
        preview: bool = True,
        preview_owner: str | None = None,
        consumptions: int = 1,
        executions: list[dict] | None = None,
        execution: dict | None = None,
        source: str | None = "manual_agent",
        source_verified: bool | None = True,
        automation_flag: bool = False,
        position_status: str | None = "closed",
        closed_at: datetime | None = CLOSED,
        fill_price: float = 100.0,
        decided_at: datetime = DECIDED,
    ) -> Chain:
        preview_id = f"p_{decision_id}" if preview else None
        self.tables["trading_decisions"].append(
            {
                "decision_id": decision_id,
                "role_id": role_id,
                "skill_id": skill_id,
                "symbol": symbol,
                "direction": direction,
                "account_id": account_id,
                "market": market,
                "scenario": scenario,
                "decision_text": decision_text,
                "evidence": evidence,
                "preview_id": preview_id,
                "decided_at": decided_at,
            }
        )
        if not preview:
            return self
        self.tables["trade_previews"].append(
            {"preview_id": preview_id, "decision_id": preview_owner or decision_id, "created_at": decided_at}
        )
        base = {
            "decision_id": decision_id,
            "preview_id": preview_id,
            "symbol": symbol,
            "direction": direction,
            "account_id": account_id,
            "market": market,
            "source": source,
            "source_verified": source_verified,
            "automation_flag": automation_flag,
            "executed_at": EXECUTED,
        }
        specs = executions if executions is not None else [dict(execution or {}) for _ in range(consumptions)]
        for i, spec in enumerate(specs):
            spec = dict(spec)
            execution_id = spec.pop("execution_id", f"e_{decision_id}_{i}")
            exists = spec.pop("exists", True)
            self.tables["preview_consumptions"].append(
                {
                    "consumption_id": f"c_{decision_id}_{i}",
                    "preview_id": preview_id,
                    "execution_id": execution_id,
                    "consumed_at": EXECUTED,
                }
            )
            if not exists:
                continue
            self.tables["trade_executions"].append({**base, **spec, "execution_id": execution_id})
            self.tables["trade_fills"].append(
                {
                    "fill_id": f"f_{execution_id}",
                    "execution_id": execution_id,
                    "qty": 1.0,
                    "price": fill_price,
                    "fee": 0.0,
                    "filled_at": EXECUTED,
                }
            )
            if position_status is not None:
                self.tables["position_lifecycles"].append(
                    {
                        "position_id": f"pos_{execution_id}",
                        "execution_id": execution_id,
                        "status": position_status,
                        "opened_at": EXECUTED,
                        "closed_at": closed_at if position_status != "open" else None,
                        "realized_pnl": 0.0,
                    }
                )
        return self

    # --- loading ---------------------------------------------------------------------------
    def all_tables(self, extra: dict[str, list[dict]] | None = None) -> dict[str, list[dict]]:
        tables = dict(self.tables)
        tables.setdefault("price_bars", bars())
        tables.setdefault("benchmark_profiles", PROFILES)
        tables.update(extra or {})
        return tables

    def frames(self, extra: dict[str, list[dict]] | None = None) -> dict[str, pl.DataFrame]:
        tables = self.all_tables(extra)
        out = {}
        for name, spec in LANDING_TABLES.items():
            rows = tables.get(name, [])
            out[name] = (
                pl.DataFrame(
                    [{c: r.get(c) for c in spec.column_names} for r in rows],
                    schema=spec.polars_schema(),
                    orient="row",
                )
                if rows
                else spec.empty()
            )
        return out

    def load(self, con: duckdb.DuckDBPyConnection, extra: dict[str, list[dict]] | None = None) -> None:
        """Create every raw table in ``con`` (empty when the chain has no rows for it)."""
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE SCHEMA IF NOT EXISTS raw")
        for name, frame in self.frames(extra).items():
            con.register("_f", frame)
            con.execute(f"CREATE OR REPLACE TABLE raw.{name} AS SELECT * FROM _f")
            con.unregister("_f")

    def write_world(self, world, extra: dict[str, list[dict]] | None = None) -> None:
        tables = self.all_tables(extra)
        for name in LANDING_TABLES:
            world.write(name, tables.get(name, []))


def load_runs(con: duckdb.DuckDBPyConnection, runs: list[dict]) -> None:
    """Hand-made primary evaluation runs: dicts with decision_id, execution_id, status, excess, volatility."""
    rows = [
        {
            "run_id": run_id_for(r["decision_id"], r.get("profile_id", "abs_7d"), 1),
            "decision_id": r["decision_id"],
            "execution_id": r["execution_id"],
            "profile_id": r.get("profile_id", "abs_7d"),
            "run_version": 1,
            "inputs_hash": "0" * 64,
            "status": r.get("status", "complete"),
            "is_primary": r.get("is_primary", True),
            "promoted_at": AS_OF,
            "created_at": AS_OF,
            "excess_return": r.get("excess"),
            "volatility": r.get("volatility"),
        }
        for r in runs
    ]
    runs_frame = pl.DataFrame(rows or None, schema=EVALUATION_RUNS_DTYPES, orient="row")
    con.register("_r", runs_frame)
    con.execute("CREATE OR REPLACE TABLE main.evaluation_runs AS SELECT * FROM _r")
    con.unregister("_r")
    create_components_view(con)
