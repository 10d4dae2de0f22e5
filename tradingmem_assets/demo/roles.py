"""The trading roles decisions are drawn from (those of roles.yaml, with what the demo draws for them
in texts.toml), their skills, the evidence kinds a decision can cite and the benchmark profiles its
windows are evaluated under."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tradingmem_assets.demo.texts import TEXTS
from tradingmem_assets.lib.registry import Role, load_registry


@dataclass(frozen=True)
class _Role(Role):
    """A role of roles.yaml, with what the demo draws for it (texts.toml): symbols and markets with
    their odds, and the evidence it may add to what it requires."""

    symbols: tuple[str, ...]
    symbol_p: tuple[float, ...]
    extras: tuple[str, ...]
    markets: tuple[str, ...]
    market_p: tuple[float, ...]


_REGISTRY = load_registry(Path(__file__).resolve().parents[1] / "roles.yaml")


def _role(entry: dict) -> _Role:
    drawn = {name: tuple(values) for name, values in entry.items() if name != "role_id"}
    return _Role(**vars(_REGISTRY.roles[entry["role_id"]]), **drawn)


_ROLES = tuple(_role(entry) for entry in TEXTS["roles"])
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
