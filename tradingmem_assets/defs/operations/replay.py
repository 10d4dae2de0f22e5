"""Replays recognized by content fingerprints (SPEC section 14): unchanged inputs are not recomputed.

A learning run is a *replay* of an earlier successful ``trading_memory_job`` run when both hold:

- the same inputs: the same ``as_of``, the same landing files (names, sizes and content hashes),
  the same code (the package's own source files and the versions of the libraries that compute)
  and the same settings (``Settings`` and the role registry's content);
- the warehouse is as that run left it: every table the main job writes has the storage layout it
  had when the run ended (DuckDB's ``pragma_storage_info``: any write to a table, by hand or by a
  run, rewrites its blocks), so a derived table edited since is never taken as current.

Every derived row is a function of those inputs (SPEC section 16: an equal ``as_of`` is a replay
that changes no derived row), so the landing assets of a replay materialize nothing and say why,
and Dagster skips everything downstream of them. ``run_inputs`` keeps one row per successful main
job run: its inputs fingerprint and the storage fingerprint at its end.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from datetime import datetime
from importlib import metadata
from pathlib import Path

import duckdb
import polars as pl

from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.defs.operations.landing_state import fingerprint
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.warehouse import ensure_table, table_exists
from tradingmem_assets.settings import Settings

RUN_INPUTS_DTYPES = pl.Schema(
    {
        "run_id": pl.String(),
        "as_of": UTC_TS,
        "inputs_fingerprint": pl.String(),
        "storage_fingerprint": pl.String(),
    }
)
PACKAGE = Path(__file__).resolve().parents[2]
COMPUTING_LIBRARIES = ("duckdb", "polars", "pandera", "scikit-learn", "numpy", "pyarrow")

# tables whose rows record runs or other jobs' work: written without changing any derived row
NOT_DERIVED = frozenset(
    {
        tables.WAREHOUSE_RUNS,
        tables.RUN_INPUTS,
        tables.METHODOLOGY_CRON_RUNS,
        tables.LLM_USAGE,
        tables.METHODOLOGY_AUDIT_REPORTS,
        tables.MIGRATION_BACKUPS,
        tables.MIGRATED_ROLE_CASES,
        tables.MIGRATION_REJECTS,
        tables.MIGRATION_CONSERVATION_REPORT,
    }
)


def _digest(parts: list[bytes]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def code_fingerprint() -> str:
    """The package's source and data files and the versions of the libraries that compute derived rows."""
    sources = sorted(
        p
        for p in PACKAGE.rglob("*")
        if p.suffix in (".py", ".yaml", ".toml") and "__pycache__" not in p.parts
    )
    versions = [f"{name}=={metadata.version(name)}".encode() for name in COMPUTING_LIBRARIES]
    return _digest(
        [
            *versions,
            *(part for p in sources for part in (str(p.relative_to(PACKAGE)).encode(), p.read_bytes())),
        ]
    )


def inputs_fingerprint(*, as_of: datetime, landing_dir: Path, settings: Settings, roles_file: Path) -> str:
    """Everything a learning run's derived rows are computed from."""
    return _digest(
        [
            as_of.isoformat().encode(),
            fingerprint(landing_dir, tables=LANDING_TABLES).key.encode(),  # what the landing sensor keys on
            code_fingerprint().encode(),
            repr(sorted(asdict(settings).items())).encode(),
            Path(roles_file).read_bytes(),
        ]
    )


def storage_fingerprint(con: duckdb.DuckDBPyConnection) -> str:
    """The storage layout of every derived table (call after a checkpoint: it reads stored blocks)."""
    names = [
        f"{schema}.{name}"
        for schema, name in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name IN ('main', 'raw') ORDER BY 1, 2"
        ).fetchall()
        if f"{schema}.{name}" not in NOT_DERIVED
    ]
    layout = [
        con.execute(
            "SELECT count(*), coalesce(sum(hash(row_group_id, column_id, segment_id, count, block_id, block_offset, "
            f"stats::VARCHAR)), 0)::VARCHAR FROM pragma_storage_info('{name}')"
        ).fetchall()[0]
        for name in names
    ]
    return _digest([f"{name}:{n}:{h}".encode() for name, (n, h) in zip(names, layout, strict=True)])


def record(
    con: duckdb.DuckDBPyConnection, *, run_id: str, as_of: datetime, inputs: str, storage: str
) -> None:
    """Remember a successful main job run's inputs and the warehouse it left."""
    ensure_table(con, tables.RUN_INPUTS, pl.DataFrame(schema=RUN_INPUTS_DTYPES))
    con.execute(f"INSERT INTO {tables.RUN_INPUTS} VALUES (?, ?, ?, ?)", [run_id, as_of, inputs, storage])


def replay_of(con: duckdb.DuckDBPyConnection, *, inputs: str, storage: str) -> str | None:
    """The run this state and these inputs replay: the latest recorded run that had the same inputs
    and left the warehouse exactly as it is now (None: the run must compute)."""
    if not table_exists(con, tables.RUN_INPUTS):
        return None
    latest = con.execute(
        f"SELECT run_id, inputs_fingerprint, storage_fingerprint FROM {tables.RUN_INPUTS} "
        "ORDER BY as_of DESC, rowid DESC LIMIT 1"
    ).fetchall()
    if latest and latest[0][1] == inputs and latest[0][2] == storage:
        return latest[0][0]
    return None
