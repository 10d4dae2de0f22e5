"""The finite vocabularies of the spec, declared once and imported everywhere else."""

from __future__ import annotations

DIRECTIONS = ("long", "short")
METHODOLOGY_DIRECTIONS = ("long", "short", "neutral")
MARKETS = ("spot", "perp", "option", "future", "margin")
POSITION_STATUSES = ("open", "closed", "liquidated")
SETTLED_POSITION_STATUSES = ("closed", "liquidated")

MANUAL_SOURCES = ("manual_agent", "manual_external")
AUTOMATED_SOURCES = ("autopilot", "strategy_studio", "xstrategy", "workflow")
KNOWN_SOURCES = MANUAL_SOURCES + AUTOMATED_SOURCES

EVALUATION_STATUSES = ("complete", "pending", "insufficient_data")

PRIMARY_SIGNALS = (
    "trend",
    "momentum",
    "mean_reversion",
    "breakout",
    "support_resistance",
    "volume",
    "valuation",
    "sentiment",
    "macro",
    "onchain",
    "funding_rate",
)
TIMEFRAMES = ("1h", "4h", "1d", "1w", "1m")
ASSET_CLASSES = ("crypto_major", "crypto_alt", "equity", "fx", "commodity", "index")

# the fields of a proposed methodology, in the order of its stored columns (phases hold
# {name, criteria, tools_used, depends_on})
METHODOLOGY_PROPOSAL_FIELDS = (
    "name",
    "description",
    "direction",
    "primary_signal",
    "timeframe",
    "indicators",
    "asset_class",
    "phases",
)

INSTITUTION_ROLES = ("analyst", "bull", "bear", "risk", "trader", "portfolio_manager")
INSTITUTION_RUN_KINDS = ("scheduled", "lazy", "manual")
INSTITUTION_ACTIONS = ("buy", "sell", "hold")

INVESTOR_TYPES = ("C1", "C2", "C3", "C4", "C5")
PRODUCT_RISK_LEVELS = ("R1", "R2", "R3", "R4", "R5")
TRANSACTION_SIDES = ("buy", "sell")
KB_VISIBILITIES = ("public", "internal")
MESSAGE_ROLES = ("user", "assistant")

MIGRATION_STATUSES = ("migrated", "quarantined")

# Role memory (SPEC sections 5-7)
CASE_STATUSES = ("eligible", "pending", "ineligible", "quarantined")
CASE_REASONS = (
    "unknown_role",
    "role_not_declared_by_skill",
    "no_preview",
    "preview_not_consumed",
    "preview_consumed_multiple",
    "no_execution",
    "link_mismatch",  # always written with its field: link_mismatch:<field>
    "automated_source",
    "unverified_external",
    "unknown_source",
    "not_settled",
    "no_primary_run",
    "insufficient_evaluation",
)
LINK_FIELDS = ("decision_id", "symbol", "direction", "account_id", "market")
OUTCOMES = ("win", "loss", "flat")
REFLECTION_CLASSES = ("variance", "exogenous", "missing_data", "logic_error", "sound")
TRAINABLE_CLASSES = ("missing_data", "logic_error")
RECALLABLE_CLASSES = ("missing_data", "logic_error", "sound")

# LLM budget (SPEC section 8)
BUDGET_CATEGORIES = ("reflection", "review", "synthesis", "institution")
