"""Role cases (SPEC section 5): the fail-closed admission of decisions into Role Memory.

Set-based DuckDB SQL (``admission_sql.py``, in stages) walks the execution chain of every decision that names a role
(decision -> preview -> consumption(s) -> execution(s) -> position(s) -> primary evaluation run)
and lists every reason code that applies; the status follows from the reasons alone, so
eligibility can never be "fixed" by editing a case: it is recomputed from the chain every run.

Choices this module commits to (also in docs/role_memory.md):
- The chain is read as known at ``as_of``: decisions, previews, consumptions and executions
  stamped after it do not exist yet; a position counts as settled only when every position of the
  execution is closed/liquidated with ``closed_at <= as_of``.
- A preview counts only when ``trade_previews`` has it *for this decision*; otherwise
  ``no_preview``. Without a consumption (or without a preview) ``no_execution`` is listed too, and
  a consumption naming an execution that does not exist also gives ``no_execution``.
- ``execution_id`` is set only when the preview was consumed exactly once; with several
  consumptions every named execution is checked and all of them are listed in the provenance.
- Automation outranks anything manual-looking: ``automation_flag`` or an automated source name
  (compared case- and separator-insensitively: "Strategy Studio" is ``strategy_studio``) gives
  ``automated_source``. Manual sources must match exactly; anything else is ``unknown_source``.
- ``insufficient_evaluation``: the primary run is not complete, or lacks its excess return or
  volatility (the noise band cannot be drawn without them).
- symbol / direction / account / market / scenario / text are the decision's (what the role
  decided); every fact about the trade (execution, settlement, run, outcome) is joined from the chain.

Scale: the cases are built and stamped inside DuckDB (``admitted_cases``: stages in temp tables
that spill under the connection's ``memory_limit``, the cases a view over them that
``write_cases`` reads once, straight into the table); Python only encodes the
provenance JSON (a Polars function DuckDB calls vector by vector, ``polars_json``), and the
invariants stream through Pandera in chunks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import duckdb
import polars as pl
import pyarrow as pa

from tradingmem_assets.defs.role_memory.admission_sql import ADMISSION_SCRIPT
from tradingmem_assets.defs.role_memory.reflection import outcome_sql
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.basis import touched_only
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.warehouse import staged, table_exists

ROLE_CASES_DTYPES = table_dtypes(tables.ROLE_CASES)
CONTENT_COLUMNS = [c for c in ROLE_CASES_DTYPES.names() if c not in ("case_id", "created_at", "updated_at")]

# Reasons that only wait for time (settlement, evaluation); every other reason is permanent.


ROLE_REGISTRY_DTYPES = pl.Schema(
    {
        "role_id": pl.String(),
        "skill_id": pl.String(),
        "maturity_days": pl.Int64(),
        "primary_profile": pl.String(),
        "noise_k": pl.Float64(),
        "required_evidence": pl.List(pl.String()),
        "failure_modes": pl.List(pl.String()),
        "reflection_prompt": pl.String(),
    }
)

_EMPTY_RUNS_DTYPES = pl.Schema(
    {
        "run_id": pl.String(),
        "decision_id": pl.String(),
        "execution_id": pl.String(),
        "profile_id": pl.String(),
        "run_version": pl.Int64(),
        "status": pl.String(),
        "is_primary": pl.Boolean(),
        "known_at": UTC_TS,
        "volatility": pl.Float64(),
        "excess_return": pl.Float64(),
    }
)


def case_id_for(decision_id: str, role_id: str) -> str:
    """Deterministic case id: the decision and the role it names."""
    return "rc_" + hashlib.sha256(f"{decision_id}|{role_id}".encode()).hexdigest()[:16]


def registry_frame(rows: list[dict]) -> pl.DataFrame:
    """The role registry (``RoleRegistry.rows()``) as a typed frame."""
    if not rows:
        return pl.DataFrame(schema=ROLE_REGISTRY_DTYPES)
    return pl.DataFrame(rows).select(ROLE_REGISTRY_DTYPES.names()).cast(ROLE_REGISTRY_DTYPES)  # type: ignore[arg-type]


def _expose(con: duckdb.DuckDBPyConnection, view: str, table: str | None, empty: pl.Schema) -> bool:
    """Expose ``table`` as ``view`` (a temp view), or an empty frame when it does not exist (yet).

    Returns True when a frame was registered (to be unregistered), False for a temp view.
    """
    if table is not None and table_exists(con, table):
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM {table}")
        return False
    con.register(view, pl.DataFrame(schema=empty))
    return True


def _release(con: duckdb.DuckDBPyConnection, view: str, registered: bool) -> None:
    if registered:
        con.unregister(view)
    else:
        con.execute(f"DROP VIEW IF EXISTS {view}")


@contextmanager
def _exposed(
    con: duckdb.DuckDBPyConnection, views: dict[str, tuple[str | None, pl.Schema]]
) -> Iterator[None]:
    """``_expose`` every ``view: (table, empty schema)`` for the duration of the block."""
    registered = {}
    try:
        for view, (table, empty) in views.items():
            registered[view] = _expose(con, view, table, empty)
        yield
    finally:
        for view, frame in registered.items():
            _release(con, view, frame)


@contextmanager
def polars_json(con: duckdb.DuckDBPyConnection, name: str, struct_type: duckdb.DuckDBPyType) -> Iterator[str]:
    """A SQL function ``name(struct) -> JSON`` that encodes with Polars, vector by vector.

    The stored provenance has always been Polars' ``struct.json_encode`` text; DuckDB's ``to_json``
    spells some floats differently (``0.00000636`` for ``6.36e-6``), which would change rows whose
    content did not change. DuckDB streams the struct through this function, so no frame of the
    whole table is ever built in Python; the text comes back typed as JSON (no re-parsing).
    """

    def encode(structs: pa.Array) -> pa.Array:
        text = pl.from_arrow(structs).struct.json_encode().to_arrow()  # type: ignore[union-attr]
        return pa.ExtensionArray.from_storage(pa.json_(text.type), text)

    con.create_function(name, encode, [struct_type], "JSON", type="arrow")  # type: ignore[arg-type]
    try:
        yield name
    finally:
        con.remove_function(name)


ADMITTED = "_tm_admitted_cases"


@contextmanager
def admitted_cases(
    con: duckdb.DuckDBPyConnection, registry: pl.DataFrame, as_of: datetime, touched: str | None = None
) -> Iterator[str]:
    """Admit every decision that names a role (only those of the table ``touched``, when given: an
    incremental run): yields the temp view ``ADMITTED`` of the cases, for the block.

    ``con`` exposes the raw landing tables and (when materialized) ``main.evaluation_runs``;
    ``registry`` is ``registry_frame(...)``. The view has the
    ``ROLE_CASES_DTYPES`` columns but ``updated_at``, in no particular order, with provenance as a
    struct: ``write_cases`` stamps, encodes and writes them, reading it once (every read computes
    the cases from the admission's stages again). The stages are dropped when the block ends.
    """
    script = ADMISSION_SCRIPT.format(
        into=ADMITTED,
        outcome=outcome_sql("excess_return", "noise_band"),
        decisions=touched_only(touched, "d.decision_id"),
        runs=touched_only(touched, "r.decision_id"),
    )
    con.register("_tm_roles", registry)
    try:
        with (
            _exposed(
                con,
                {"_tm_runs": (tables.EVALUATION_RUNS, _EMPTY_RUNS_DTYPES)},
            ),
            staged(con, script, {"as_of": as_of}),
        ):
            yield ADMITTED
    finally:
        con.unregister("_tm_roles")
