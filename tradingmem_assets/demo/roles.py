"""The trading roles decisions are drawn from (mirroring roles.yaml), their skills, the evidence kinds
a decision can cite and the benchmark profiles its windows are evaluated under."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class _Role:
    role_id: str
    skill_id: str
    symbols: tuple[str, ...]
    symbol_p: tuple[float, ...]
    maturity_days: int
    primary_profile: str
    required: tuple[str, ...]
    extras: tuple[str, ...]
    markets: tuple[str, ...]
    market_p: tuple[float, ...]


# Mirrors tradingmem_assets/roles.yaml (a test keeps them in step).
# fmt: off
_ROLES = (
    _Role("valuation", "equity_research", ("GOOG", "AAPLX", "MSFTX"), (0.4, 0.3, 0.3), 7, "abs_7d",
          ("fundamentals", "price_history"), ("earnings_report", "news", "volume"), ("spot",), (1.0,)),
    _Role("earnings_momentum", "equity_research", ("GOOG", "AAPLX", "MSFTX"), (0.4, 0.3, 0.3), 7,
          "rel_mktidx_7d", ("earnings_report", "price_history"), ("fundamentals", "news", "volume"),
          ("spot",), (1.0,)),
    _Role("trend_follower", "crypto_trading", ("BTCUSD", "ETHUSD", "SOLUSD"), (0.45, 0.35, 0.2), 7, "abs_7d",
          ("price_history", "volume"), ("news", "funding_rate", "order_book"), ("spot", "perp"),
          (0.75, 0.25)),
    _Role("funding_arbitrage", "crypto_trading", ("BTCUSD", "ETHUSD", "SOLUSD"), (0.45, 0.35, 0.2), 30,
          "abs_30d", ("funding_rate", "order_book"), ("price_history", "volume", "news"), ("perp", "spot"),
          (0.85, 0.15)),
    _Role("macro_rates", "fx_macro", ("EURUSD",), (1.0,), 30, "abs_30d",
          ("rate_differential", "economic_calendar"), ("news", "price_history"), ("spot",), (1.0,)),
)
# fmt: on
_ROLE_P = (0.2, 0.2, 0.25, 0.15, 0.2)
_SKILLS = ("equity_research", "crypto_trading", "fx_macro")
_UNKNOWN_ROLES = ("generic_trader", "old_scalper")
EVIDENCE_KINDS = (
    "fundamentals",
    "price_history",
    "earnings_report",
    "volume",
    "funding_rate",
    "order_book",
    "rate_differential",
    "economic_calendar",
    "news",
)


def _evidence_json_table() -> list[str]:
    return [
        json.dumps([k for i, k in enumerate(EVIDENCE_KINDS) if m >> i & 1])
        for m in range(1 << len(EVIDENCE_KINDS))
    ]


PROFILES = (("abs_7d", 7, None, 0.8), ("abs_30d", 30, None, 0.8), ("rel_mktidx_7d", 7, "MKTIDX", 0.8))
