"""The warehouse resource: one DuckDB file, the landing folder and the run's time anchor.

Set up once per run (the in-process executor), it also records the run in ``warehouse_runs`` and
refuses a learning run that would move the warehouse back in time (SPEC section 16).
"""

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager
from datetime import datetime
from pathlib import Path

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource
from pydantic import Field, PrivateAttr

from tradingmem_assets.defs.evaluation.incremental import EVALUATION_TABLES
from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.defs.learning.heartbeat import write_heartbeat
from tradingmem_assets.defs.memory.promotion import PROMOTION_TABLES
from tradingmem_assets.defs.operations import ledger, replay
from tradingmem_assets.defs.operations.landing_state import fingerprint
from tradingmem_assets.defs.profile.incremental import PROFILE_TABLES
from tradingmem_assets.defs.role_memory.incremental import KEPT_TABLES as ROLE_CASES_TABLES
from tradingmem_assets.lib.basis import Basis, Visible, usable_basis
from tradingmem_assets.lib.registry import RoleRegistry, load_registry
from tradingmem_assets.lib.tables import LEARNING_ASSETS, LEARNING_JOB_NAMES, TRADING_MEMORY_JOB
from tradingmem_assets.lib.warehouse import RunDigests, compact, defer_vacuum, sparse_tables
from tradingmem_assets.settings import (
    SETTINGS,
    default_as_of,
    default_db_path,
    default_landing_dir,
    resolve_as_of,
)

# DuckDB's default cache is 80 % of RAM. The main job must stay within 3 GB at SF 10: 1.5 GB of
# buffer pool (the large queries run in stages that spill) plus the Python side of a step. (2 GB
# was measured again on 2026-12-05: see "Tried and not kept" in docs/performance.md.)
DUCKDB_MEMORY_LIMIT = os.environ.get("TRADINGMEM_DUCKDB_MEMORY_LIMIT") or "1.5GB"

# The derived tables an incremental asset builds on while they are as the latest run left them
# (``Unchanged.as_left_by``): a run that cannot be a replay hashes only these and the landing tables
# at its start. A table missing here is never found as left, so its asset builds in full.
KEPT_BY_INCREMENTAL_ASSETS = frozenset(
    {*EVALUATION_TABLES, *ROLE_CASES_TABLES, *PROFILE_TABLES, *PROMOTION_TABLES}
)

# Validated when the code location loads: a broken roles file stops the load with its message.
LOADED_REGISTRY: RoleRegistry = load_registry(SETTINGS.roles_file)


class WarehouseResource(DuckDBResource):
    """The DuckDB warehouse (``TRADINGMEM_DB``) plus the run-scoped inputs every asset shares."""

    landing_dir: str = Field(description="Folder of <table>.parquet / <table>.csv landing files.")
    backup_dir: str = Field(description="Folder that receives legacy migration backups.")
    as_of: str | None = Field(
        default=None, description="ISO-8601 UTC time anchor; the run's start time when unset."
    )
    roles_file: str = Field(
        default=str(SETTINGS.roles_file), description="The role registry (roles.yaml) the run uses."
    )
    memory_limit: str = Field(
        default=DUCKDB_MEMORY_LIMIT,
        description="DuckDB memory_limit of the warehouse's database instance (every connection of a "
        "run shares it); bigger work spills to disk instead of growing.",
    )
    _as_of_ts: datetime | None = PrivateAttr(default=None)

    _run_id: str | None = PrivateAttr(default=None)
    _learning_run: bool = PrivateAttr(default=False)
    _anchor: ExitStack | None = PrivateAttr(default=None)
    _inputs: str | None = PrivateAttr(default=None)
    _fingerprints: dict[str, str] = PrivateAttr(default_factory=dict)
    _unchanged: replay.Unchanged = PrivateAttr(default_factory=replay.Unchanged)
    _digests: RunDigests = PrivateAttr(default_factory=RunDigests)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        # Fixed once per run, so every asset of a run agrees on "now".
        self._as_of_ts = resolve_as_of(self.as_of)
        self._digests = RunDigests()  # this run's own: never a digest another run knew
        run = context.dagster_run
        if run is None or context.instance is None:
            return  # built outside a run (a direct asset invocation in a test)
        assets = _materialized_assets(context.instance, run)
        kind = ledger.run_kind(run.job_name, assets)
        # a run of a learning job that materializes a learning asset leaves a heartbeat, failed or ok
        self._learning_run = run.job_name in LEARNING_JOB_NAMES and bool(assets & LEARNING_ASSETS)
        if kind is not None:
            self._open_run(run, kind)
        # One database instance for the whole run: while this connection is open, every step's
        # connect() is a new connection to the same open instance (DuckDB's per-process cache),
        # not a reopen of the file and a checkpoint at each close. The file stays locked by the
        # run from its first step to its last, as DuckDB allows one writing process at a time.
        Path(self.database).parent.mkdir(parents=True, exist_ok=True)
        self._anchor = ExitStack()
        _cap_memory(self._anchor.enter_context(self.get_connection()), self.memory_limit)
        if kind == "learning":
            landing = fingerprint(Path(self.landing_dir), tables=LANDING_TABLES)
            self._fingerprints = replay.table_fingerprints(
                landing=landing,
                code=replay.code_fingerprint(),
                settings=SETTINGS,
                roles_file=Path(self.roles_file),
            )
            self._inputs = replay.inputs_fingerprint(
                as_of=self._as_of_ts, landing=landing, fingerprints=self._fingerprints
            )
            with self._open() as con:
                self._unchanged = replay.unchanged_tables(
                    con, inputs=self._inputs, fingerprints=self._fingerprints, kept=KEPT_BY_INCREMENTAL_ASSETS
                )
            # the run holds the file from here on: only its own steps change a table now
            self._unchanged.tell(self._digests)

    @property
    def replay_of(self) -> str | None:
        """The earlier run this one replays: same inputs, warehouse as that run left it (or None)."""
        return self._unchanged.replays

    @property
    def code_fingerprint(self) -> str | None:
        """The fingerprint of the code, settings and role registry of a main job run (else None)."""
        return self._fingerprints.get("*")

    @property
    def unchanged(self) -> replay.Unchanged:
        """The tables exactly as the latest successful main job run left them, from the same inputs
        (a landing table: the same file content; see ``operations/replay.py``)."""
        return self._unchanged

    def usable_basis(
        self,
        con: duckdb.DuckDBPyConnection,
        table: str,
        visible: Mapping[str, Visible | str],
        built: Iterable[str],
    ) -> Basis | None:
        """``lib.basis.usable_basis`` at this run's ``as_of``: the basis stored in ``table`` when the
        tables ``built`` on it are as its run left them (each must be in ``KEPT_BY_INCREMENTAL_ASSETS``,
        the only derived tables this run's start hashed)."""
        built = tuple(built)
        if missing := set(built) - KEPT_BY_INCREMENTAL_ASSETS:
            raise ValueError(
                f"{sorted(missing)} missing from KEPT_BY_INCREMENTAL_ASSETS: never found as left"
            )
        return usable_basis(
            con,
            table,
            visible,
            self.as_of_ts,
            lambda run_id: self.unchanged.as_left_by(con, run_id, built),
            self.digests,
        )

    @property
    def digests(self) -> RunDigests:
        """The table digests this run knows (``lib.warehouse.RunDigests``): a step that writes a
        table tells it here, so the checks and the run's record after it need not hash it again."""
        return self._digests

    def _open_run(self, run: dg.DagsterRun, kind: str) -> None:
        with self._open() as con:
            try:
                ledger.open_run(
                    con,
                    run_id=run.run_id,
                    job_name=run.job_name,
                    kind=kind,
                    as_of=self._as_of_ts,
                    database=self.database,
                )
            except ledger.RunRefusedError as exc:
                raise dg.Failure(description=str(exc)) from exc
        self._run_id = run.run_id

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        try:
            if self._run_id is not None and context.instance is not None:
                failures = context.instance.all_logs(self._run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
                with self._open() as con:
                    ledger.close_run(con, run_id=self._run_id, failed=bool(failures))
                    if failures and self._learning_run:
                        self._failed_heartbeat(con, context, failures[0].dagster_event)
                    if not failures:  # what the run's deletes left stored, where it outgrew its share
                        for table, live, dead in sparse_tables(con):
                            compact(con, table)
                            context.log.info(f"compacted {table}: {dead} deleted rows dropped, {live} kept")
                    if (
                        self._inputs is not None
                        and not failures
                        and context.dagster_run.job_name == TRADING_MEMORY_JOB
                    ):
                        replay.record(
                            con,
                            run_id=self._run_id,
                            as_of=self.as_of_ts,
                            inputs=self._inputs,
                            fingerprints=self._fingerprints,
                            # a replay materialized nothing: the warehouse is as this run found it
                            states=self._unchanged.states if self.replay_of else None,
                            digests=self._digests,
                        )
        finally:
            if self._anchor is not None:
                self._anchor.close()  # the last connection: DuckDB checkpoints the file
                self._anchor = None

    def _failed_heartbeat(
        self, con: duckdb.DuckDBPyConnection, context: dg.InitResourceContext, failure: dg.DagsterEvent | None
    ) -> None:
        """The learning run's ``failed`` heartbeat (it replaces an ``ok`` its heartbeat step wrote),
        naming its first failed step. Written as the run ends, once, instead of from a failure hook
        on every step: a hook adds an event to each step's log (``HOOK_SKIPPED`` when nothing failed),
        and each event is a write of the instance's storage."""
        data = failure.step_failure_data if failure is not None else None
        error = data.error if data is not None else None
        error = error.cause if error is not None and error.cause is not None else error  # the asset's own
        detail = {
            "failed_step": failure.step_key if failure is not None else None,
            "error": error.message.strip()[:500] if error is not None else None,
        }
        try:
            write_heartbeat(
                con,
                run_id=context.dagster_run.run_id,
                job_name=context.dagster_run.job_name,
                status="failed",
                as_of=self.as_of_ts,
                detail=detail,
            )
        except Exception as exc:  # the run's own failure is what it reports
            context.log.error(f"could not write the failed learning heartbeat of run {self._run_id}: {exc}")

    @property
    def records_run(self) -> bool:
        """Whether this run writes the warehouse (recorded in warehouse_runs), as opposed to a
        checks-only run reading what earlier runs built."""
        return self._run_id is not None

    @property
    def as_of_ts(self) -> datetime:
        if self._as_of_ts is None:
            self._as_of_ts = resolve_as_of(self.as_of)
        return self._as_of_ts

    def registry(self) -> RoleRegistry:
        if Path(self.roles_file) == Path(LOADED_REGISTRY.source):
            return LOADED_REGISTRY
        return load_registry(Path(self.roles_file))

    def connect(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A writable connection that is closed even when the block raises."""
        return self._open()

    @contextmanager
    def _open(self) -> Iterator[duckdb.DuckDBPyConnection]:
        # the run ledger uses this too: it is the resource's own bookkeeping, not an asset's work
        Path(self.database).parent.mkdir(parents=True, exist_ok=True)
        with self.get_connection() as con:
            try:
                con.execute("SET TimeZone = 'UTC'")
                if self._anchor is None:  # else the anchor's instance, capped once as it opened
                    _cap_memory(con, self.memory_limit)
                defer_vacuum(con)  # the run compacts what needs it as it ends (teardown)
                con.execute("CREATE SCHEMA IF NOT EXISTS raw")
                yield con
            finally:
                con.close()


def _cap_memory(con: duckdb.DuckDBPyConnection, limit: str) -> None:
    """Cap the buffer pool of the database instance ``con`` belongs to (a global setting). DuckDB
    answers every ``SET memory_limit``, even to the limit it has, by returning all the memory its
    allocator holds free to the system, so that the next allocations fault their pages in again:
    at SF 10 setting it on each of a run's 43 connections cost 0.8 million page faults and 2–3 s
    of system time. A run sets it once, on the connection that keeps its instance open."""
    con.execute("SET memory_limit = ?", [limit]).fetchall()


def _materialized_assets(instance: dg.DagsterInstance, run: dg.DagsterRun) -> set[str]:
    """The asset keys the run's steps materialize, from its execution plan (checks excluded)."""
    plan = instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
    chosen = set(run.step_keys_to_execute) if run.step_keys_to_execute is not None else None
    return {
        output.properties.asset_key.to_user_string()
        for step in plan.steps
        if chosen is None or step.key in chosen
        for output in step.outputs
        if output.properties is not None and output.properties.asset_key is not None
    }


def warehouse_from_env() -> WarehouseResource:
    """The resource as configured by TRADINGMEM_DB / TRADINGMEM_LANDING_DIR / TRADINGMEM_AS_OF."""
    db = default_db_path()
    return WarehouseResource(
        database=db,
        landing_dir=default_landing_dir(),
        backup_dir=str(Path(db).parent / "backups"),
        as_of=default_as_of(),
    )


@dg.definitions
def resources() -> dg.Definitions:
    # DuckDB has one writer: ad-hoc runs (`dagster asset materialize`, UI backfills) execute their
    # steps in one process too, instead of one subprocess per step contending for the file lock.
    return dg.Definitions(resources={"warehouse": warehouse_from_env()}, executor=dg.in_process_executor)
