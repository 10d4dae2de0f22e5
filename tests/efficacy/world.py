"""(Helpers, no tests.) A crafted world whose efficacy table is known by hand.

Lessons (abs_7d, noise_k 1, maturity 7 days): daily bars alternating 100 / 101 (noise band
~0.027), each decision's fill priced so its excess return is exactly what is listed (+0.10 win,
-0.10 loss, 0 flat). Executed 30 min after the decision, closed 7 days + 1 h later, so a loss's
logic_error lesson is known 14 days + 1.5 h after its decision. Each role's first decision
(02-01) is a loss: its first lesson is known at 2024-02-15 15:30. ``valuation`` wins 3 of 12
before and 10 of 12 after (helps); ``trend_follower`` wins 11 of 12 before and 2 of 12 after
(hurts). Nobody misses evidence, so no missing_data lesson exists (every decision is "before").

Methodologies (BTCUSD and SOLUSD rise 1 % a day: buy is right at 1, 7 and 30 days, sell wrong):
one methodology M proposed by r00 and cited by r00..r19, which all buy: it graduates with its
10th applied case at day(8) (8 one-day cases and the seven-day cases of r00 and r01) and stays
graduated. r20..r29 buy with M injected; r30..r39 sell with no M (r35 gets an unknown methodology
injected); r40..r44 are crypto_alt runs that buy (another class: never compared with M).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.role_memory.world import PROFILES, bars
from tests.world import World
from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.defs.learning.candidates import dedup_key, methodology_id_for

WIN, LOSS, FLAT = 0.10, -0.10, 0.0


def at(month: int, day: int, hour: int = 14, minute: int = 0) -> datetime:
    return datetime(2024, month, day, hour, minute, tzinfo=UTC)


AFTER_DAYS = [at(2, 20 + i) for i in range(10)] + [at(3, 1), at(3, 2)]
# (decided, symbol, excess) per role: 12 decisions before its first lesson, 12 after it
VALUATION_BEFORE = [
    (at(2, 1), "AAA", LOSS),  # the first lesson
    (at(2, 2), "BBB", WIN),
    (at(2, 3), "AAA", LOSS),
    (at(2, 4), "AAA", WIN),
    (at(2, 5), "BBB", LOSS),
    (at(2, 6), "AAA", FLAT),
    (at(2, 7), "AAA", LOSS),
    (at(2, 8), "AAA", WIN),
    (at(2, 9), "AAA", LOSS),
    (at(2, 10), "AAA", LOSS),
    (at(2, 11), "AAA", FLAT),
    (at(2, 12), "AAA", LOSS),
]
VALUATION_AFTER = [(d, "AAA", LOSS if i in (3, 8) else WIN) for i, d in enumerate(AFTER_DAYS)]
TREND_BEFORE = [(at(2, 1, 15), "CCC", LOSS)] + [(at(2, 2 + i, 15), "CCC", WIN) for i in range(11)]
TREND_AFTER = [
    (d + timedelta(hours=1), "CCC", WIN if i in (0, 6) else LOSS) for i, d in enumerate(AFTER_DAYS)
]
ROLES = {  # role: (skill, evidence, decisions)
    "valuation": ("equity_research", '["fundamentals", "price_history"]', VALUATION_BEFORE + VALUATION_AFTER),
    "trend_follower": ("crypto_trading", '["price_history", "volume"]', TREND_BEFORE + TREND_AFTER),
}
FIRST_LESSON_KNOWN = {"valuation": at(2, 15, 15, 30), "trend_follower": at(2, 15, 16, 30)}
EXECUTION_DELAY = timedelta(minutes=30)
CLOSE_AFTER = timedelta(days=7, hours=1)


def exit_close(symbol: str, executed: datetime, horizon_days: int = 7) -> float:
    end = executed + timedelta(days=horizon_days)
    return [b for b in bars(symbol) if b["ts"] <= end][-1]["close"]


def trade(tables: dict, n: int, role: str, decided: datetime, symbol: str, excess: float, **chain) -> None:
    """One decision with its whole chain; ``chain``: source / position_status overrides."""
    skill, evidence, _ = ROLES[role]
    did = f"d{n:02d}"
    executed = decided + EXECUTION_DELAY
    status = chain.get("position_status", "closed")
    tables["trading_decisions"].append(
        {
            "decision_id": did,
            "role_id": role,
            "skill_id": skill,
            "symbol": symbol,
            "direction": "long",
            "account_id": "acct1",
            "market": "spot",
            "scenario": "earnings_season",
            "decision_text": f"buy {symbol} below fair value",
            "evidence": evidence,
            "preview_id": f"p_{did}",
            "decided_at": decided,
        }
    )
    tables["trade_previews"].append({"preview_id": f"p_{did}", "decision_id": did, "created_at": decided})
    tables["preview_consumptions"].append(
        {
            "consumption_id": f"c_{did}",
            "preview_id": f"p_{did}",
            "execution_id": f"e_{did}",
            "consumed_at": executed,
        }
    )
    tables["trade_executions"].append(
        {
            "execution_id": f"e_{did}",
            "decision_id": did,
            "preview_id": f"p_{did}",
            "symbol": symbol,
            "direction": "long",
            "account_id": "acct1",
            "market": "spot",
            "source": chain.get("source", "manual_agent"),
            "source_verified": True,
            "automation_flag": False,
            "executed_at": executed,
        }
    )
    price = exit_close(symbol, executed) / (1 + excess)
    tables["trade_fills"].append(
        {
            "fill_id": f"f_{did}",
            "execution_id": f"e_{did}",
            "qty": 1.0,
            "price": price,
            "fee": 0.0,
            "filled_at": executed,
        }
    )
    tables["position_lifecycles"].append(
        {
            "position_id": f"pos_{did}",
            "execution_id": f"e_{did}",
            "status": status,
            "opened_at": executed,
            "closed_at": executed + CLOSE_AFTER if status != "open" else None,
            "realized_pnl": 0.0,
        }
    )


# --- institution ---------------------------------------------------------------------------------

PHASES = [
    {
        "name": "context",
        "criteria": ["4h regime agrees"],
        "tools_used": ["get_price_history"],
        "depends_on": [],
    },
    {
        "name": "signal",
        "criteria": ["rsi confirms"],
        "tools_used": ["compute_indicator"],
        "depends_on": ["context"],
    },
]
M = methodology_id_for(
    dedup_key("long", "support_resistance", "4h", ["rsi", "volume_profile"], "crypto_major")
)
UNKNOWN_M = "m_ffffffffffffffff"
PROPOSAL = json.dumps(
    {
        "name": "Support play",
        "description": "Buy BTC at support: when price tests a prior support level on the 4h chart and "
        "RSI is oversold, enter with a stop below support.",
        "direction": "long",
        "primary_signal": "support_resistance",
        "timeframe": "4h",
        "indicators": ["rsi", "volume_profile"],
        "asset_class": "crypto_major",
        "phases": PHASES,
    }
)


def run_day(i: int, hour: int = 10) -> datetime:
    return datetime(2024, 1, 2, tzinfo=UTC) + timedelta(days=i, hours=hour)


GRADUATED_AT = run_day(8)


def rising(symbol: str) -> list[dict]:
    out, close = [], 100.0
    for i in range(-40, 200):
        close *= 1.01
        out.append(
            {
                "symbol": symbol,
                "ts": run_day(i, 21),
                "open": close,
                "high": close,
                "low": close,
                "close": close,
                "volume": 1.0,
            }
        )
    return out


def institution(tables: dict) -> None:
    def output(rid: str, role: str, action: str, cited: list[str], prop: str | None = None) -> dict:
        schema = {"portfolio_manager": "PortfolioDecision"}.get(role, "AnalystReport")
        return {
            "output_id": f"{rid}-{role}",
            "run_id": rid,
            "role": role,
            "schema": schema,
            "action": action,
            "confidence": 0.7,
            "cited_methodology_ids": json.dumps(cited),
            "proposed_methodology": prop,
        }

    for i in range(45):
        rid = f"r{i:02d}"
        crypto_alt = i >= 40
        tables["institution_runs"].append(
            {
                "run_id": rid,
                "started_at": run_day(i - 10 if crypto_alt else i),
                "symbol": "SOLUSD" if crypto_alt else "BTCUSD",
                "asset_class": "crypto_alt" if crypto_alt else "crypto_major",
                "kind": "scheduled",
            }
        )
        action = "sell" if 30 <= i < 40 else "buy"
        cited = [M] if i < 20 else []
        if i == 0:
            tables["institution_role_outputs"].append(output(rid, "analyst", "buy", [M], PROPOSAL))
        tables["institution_role_outputs"].append(output(rid, "portfolio_manager", action, cited))
    for i in range(20, 30):
        tables["methodology_injections"].append(
            {
                "injection_id": f"inj{i}",
                "run_id": f"r{i}",
                "methodology_id": M,
                "injected_at": run_day(i) + timedelta(minutes=1),
            }
        )
    tables["methodology_injections"].append(
        {
            "injection_id": "inj_unknown",
            "run_id": "r35",
            "methodology_id": UNKNOWN_M,
            "injected_at": run_day(35) + timedelta(minutes=1),
        }
    )


def write(world: World, *, lessons: bool = True, methodologies: bool = True) -> None:
    """Write every landing table of the crafted world (empty ones included)."""
    tables: dict[str, list[dict]] = {name: [] for name in LANDING_TABLES}
    tables["benchmark_profiles"] = list(PROFILES)
    if lessons:
        tables["price_bars"] += bars("AAA") + bars("BBB") + bars("CCC")
        n = 0
        for role, (_, _, decisions) in ROLES.items():
            for decided, symbol, excess in decisions:
                trade(tables, n, role, decided, symbol, excess)
                n += 1
        # never counted: an automated execution (ineligible) and a position still open
        trade(tables, 90, "valuation", at(2, 13), "AAA", WIN, source="autopilot")
        trade(tables, 91, "valuation", at(2, 14), "AAA", WIN, position_status="open")
    if methodologies:
        tables["price_bars"] += rising("BTCUSD") + rising("SOLUSD")
        institution(tables)
    for name, rows in tables.items():
        world.write(name, rows)
