"""Tool permission tiers (SPEC section 8): declared once in ``tools.yaml``; unknown tools are tier 4.

A learning is a suggestion, never a permission: it records the highest tier its tool sequence
needs, so a caller allowed up to tier N is never offered a sequence that needs more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import yaml

MIN_TIER, MAX_TIER = 1, 4
UNKNOWN_TOOL_TIER = MAX_TIER


class ToolTierError(ValueError):
    """The tools file is unusable; the message names the file and the entry."""


@dataclass(frozen=True)
class ToolTiers:
    source: str
    tiers: Mapping[str, int]

    def tier(self, tool_name: str) -> int:
        return self.tiers.get(tool_name, UNKNOWN_TOOL_TIER)

    def required_tier(self, tool_names: Iterable[str]) -> int:
        """The highest tier a sequence needs (an empty sequence needs the lowest tier)."""
        return max((self.tier(t) for t in tool_names), default=MIN_TIER)

    def required_tier_expr(self, tool_names: pl.Expr) -> pl.Expr:
        """``required_tier`` over a list[str] column, set-based."""
        mapping = pl.DataFrame(
            {"tool": list(self.tiers), "tier": list(self.tiers.values())},
            schema={"tool": pl.String, "tier": pl.Int64},
        )
        return (
            tool_names.list.eval(
                pl.element().replace_strict(
                    mapping["tool"], mapping["tier"], default=UNKNOWN_TOOL_TIER, return_dtype=pl.Int64
                )
            )
            .list.max()
            .fill_null(MIN_TIER)
            .cast(pl.Int64)
        )


def parse_tool_tiers(document: object, source: str = "<tools>") -> ToolTiers:
    if not isinstance(document, dict) or not isinstance(document.get("tools"), dict):
        raise ToolTierError(f"{source}: expected a top-level 'tools:' mapping of tool name -> tier 1-4")
    tiers: dict[str, int] = {}
    for name, tier in document["tools"].items():
        if not isinstance(name, str) or not name.strip():
            raise ToolTierError(f"{source}: tool names must be non-empty strings, got {name!r}")
        if isinstance(tier, bool) or not isinstance(tier, int) or not MIN_TIER <= tier <= MAX_TIER:
            raise ToolTierError(f"{source}: tool '{name}' has tier {tier!r}; tiers are integers 1-4")
        tiers[name] = tier
    return ToolTiers(source=source, tiers=tiers)


def load_tool_tiers(path: str | Path) -> ToolTiers:
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ToolTierError(f"tools file {path} does not exist") from exc
    except yaml.YAMLError as exc:
        raise ToolTierError(f"tools file {path} is not valid YAML: {exc}") from exc
    return parse_tool_tiers(document, str(path))
