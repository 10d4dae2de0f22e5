"""Landing conservation re-read from the stored tables: rows in the landing file = accepted rows in
``raw.<table>`` + its rows of ``raw_rejects`` (a hand edit or a landing file newer than the last
build fails it, saying which)."""

from pathlib import Path

import dagster as dg

from tradingmem_assets.defs.landing.ingest import count_landing_rows, find_landing_file
from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.warehouse import scalar, table_exists

STORED_ROWS_CONSERVED_CHECK = "stored_rows_read_equal_accepted_plus_rejected"


def _stored_conservation_check(table: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        name=STORED_ROWS_CONSERVED_CHECK,
        asset=dg.AssetKey(raw_key(table)),
        blocking=True,
        description="The landing file's rows = stored accepted rows + stored rejects of this table.",
        required_resource_keys={"warehouse"},
    )
    def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        warehouse = context.resources.warehouse
        try:
            path = find_landing_file(Path(warehouse.landing_dir), table)
            rows_read = 0 if path is None else count_landing_rows(path)
            with warehouse.connect() as con:
                raw = tables.raw_table(table)
                accepted = scalar(con, f"SELECT count(*) FROM {raw}") if table_exists(con, raw) else 0
                rejected = (
                    scalar(con, f"SELECT count(*) FROM {tables.RAW_REJECTS} WHERE table_name = ?", [table])
                    if table_exists(con, tables.RAW_REJECTS)
                    else 0
                )
        except Exception as exc:  # a check that raises records no evaluation
            return dg.AssetCheckResult(
                passed=False, metadata={"error": f"{type(exc).__name__}: {exc}"[:2000]}
            )
        passed = rows_read == accepted + rejected
        metadata = {"rows_read": rows_read, "accepted": accepted, "rejected": rejected}
        if not passed:
            metadata["why"] = (
                f"the landing file holds {rows_read} rows but the warehouse {accepted} + {rejected}: "
                "a hand edit of raw tables, or landing data newer than the last trading_memory_job"
            )
        return dg.AssetCheckResult(passed=passed, metadata=metadata)

    return _check


LANDING_CHECKS = [_stored_conservation_check(name) for name in LANDING_TABLES]
