"""Evaluation invariants re-read from the stored table (a hand edit, e.g. a second primary run, fails)."""

from tradingmem_assets.defs.evaluation.invariants import EVALUATION_RUNS_INVARIANTS, validate_runs
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import StoredTableCheck, stored_table_checks

STORED_EVALUATION_RUNS_CHECK = "stored_evaluation_runs_invariants"

EVALUATION_CHECKS = stored_table_checks(
    [
        StoredTableCheck(
            STORED_EVALUATION_RUNS_CHECK,
            "evaluation_runs",
            "The stored runs: unique keys, known statuses, at most one primary run per decision.",
            EVALUATION_RUNS_INVARIANTS,
            validate_stored=lambda con, _at: validate_runs(con, tables.EVALUATION_RUNS),
            validated_at_write=True,
        )
    ]
)
