"""The audit's jobs: one audit pass, and the alert run that records an isolation violation."""

import json
from datetime import UTC, datetime

import dagster as dg
import polars as pl
from pydantic import Field

from tradingmem_assets.defs.audit.assets import isolation_finding
from tradingmem_assets.defs.audit.checks import (
    AUDIT_ASSET_KEY,
    ISOLATION_CHECK,
    SHA_AFTER_KEY,
    SHA_BEFORE_KEY,
)
from tradingmem_assets.defs.audit.scoring import METHODOLOGY_AUDIT_REPORTS_DTYPES, report_frame
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import append_rows, ensure_table, scalar, transaction

AUDIT_JOB_NAME = "methodology_audit_job"
ALERT_JOB_NAME = "audit_isolation_alert_job"
ALERT_OP_NAME = "record_audit_isolation_violation"

methodology_audit_job = dg.define_asset_job(
    name=AUDIT_JOB_NAME,
    selection=dg.AssetSelection.assets(AUDIT_ASSET_KEY),
    description="One methodology audit pass: score the learning loop, append one report row.",
    executor_def=dg.in_process_executor,
)


class IsolationViolation(dg.Config):
    """An audit materialization whose learning-table hashes differ (filled in by the sensor)."""

    pass_id: str = Field(description="The pass whose hashes differ ('unknown' when not in metadata).")
    sha256_before: str = Field(description="learning_tables_sha256_before of the materialization.")
    sha256_after: str = Field(description="learning_tables_sha256_after of the materialization.")
    storage_id: int = Field(description="Event storage id of the audit materialization.")
    materialization_run_id: str = Field(description="Run that materialized the pass.")
    materialization_timestamp: float = Field(description="When the pass was materialized (epoch s).")
    window_days: int = Field(default=30, description="The pass's window, when its metadata says so.")
    tier: str | None = Field(default=None, description="The pass's tier, when its metadata says so.")
    composite: float | None = Field(default=None, description="The pass's composite, when known.")


def record_violation(con, violation: IsolationViolation) -> str:
    """Mark the pass isolation_ok = false (excluded from trends); insert it when it has no row yet."""
    ensure_table(con, tables.METHODOLOGY_AUDIT_REPORTS, pl.DataFrame(schema=METHODOLOGY_AUDIT_REPORTS_DTYPES))
    if scalar(
        con, f"SELECT count(*) FROM {tables.METHODOLOGY_AUDIT_REPORTS} WHERE pass_id = ?", [violation.pass_id]
    ):
        con.execute(
            f"UPDATE {tables.METHODOLOGY_AUDIT_REPORTS} SET isolation_ok = false WHERE pass_id = ?",
            [violation.pass_id],
        )
        return "updated"
    scored = violation.composite is not None and violation.tier not in (None, "disabled", "insufficient_data")
    row = {
        "pass_id": violation.pass_id,
        "ran_at": datetime.fromtimestamp(violation.materialization_timestamp, UTC),
        "window_days": max(1, violation.window_days),
        "composite": violation.composite if scored else None,
        "tier": violation.tier if scored else "insufficient_data",
        "dimension_scores": "{}",
        "dimension_weights_used": "{}",
        "findings": json.dumps([isolation_finding([])], sort_keys=True),
        "advisory_actions": "[]",
        "learning_tables_sha256_before": violation.sha256_before,
        "learning_tables_sha256_after": violation.sha256_after,
        "isolation_ok": False,
    }
    append_rows(con, tables.METHODOLOGY_AUDIT_REPORTS, report_frame([row]))
    return "inserted"


@dg.op(
    name=ALERT_OP_NAME,
    description="Record an audit isolation violation, fail the audit_isolation check, and fail as the alert.",
)
def record_audit_isolation_violation(
    context: dg.OpExecutionContext, config: IsolationViolation, warehouse: WarehouseResource
) -> None:
    with warehouse.connect() as con, transaction(con):
        outcome = record_violation(con, config)
    message = (
        f"ALERT: the learning tables changed during audit pass {config.pass_id} "
        f"(sha256 before {config.sha256_before[:12]}..., after {config.sha256_after[:12]}...). "
        "The pass is marked isolation_ok = false and excluded from trends; find the writer that "
        "ran during the pass (run " + config.materialization_run_id + ")."
    )
    context.log_event(
        dg.AssetCheckEvaluation(
            asset_key=AUDIT_ASSET_KEY,
            check_name=ISOLATION_CHECK,
            passed=False,
            severity=dg.AssetCheckSeverity.ERROR,
            description=message,
            metadata={
                "pass_id": config.pass_id,
                SHA_BEFORE_KEY: config.sha256_before,
                SHA_AFTER_KEY: config.sha256_after,
                "report_row": outcome,
                "materialization_storage_id": config.storage_id,
                "materialization_run_id": config.materialization_run_id,
            },
        )
    )
    raise dg.Failure(description=message, metadata={"pass_id": config.pass_id, "report_row": outcome})


@dg.job(
    name=ALERT_JOB_NAME,
    description="Alert run launched by audit_isolation_sensor when an audit pass changed learning tables.",
    executor_def=dg.in_process_executor,
)
def audit_isolation_alert_job() -> None:
    record_audit_isolation_violation()
