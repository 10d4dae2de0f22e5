"""The methodology audit pass: a 0-100 health report of the learning loop that never writes learning state."""

import json
import time
from datetime import UTC, datetime

import dagster as dg
from pydantic import Field

from tradingmem_assets.defs.audit.checks import (
    AUDIT_ASSET_KEY,
    AUDIT_CHECK_SPECS,
    REPORT_INVARIANTS_CHECK,
    SHA_AFTER_KEY,
    SHA_BEFORE_KEY,
    isolation_check_result,
)
from tradingmem_assets.defs.audit.inputs import AuditInputError, AuditWindow
from tradingmem_assets.defs.audit.invariants import AUDIT_REPORTS_SCHEMA
from tradingmem_assets.defs.audit.queries import read_audit_inputs
from tradingmem_assets.defs.audit.scoring import (
    DIMENSIONS,
    disabled_score,
    pass_id_for,
    report_frame,
    report_row,
    score_audit,
)
from tradingmem_assets.defs.audit.table_hash import tables_sha256
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import (
    check_result,
    declared_metadata,
    rounded_metadata,
    score_metadata,
    table_metadata,
)
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.validation import validate
from tradingmem_assets.lib.warehouse import append_rows, scalar, table_exists, transaction
from tradingmem_assets.settings import SETTINGS

DEFAULT_WINDOW_DAYS = 30
AUDIT_INPUTS = [
    dg.AssetKey(name)
    for name in (
        "methodologies",
        "methodology_lifecycle_events",
        "methodology_cases",
        "methodology_case_hints",
        "methodology_cron_runs",
    )
] + [raw_key("institution_runs")]


class AuditConfig(dg.Config):
    window_days: int = Field(
        default=DEFAULT_WINDOW_DAYS,
        description="Days before as_of the pass looks at: [as_of - N days, as_of].",
    )


def isolation_finding(changed: list[str]) -> dict:
    return {
        "dimension": "audit",
        "severity": "high",
        "code": "isolation_violation",
        "message": "learning tables changed during the audit pass; the pass is excluded from trends",
        "detail": {"changed_tables": changed},
    }


def _findings_markdown(findings: list[dict]) -> str:
    if not findings:
        return "no findings"
    lines = ["| severity | dimension | finding |", "|---|---|---|"]
    lines += [f"| {f['severity']} | {f['dimension']} | {f['message']} |" for f in findings[:30]]
    return "\n".join(lines)


@dg.asset(
    metadata=declared_metadata(AUDIT_ASSET_KEY.to_user_string()),
    key=AUDIT_ASSET_KEY,
    group_name=tables.AUDIT_GROUP,
    kinds={"duckdb", "polars"},
    deps=AUDIT_INPUTS,
    check_specs=AUDIT_CHECK_SPECS,
    description="One append-only health report per audit pass; reads the learning tables, never writes them.",
)
def methodology_audit_reports(
    context: dg.AssetExecutionContext, config: AuditConfig, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    if config.window_days < 1:
        raise dg.Failure(description=f"window_days must be at least 1, got {config.window_days}")
    as_of = warehouse.as_of_ts
    ran_at = datetime.now(UTC)  # audit reports record runs: the wall clock, not as_of
    window = AuditWindow.ending(as_of, config.window_days)
    pass_id = pass_id_for(ran_at, context.run_id)
    enabled = SETTINGS.audit_enabled

    # Read phase: hash, then read. No connection is held while scoring, so any writer that slips
    # in before the write phase changes the second hash and the pass is caught.
    started = time.perf_counter()
    with warehouse.connect() as con:
        before = tables_sha256(con)
        hash_s = time.perf_counter() - started
        try:
            inputs = read_audit_inputs(con, window) if enabled else None
        except AuditInputError as exc:
            raise dg.Failure(description=str(exc)) from exc
    try:
        score = score_audit(inputs, window) if inputs is not None else disabled_score()
    except AuditInputError as exc:
        raise dg.Failure(description=str(exc)) from exc

    # Write phase: hash again, then append the report row (the only write of a pass).
    with warehouse.connect() as con:
        after = tables_sha256(con)
        row = report_row(
            pass_id=pass_id,
            ran_at=ran_at,
            window_days=config.window_days,
            score=score,
            sha256_before=before.combined,
            sha256_after=after.combined,
        )
        changed = before.changed_tables(after)
        if changed:
            row["findings"] = json.dumps(
                [isolation_finding(changed), *json.loads(row["findings"])], sort_keys=True, ensure_ascii=False
            )
        frame = report_frame([row])
        validation = validate(AUDIT_REPORTS_SCHEMA, frame)
        if not validation.passed:
            raise dg.Failure(
                description="the audit report row breaks its invariants; nothing was written",
                metadata={"summary": dg.MetadataValue.md(validation.summary())},
            )
        with transaction(con):
            if table_exists(con, tables.METHODOLOGY_AUDIT_REPORTS) and scalar(
                con, f"SELECT count(*) FROM {tables.METHODOLOGY_AUDIT_REPORTS} WHERE pass_id = ?", [pass_id]
            ):
                raise dg.Failure(description=f"audit pass {pass_id} is already recorded")
            append_rows(con, tables.METHODOLOGY_AUDIT_REPORTS, frame)
        total = scalar(con, f"SELECT count(*) FROM {tables.METHODOLOGY_AUDIT_REPORTS}")
    elapsed = time.perf_counter() - started

    findings = json.loads(row["findings"])
    if score.composite is None:
        context.log.info(f"audit pass {pass_id}: tier {score.tier}")
    else:
        context.log.info(f"audit pass {pass_id}: composite {score.composite:.1f}, tier {score.tier}")
    metadata: dict = {
        **table_metadata(tables.METHODOLOGY_AUDIT_REPORTS, frame, row_count=total),
        "pass_id": pass_id,
        "tier": score.tier,
        "window_days": config.window_days,
        "as_of": as_of.isoformat(),
        "ran_at": ran_at.isoformat(),
        SHA_BEFORE_KEY: before.combined,
        SHA_AFTER_KEY: after.combined,
        "isolation_ok": not changed,
        "learning_table_rows": dg.MetadataValue.json({t: n for t, n in before.rows.items()}),
        "findings_high": sum(1 for f in findings if f["severity"] == "high"),
        "findings": dg.MetadataValue.md(_findings_markdown(findings)),
        "pass_seconds": round(elapsed, 3),
        "hash_seconds": round(hash_s, 3),
    }
    if score.composite is not None:
        metadata["composite"] = score_metadata(score.composite)
    for dim in DIMENSIONS:
        value = score.dimension_scores.get(dim)
        if value is not None:
            metadata[f"score_{dim}"] = score_metadata(value)
    return dg.MaterializeResult(
        metadata=rounded_metadata(metadata),
        check_results=[
            isolation_check_result(before, after, pass_id),
            check_result(REPORT_INVARIANTS_CHECK, validation, AUDIT_ASSET_KEY),
        ],
    )
