"""Evaluation invariants re-read from the stored table (a hand edit, e.g. a second primary run, fails)."""

from tradingmem_assets.defs.evaluation.invariants import EVALUATION_RUNS_INVARIANTS
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import StoredTableCheck, stored_table_checks
from tradingmem_assets.lib.dtypes import as_utc
from tradingmem_assets.lib.warehouse import read_frame

STORED_EVALUATION_RUNS_CHECK = "stored_evaluation_runs_invariants"

EVALUATION_CHECKS = stored_table_checks(
    [
        StoredTableCheck(
            name=STORED_EVALUATION_RUNS_CHECK,
            asset="evaluation_runs",
            table=tables.EVALUATION_RUNS,
            description="The stored runs: unique keys, known statuses, at most one primary run per decision.",
            read=lambda con, _at: as_utc(
                read_frame(con, f"SELECT * EXCLUDE (inputs_hash) FROM {tables.EVALUATION_RUNS}")
            ),
            invariants=lambda _at: EVALUATION_RUNS_INVARIANTS,
        )
    ]
)
