"""What the incremental tests share: run the main job, read an asset's materialization metadata,
read whole tables to compare two warehouses, and forget a table's recorded state (so that the
next run builds it in full, as a full rebuild of the same warehouse would)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl

from tradingmem_assets.defs.operations.runs import run_main_job
from tradingmem_assets.lib import tables


def run(instance, db, landing, as_of: str):
    """The main job on ``landing`` at ``as_of`` into the warehouse ``db``; it must succeed."""
    report = run_main_job(instance, database=str(db), landing_dir=str(landing), as_of=as_of)
    assert report.success, report.error
    return report


def materialization_metadata(instance, run_id: str, asset: str) -> dict:
    """The metadata values of ``asset``'s materialization (``raw/<table>`` for a landing table) in
    run ``run_id``."""
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION):
        materialization = record.dagster_event.event_specific_data.materialization
        if materialization.asset_key == dg.AssetKey.from_user_string(asset):
            return {k: v.value for k, v in materialization.metadata.items()}
    raise AssertionError(f"{asset} did not materialize")


def touched_count(metadata: dict, key: str) -> int:
    """How many decisions or customers an incremental run built, from its metadata text ``key``."""
    text = metadata[key]
    assert text.startswith("incremental since run"), text
    return int(text.split("only the ")[1].split(" ")[0])


def rows(db, names) -> dict[str, list]:
    """Every row of each table, sorted (the stored order is not part of the content)."""
    with duckdb.connect(str(db), read_only=True) as con:
        return {t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall())) for t in names}


def forget_state(db, table_like: str) -> None:
    """Drop the recorded state of the tables named like ``table_like`` (a SQL LIKE pattern)."""
    with duckdb.connect(str(db)) as con:
        con.execute(f"DELETE FROM {tables.RUN_TABLE_STATES} WHERE table_name LIKE ?", [table_like])


def at(as_of: str) -> datetime:
    """An ISO-8601 instant ("...Z") as an aware datetime."""
    return datetime.fromisoformat(as_of.replace("Z", "+00:00"))


def expected_reads(first: Path, grown: Path) -> dict[str, str]:
    """How the landing should read each file of ``grown`` that differs from ``first``'s: from its
    first new row when it starts with the earlier file's rows, else whole."""
    out = {}
    for path in sorted(grown.glob("*.parquet")):
        earlier, later = pl.read_parquet(first / path.name), pl.read_parquet(path)
        if not later.equals(earlier, null_equal=True):
            same_start = later.height >= earlier.height and later.head(earlier.height).equals(
                earlier, null_equal=True
            )
            out[path.stem] = "appended" if same_start else "whole"
    return out
