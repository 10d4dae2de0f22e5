"""A tiny landing world written to a temp folder, materialized through real Dagster into a real DuckDB."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl

from tradingmem_assets.definitions import defs
from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.defs.resources import WarehouseResource

AS_OF = "2024-07-01T00:00:00Z"
DEFS = defs()


def ts(text: str) -> datetime:
    """A UTC instant from 'YYYY-MM-DD[ HH:MM[:SS]]'."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


class World:
    def __init__(self, root: Path, instance: dg.DagsterInstance, as_of: str | None = AS_OF):
        self.root = root
        self.landing = root / "landing"
        self.landing.mkdir(parents=True, exist_ok=True)
        self.db = root / "tradingmem.duckdb"
        self.instance = instance
        self.as_of = as_of
        self.roles_file: str | None = None

    # --- landing ---------------------------------------------------------------------------
    def write(self, table: str, rows: Sequence[dict], fmt: str = "parquet") -> Path:
        """Write landing rows; columns not given are null. Replaces any earlier file of the table."""
        spec = LANDING_TABLES[table]
        for old in (self.landing / f"{table}.parquet", self.landing / f"{table}.csv"):
            old.unlink(missing_ok=True)
        schema = spec.polars_schema()
        frame = (
            pl.DataFrame(
                [{c: r.get(c) for c in spec.column_names} for r in rows], schema=schema, orient="row"
            )
            if rows
            else spec.empty()
        )
        path = self.landing / f"{table}.{fmt}"
        if fmt == "parquet":
            frame.write_parquet(path)
        else:
            frame.write_csv(path)
        return path

    def write_text(self, name: str, text: str) -> Path:
        path = self.landing / name
        path.write_text(text, encoding="utf-8")
        return path

    # --- dagster ---------------------------------------------------------------------------
    def resource(self, as_of: str | None = None, **overrides) -> WarehouseResource:
        kwargs = dict(
            database=str(self.db),
            landing_dir=str(self.landing),
            backup_dir=str(self.root / "backups"),
            as_of=as_of or self.as_of,
        )
        if self.roles_file:
            kwargs["roles_file"] = self.roles_file
        kwargs.update(overrides)
        return WarehouseResource(**kwargs)

    def materialize(
        self,
        selection: str | Iterable[str] | dg.AssetSelection | None = None,
        *,
        as_of: str | None = None,
        raise_on_error: bool = True,
        partition_key: str | None = None,
        **resource_overrides,
    ) -> dg.ExecuteInProcessResult:
        """Materialize (a selection of) the project's assets; default: the main job's selection."""
        from tradingmem_assets.defs.operations.jobs import MAIN_JOB_SELECTION

        if selection is None:
            selection = MAIN_JOB_SELECTION
        elif isinstance(selection, str):
            selection = dg.AssetSelection.from_coercible(selection)
        elif not isinstance(selection, dg.AssetSelection):
            selection = dg.AssetSelection.from_coercible(list(selection))
        assets = list(DEFS.assets or []) + list(DEFS.asset_checks or [])
        return dg.materialize(
            assets,
            selection=selection,
            resources={"warehouse": self.resource(as_of, **resource_overrides)},
            instance=self.instance,
            raise_on_error=raise_on_error,
            partition_key=partition_key,
        )

    # --- warehouse -------------------------------------------------------------------------
    def query(self, sql: str, params: Sequence | None = None) -> pl.DataFrame:
        con = duckdb.connect(str(self.db), read_only=True)
        try:
            con.execute("SET TimeZone = 'UTC'")
            return con.sql(sql, params=list(params) if params else None).pl()
        finally:
            con.close()

    def rows(self, sql: str, params: Sequence | None = None) -> list[tuple]:
        con = duckdb.connect(str(self.db), read_only=True)
        try:
            con.execute("SET TimeZone = 'UTC'")
            return con.execute(sql, list(params or [])).fetchall()
        finally:
            con.close()


def landing_selection(*tables: str) -> list[str]:
    return [f"raw/{t}" for t in tables]
