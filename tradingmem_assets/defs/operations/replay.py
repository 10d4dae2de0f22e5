"""Replays recognized by content fingerprints (SPEC section 14): unchanged inputs are not recomputed.

A learning run is a *replay* of an earlier successful ``trading_memory_job`` run when both hold:

- the same inputs: the same ``as_of``, the same landing files (names, sizes and content hashes),
  the same code (the package's own source files and the versions of the libraries that compute)
  and the same settings (``Settings`` and the role registry's content);
- the warehouse is as that run left it: every table the main job writes has the content it had
  when the run ended (its row count and the sum of its rows' hashes, ``rows_digest``), so a
  derived table edited since, by any number of edits, is never taken as current. Not a storage
  layout (``pragma_storage_info``): DuckDB reuses freed blocks, so two edits of one column can
  leave the layout a run recorded with other values in it.

Every derived row is a function of those inputs (SPEC section 16: an equal ``as_of`` is a replay
that changes no derived row), so the landing assets of a replay materialize nothing and say why,
and Dagster skips everything downstream of them. ``run_inputs`` keeps one row per successful main
job run: its inputs fingerprint and the contents fingerprint at its end.

A run that is not a replay (a later ``as_of``, another landing file) still reuses what did not
change. ``run_table_states`` keeps, per successful main job run and table, what the table was
computed from (its input fingerprint) and its content at the run's end (for a raw table also a
digest of its rows of ``raw_rejects``, a shared table). A table is *unchanged
since* the latest such run when both are equal now:

- a landing table's inputs are its file's content, the code and the settings; ingestion does not
  depend on ``as_of`` (raw tables keep every row; point-in-time reads filter on the rows' own
  instants), so an unchanged landing table is not ingested again;
- a derived table's inputs are the code, the settings and the role registry; its rows also
  depend on the raw tables and on ``as_of``, which the asset weighs itself (evaluation
  recomputes only the decisions the new instants can change: ``defs/evaluation``).

Such a run hashes at its start only the landing tables and the derived tables an incremental
asset builds on (``unchanged_tables``' ``kept``); only a run with the latest run's inputs, which
may be a replay, hashes them all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from importlib import metadata
from pathlib import Path

import duckdb
import polars as pl

from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.defs.operations.landing_state import LandingState
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.warehouse import (
    NO_ROWS,
    RunDigests,
    append_rows,
    ensure_table,
    rejects_key,
    rows_digest,
    rows_digest_sql,
    table_columns,
    table_exists,
)
from tradingmem_assets.settings import Settings

RUN_INPUTS_DTYPES = pl.Schema(
    {
        "run_id": pl.String(),
        "as_of": UTC_TS,
        "inputs_fingerprint": pl.String(),
        "contents_fingerprint": pl.String(),
    }
)
RUN_TABLE_STATES_DTYPES = pl.Schema(
    {
        "run_id": pl.String(),
        "table_name": pl.String(),
        "input_fingerprint": pl.String(),
        "content_digest": pl.String(),
        "rejects_digest": pl.String(),
    }
)
PACKAGE = Path(__file__).resolve().parents[2]
COMPUTING_LIBRARIES = ("duckdb", "polars", "pandera", "scikit-learn", "numpy", "pyarrow")

# tables whose rows record runs or other jobs' work: written without changing any derived row
NOT_DERIVED = frozenset(
    {
        tables.WAREHOUSE_RUNS,
        tables.RUN_INPUTS,
        tables.RUN_TABLE_STATES,
        tables.LANDING_INGESTS,
        tables.VALIDATED_CONTENTS,
        tables.EVALUATION_BASIS,
        tables.ROLE_CASES_BASIS,
        tables.PROFILE_BASIS,
        tables.PROMOTION_BASIS,
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


def inputs_fingerprint(*, as_of: datetime, landing: LandingState, fingerprints: dict[str, str]) -> str:
    """Everything a learning run's derived rows are computed from: ``as_of``, the landing files
    (what the landing sensor keys on) and the code, settings and registry (``fingerprints["*"]``)."""
    return _digest([as_of.isoformat().encode(), landing.key.encode(), fingerprints["*"].encode()])


def table_fingerprints(
    *, landing: LandingState, code: str, settings: Settings, roles_file: Path
) -> dict[str, str]:
    """What each table is computed from, besides ``as_of`` and the raw tables it reads (see the
    module's docstring): ``raw.<table>`` for every landing table, ``*`` for every derived table."""
    files = landing.by_name()
    settings_part = repr(sorted(asdict(settings).items())).encode()
    out = {"*": _digest([code.encode(), settings_part, Path(roles_file).read_bytes()])}
    for table in LANDING_TABLES:
        contents = [
            f"{name}:{files[name].sha256 if name in files else 'absent'}".encode()
            for name in (f"{table}.parquet", f"{table}.csv")
        ]
        # the folder too: a reject names its file
        out[tables.raw_table(table)] = _digest(
            [table.encode(), landing.folder.encode(), *contents, code.encode(), settings_part]
        )
    return out


def _derived_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every table of the warehouse a main job run derives (not the records of runs and jobs)."""
    return [
        f"{schema}.{name}"
        for schema, name in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name IN ('main', 'raw') ORDER BY 1, 2"
        ).fetchall()
        if f"{schema}.{name}" not in NOT_DERIVED
    ]


def _derived_views(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Every view a main job run defines (``evaluation_components``), by name: its definition's
    digest (its rows are its tables', which are hashed)."""
    return {
        f"{schema}.{name}": "view:" + hashlib.sha256(sql.encode()).hexdigest()
        for schema, name, sql in con.execute(
            "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE database_name = current_database() "
            "AND NOT internal AND schema_name IN ('main', 'raw') ORDER BY 1, 2"
        ).fetchall()
    }


def table_contents(
    con: duckdb.DuckDBPyConnection, digests: RunDigests | None = None, only: Iterable[str] | None = None
) -> dict[str, str]:
    """A digest of every derived table's rows (``rows_digest``: row count and sum of row hashes), by
    name, and of every view's definition; ``digests``: those the run already knows; ``only``: of
    these tables alone (those of them that exist). Never a storage layout: DuckDB reuses freed
    blocks, so two hand edits can leave another content with the same ``pragma_storage_info``.
    4-7 s at SF 10, hashing in DuckDB."""
    digest_of = rows_digest if digests is None else digests.of
    wanted = None if only is None else set(only)
    contents = {
        name: digest_of(con, name) for name in _derived_tables(con) if wanted is None or name in wanted
    }
    views = _derived_views(con)
    return contents | {name: views[name] for name in views if wanted is None or name in wanted}


def contents_fingerprint(contents: dict[str, str]) -> str:
    """One digest of every derived table's content (``table_contents``)."""
    return _digest([f"{name}:{digest}".encode() for name, digest in sorted(contents.items())])


def _current(con: duckdb.DuckDBPyConnection, table: str, dtypes: pl.Schema) -> bool:
    """Whether the record table exists with the columns this code writes (a warehouse built by an
    older version may have other ones: those records are not read, and the next record drops them)."""
    return table_exists(con, table) and table_columns(con, table) == list(dtypes)


NO_REJECTS = "0:none"  # a landing table's rejects digest in run_table_states when it has none


def _rejects_digests(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Per landing table, a digest of its rows of ``raw_rejects`` (its rows only: the table is shared)."""
    if not table_exists(con, tables.RAW_REJECTS):
        return {}
    return dict(
        con.execute(
            f"SELECT table_name, {rows_digest_sql('r')} FROM {tables.RAW_REJECTS} r GROUP BY table_name"
        ).fetchall()
    )


def _states(
    con: duckdb.DuckDBPyConnection, fingerprints: dict[str, str], contents: dict[str, str]
) -> dict[str, tuple[str, str, str]]:
    """Per stored table: (input fingerprint, content digest, rejects digest; '-' for a derived table)."""
    rejects = _rejects_digests(con)
    raw = {tables.raw_table(t): t for t in LANDING_TABLES}
    return {
        name: (
            fingerprints.get(name, fingerprints["*"]),
            content,
            rejects.get(raw[name], NO_REJECTS) if name in raw else "-",
        )
        for name, content in contents.items()
    }


def record(
    con: duckdb.DuckDBPyConnection,
    *,
    run_id: str,
    as_of: datetime,
    inputs: str,
    fingerprints: dict[str, str],
    states: dict[str, tuple[str, str, str]] | None = None,
    digests: RunDigests | None = None,
) -> None:
    """Remember a successful main job run's inputs and the content of the warehouse it left
    (``states``: already known, as a replay's are, ``Unchanged.states``: it wrote no table;
    ``digests``: the tables whose content the run already knows)."""
    if states is None:
        states = _states(con, fingerprints, table_contents(con, digests))
    for table, dtypes in (
        (tables.RUN_INPUTS, RUN_INPUTS_DTYPES),
        (tables.RUN_TABLE_STATES, RUN_TABLE_STATES_DTYPES),
    ):
        if not _current(con, table, dtypes):
            con.execute(f"DROP TABLE IF EXISTS {table}")
            ensure_table(con, table, pl.DataFrame(schema=dtypes))
    con.execute(
        f"INSERT INTO {tables.RUN_INPUTS} VALUES (?, ?, ?, ?)",
        [run_id, as_of, inputs, contents_fingerprint({name: state[1] for name, state in states.items()})],
    )
    rows = pl.DataFrame(
        [(run_id, name, *state) for name, state in states.items()],
        schema=RUN_TABLE_STATES_DTYPES,
        orient="row",
    )
    append_rows(con, tables.RUN_TABLE_STATES, rows)


def _latest_run(con: duckdb.DuckDBPyConnection) -> tuple[str, str, str] | None:
    if not _current(con, tables.RUN_INPUTS, RUN_INPUTS_DTYPES):
        return None
    latest = con.execute(
        f"SELECT run_id, inputs_fingerprint, contents_fingerprint FROM {tables.RUN_INPUTS} "
        "ORDER BY as_of DESC, rowid DESC LIMIT 1"
    ).fetchall()
    return latest[0] if latest else None


@dataclass(frozen=True)
class Unchanged:
    """The tables that are exactly as the latest successful main job run left them, from the same
    inputs (``run_id`` None: no such run, nothing is reused)."""

    run_id: str | None = None
    tables: frozenset[str] = frozenset()
    states: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # every table's, now
    replays: str | None = None  # the latest run, when these inputs are its and nothing changed since

    def tell(self, digests: RunDigests) -> None:
        """Tell ``digests`` what every landing table and its rejects held at the run's start: only
        their landing step writes them, and it forgets them first. A derived table is not told:
        nothing would forget it when a step rewrites it."""
        for table in LANDING_TABLES:
            state = self.states.get(tables.raw_table(table))
            if state is not None:
                digests.note(tables.raw_table(table), state[1])
                digests.note(rejects_key(table), NO_ROWS if state[2] == NO_REJECTS else state[2])

    def as_left_by(self, con: duckdb.DuckDBPyConnection, run_id: str, names: Iterable[str]) -> bool:
        """Whether these tables are now exactly as run ``run_id`` left them, from the same inputs."""
        recorded = recorded_states(con, run_id)
        return all(name in self.states and recorded.get(name) == self.states[name] for name in names)


def recorded_states(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, tuple[str, str, str]]:
    """Per table, its state at the end of run ``run_id`` (empty: no such record)."""
    if not _current(con, tables.RUN_TABLE_STATES, RUN_TABLE_STATES_DTYPES):
        return {}
    return {
        name: (fingerprint_, content, rejects)
        for name, fingerprint_, content, rejects in con.execute(
            "SELECT table_name, input_fingerprint, content_digest, rejects_digest "
            f"FROM {tables.RUN_TABLE_STATES} WHERE run_id = ?",
            [run_id],
        ).fetchall()
    }


def unchanged_tables(
    con: duckdb.DuckDBPyConnection, *, inputs: str, fingerprints: dict[str, str], kept: Iterable[str] = ()
) -> Unchanged:
    """Which tables need no recomputation from their own inputs, as of the latest recorded run, and
    whether this run replays it: the same inputs, and every derived table's content as it left them
    (the contents are hashed only when such a run exists).

    Only a run with that run's inputs can replay it, so only such a run hashes every table. Any
    other run hashes the landing tables and ``kept``, the derived tables an incremental asset may
    build on (asked with ``Unchanged.as_left_by``, which is false for a table not hashed here): the
    other derived tables are rewritten by their steps, and the run's end hashes them as written."""
    latest = _latest_run(con)
    if latest is None:
        return Unchanged()
    landing = [tables.raw_table(t) for t in LANDING_TABLES]
    contents = table_contents(con, only=None if latest[1] == inputs else [*landing, *kept])
    now = _states(con, fingerprints, contents)
    recorded = recorded_states(con, latest[0])
    replays = latest[0] if latest[1] == inputs and latest[2] == contents_fingerprint(contents) else None
    return Unchanged(
        run_id=latest[0],
        tables=frozenset(name for name, state in now.items() if recorded.get(name) == state),
        states=now,
        replays=replays,
    )
