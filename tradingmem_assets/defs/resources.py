"""The warehouse resource: one DuckDB file, the landing folder and the run's time anchor."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource
from pydantic import Field, PrivateAttr

from tradingmem_assets.lib.registry import RoleRegistry, load_registry
from tradingmem_assets.settings import (
    SETTINGS,
    default_as_of,
    default_db_path,
    default_landing_dir,
    resolve_as_of,
)

# DuckDB's default cache is 80 % of RAM; the warehouse job must stay well inside 4 GB at SF 10.
DUCKDB_MEMORY_LIMIT = os.environ.get("TRADINGMEM_DUCKDB_MEMORY_LIMIT") or "2GB"

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
        description="DuckDB memory_limit per connection; bigger work spills to disk instead of growing.",
    )
    _as_of_ts: datetime | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        # Fixed once per run, so every asset of a run agrees on "now".
        self._as_of_ts = resolve_as_of(self.as_of)

    @property
    def as_of_ts(self) -> datetime:
        if self._as_of_ts is None:
            self._as_of_ts = resolve_as_of(self.as_of)
        return self._as_of_ts

    def registry(self) -> RoleRegistry:
        if Path(self.roles_file) == Path(LOADED_REGISTRY.source):
            return LOADED_REGISTRY
        return load_registry(Path(self.roles_file))

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A writable connection that is closed even when the block raises."""
        Path(self.database).parent.mkdir(parents=True, exist_ok=True)
        with self.get_connection() as con:
            try:
                con.execute("SET TimeZone = 'UTC'")
                con.execute("SET memory_limit = ?", [self.memory_limit]).fetchall()
                con.execute("CREATE SCHEMA IF NOT EXISTS raw")
                yield con
            finally:
                con.close()


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
