"""The landing set the demo writes: the instant it is built around, the default seed, and per SPEC §2
table its columns (names and order), its file format and how its row count scales.

Scale. SF 1 is about 100,000 decisions (with previews, consumptions, executions, fills and
positions), 20,000 institution runs (6 role outputs each), 50,000 customers (~3 memory units,
~10 transactions, ~5 conversation messages each), 20,000 agent turns, 20,000 legacy rows. Counts
are max(minimum, round(SF x base)) (BASE_ROWS / MIN_ROWS), so tiny scales still hold every case
kind. Prices, benchmark profiles, kb documents and the bad rows do not scale.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tradingmem_assets.defs.landing.invariants import LANDING_TABLES

DEMO_AS_OF = datetime(2024, 7, 1, tzinfo=UTC)
DEMO_SEED = 7
# the columns of every landing table, in their order: what the landing assets read (defs/landing/tables.toml)
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    name: tuple(table.column_names) for name, table in LANDING_TABLES.items()
}
CSV_TABLES = frozenset(
    {"customers", "kb_documents", "benchmark_profiles", "legacy_role_memory", "questionnaire_results"}
)
BASE_ROWS = {
    "trading_decisions": 100_000,
    "institution_runs": 20_000,
    "customers": 50_000,
    "agent_turns": 20_000,
    "learning_feedback": 8_000,
    "legacy_role_memory": 20_000,
}
MIN_ROWS = {
    "trading_decisions": 80,
    "institution_runs": 150,
    "customers": 30,
    "agent_turns": 80,
    "learning_feedback": 20,
    "legacy_role_memory": 48,
}


def _count(table: str, scale: float) -> int:
    return max(MIN_ROWS[table], round(scale * BASE_ROWS[table]))
