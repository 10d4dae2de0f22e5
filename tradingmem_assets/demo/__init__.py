"""Deterministic demo world: one coherent landing file per SPEC §2 table, built around DEMO_AS_OF.

`write_demo_world(landing_dir, scale=0.01, seed=7)` writes `<table>.parquet` for most tables and
`<table>.csv` for CSV_TABLES (customers, kb_documents, benchmark_profiles, legacy_role_memory,
questionnaire_results), so both landing readers are exercised. Columns are exactly SPEC §2 (names
and order, TABLE_COLUMNS). Same (scale, seed) gives byte-identical files: no wall clock is read,
every random draw comes from `numpy.random.default_rng([seed, crc32(stream)])`, and parquet is
written with fixed settings (zstd level 3, statistics off, fixed row-group size). This package does
not import dagster.

Types. Parquet timestamps are Datetime("us", "UTC"); CSV timestamps are ISO-8601 strings with a
trailing "Z" (dates "YYYY-MM-DD"). JSON columns (evidence, tool_calls, cited_methodology_ids,
proposed_methodology) are JSON text. Booleans are parquet booleans. CSV string fields are always
quoted, so trailing whitespace in legacy content survives; an empty unquoted field is null.

Id schemes (zero-padded running numbers, ordered by time):
  decisions d_0000001, previews p_<same number as the decision>, consumptions pc_, executions x_,
  fills f_ (8 digits), positions pos_, events ev_, turns t_, agent sessions as_, feedback fb_,
  institution runs ir_, outputs o_ (8), injections inj_, customers c_000001, questionnaires qa_,
  transactions tx_ (8), memory units mu_ (8), evidence me_ (8), messages msg_ (8), conversation
  sessions cs_<customer number>_<1|2>, kb documents kb_001, legacy rows lg_.
  methodology ids: see methodologies.py (methodology_id_for); learning ids: see learning.py
  (learning_id_for).

Modules, one concept each: tables (columns, formats, row counts), clock and frames (time, seeded
randomness, column builders), prices (bars and the bar-time convention), roles, decision_kinds,
decision_text, market_events and trading (the trading chain), learning (agent turns, feedback),
methodologies, institution and schedule (runs, role outputs, injections; the last month's daily
schedule that the first audit at DEMO_AS_OF reads), customers, kb, legacy, bad_rows, and world
(assembly and write_demo_world).
"""

from __future__ import annotations

from tradingmem_assets.demo.bad_rows import BAD_ROWS, demo_bad_row_counts
from tradingmem_assets.demo.decision_kinds import DECISION_KINDS, KIND_REASONS
from tradingmem_assets.demo.learning import UNKNOWN_LEARNING_IDS, learning_id_for
from tradingmem_assets.demo.market_events import _EXOGENOUS_EVENTS as _EXOGENOUS_EVENTS  # read by tests
from tradingmem_assets.demo.methodologies import (
    BOGUS_METHODOLOGY_IDS,
    JUNE_TEMPLATE,
    METHODOLOGY_TEMPLATES,
    methodology_id_for,
)
from tradingmem_assets.demo.prices import MISSING_BARS
from tradingmem_assets.demo.roles import _ROLES as _ROLES  # read by tests
from tradingmem_assets.demo.roles import EVIDENCE_KINDS, PROFILES
from tradingmem_assets.demo.tables import CSV_TABLES, DEMO_AS_OF, DEMO_SEED, TABLE_COLUMNS
from tradingmem_assets.demo.trading import demo_decision_kinds
from tradingmem_assets.demo.world import DemoSummary, write_demo_world

__all__ = [
    "BAD_ROWS",
    "BOGUS_METHODOLOGY_IDS",
    "CSV_TABLES",
    "DECISION_KINDS",
    "DEMO_AS_OF",
    "DEMO_SEED",
    "EVIDENCE_KINDS",
    "JUNE_TEMPLATE",
    "KIND_REASONS",
    "METHODOLOGY_TEMPLATES",
    "MISSING_BARS",
    "PROFILES",
    "TABLE_COLUMNS",
    "UNKNOWN_LEARNING_IDS",
    "DemoSummary",
    "demo_bad_row_counts",
    "demo_decision_kinds",
    "learning_id_for",
    "methodology_id_for",
    "write_demo_world",
]
