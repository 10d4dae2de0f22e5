"""Landing assets: one per landing table, each writing ``raw.<table>`` and its rows of ``raw_rejects``."""

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl

from tradingmem_assets.defs.landing.appended import land, landed
from tradingmem_assets.defs.landing.ingest import LandingFileError, count_landing_rows, find_landing_file
from tradingmem_assets.defs.landing.invariants import LANDING_TABLES, RAW_REJECTS_DTYPES, LandingTable
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import (
    blocking_check,
    feed_freshness,
    table_metadata,
    table_spec,
)
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.warehouse import ensure_table, scalar, transaction

ROWS_CONSERVED_CHECK = "rows_read_equal_accepted_plus_rejected"


def _landing_asset(spec: LandingTable) -> dg.AssetsDefinition:
    key = dg.AssetKey(raw_key(spec.name))

    # A multi-asset of one asset, so that a replay (operations/replay.py) can end without a
    # materialization and without its check: Dagster then skips everything downstream.
    @dg.multi_asset(
        name=f"raw__{spec.name}",
        specs=[
            table_spec(
                key,
                f"{spec.description} Validated rows of landing file {spec.name}.parquet|csv.",
                group_name=tables.LANDING_GROUP,
                freshness_policy=feed_freshness(),
                skippable=True,
            )
        ],
        can_subset=True,
        check_specs=[
            blocking_check(
                ROWS_CONSERVED_CHECK,
                key,
                "Every landing row was either accepted into raw or written to raw_rejects.",
            )
        ],
    )
    def _asset(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource
    ) -> Iterator[dg.MaterializeResult | dg.AssetObservation]:
        if warehouse.replay_of is not None:
            context.log.info(
                f"replay of run {warehouse.replay_of}: raw.{spec.name} and everything after it are kept"
            )
            yield dg.AssetObservation(
                asset_key=key,
                metadata={
                    "skipped": "unchanged inputs: same landing files, as_of, code and settings, and the "
                    "warehouse is as that run left it",
                    "replay_of": warehouse.replay_of,
                },
            )
            return
        landing_dir = Path(warehouse.landing_dir)
        unchanged = warehouse.unchanged
        since = unchanged.run_id if tables.raw_table(spec.name) in unchanged.tables else None
        try:
            if since is not None:
                path = find_landing_file(landing_dir, spec.name)
                rows_read = 0 if path is None else count_landing_rows(path)
                with warehouse.connect() as con:
                    counts = _stored_counts(con, spec.name)
                context.log.info(f"raw.{spec.name} is kept: its landing file is unchanged since run {since}")
                extra = {
                    "source_file": dg.MetadataValue.text(path.name if path else "(none: empty table)"),
                    "skipped": "unchanged landing file content, code and settings, and raw."
                    f"{spec.name} and its rejects are as run {since} left them: not ingested again",
                    "unchanged_since_run": since,
                }
            else:
                with warehouse.connect() as con:
                    with transaction(con):
                        ensure_table(con, tables.RAW_REJECTS, pl.DataFrame(schema=RAW_REJECTS_DTYPES))
                        ingested, how = land(
                            con, landing_dir, spec.name, warehouse.code_fingerprint, warehouse.digests
                        )
                        counts = _stored_counts(con, spec.name)
                    landed(con, spec.name, warehouse.digests)
                rows_read, source_file = ingested.rows_read, ingested.source_file
                filled = ingested.filled_columns
                if source_file is None:
                    context.log.info(f"no landing file for {spec.name}: raw.{spec.name} is an empty table")
                extra = {
                    "source_file": dg.MetadataValue.text(source_file or "(none: empty table)"),
                    "columns_filled_with_null": ", ".join(filled) or "(none)",
                    "ingested": dg.MetadataValue.text(how),
                }
        except LandingFileError as exc:
            raise dg.Failure(description=str(exc)) from exc
        accepted, rejected, reasons = counts
        yield dg.MaterializeResult(
            metadata={
                **table_metadata(f"raw.{spec.name}", spec.polars_schema(), row_count=accepted),
                **extra,
                "rows_read": rows_read,
                "accepted": accepted,
                "rejected": rejected,
                "reject_reasons": dg.MetadataValue.md(
                    "\n".join(f"- `{r}`: {n}" for r, n in reasons) or "no rejects"
                ),
            },
            check_results=[
                dg.AssetCheckResult(
                    check_name=ROWS_CONSERVED_CHECK,
                    passed=bool(rows_read == accepted + rejected),
                    metadata={"rows_read": rows_read, "accepted": accepted, "rejected": rejected},
                )
            ],
        )

    return _asset


def _stored_counts(con, table: str) -> tuple[int, int, list[tuple[str, int]]]:
    """Accepted rows of ``raw.<table>``, its rejects, and the ten most frequent reject reasons."""
    accepted = scalar(con, f"SELECT count(*) FROM raw.{table}")
    rejected = scalar(con, f"SELECT count(*) FROM {tables.RAW_REJECTS} WHERE table_name = ?", [table])
    reasons = con.execute(
        f"SELECT reason, count(*) AS n FROM {tables.RAW_REJECTS} WHERE table_name = ? "
        "GROUP BY reason ORDER BY n DESC, reason LIMIT 10",
        [table],
    ).fetchall()
    return accepted, rejected, reasons


LANDING_ASSETS: list[dg.AssetsDefinition] = [_landing_asset(spec) for spec in LANDING_TABLES.values()]
