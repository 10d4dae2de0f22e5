"""One audit pass (SPEC section 9): six dimensions, their 0-100 composite, its tier and report row.

``score_audit`` runs the six dimensions of ``core.audit_dimensions`` over one pass's plain rows
(``core.audit_inputs``), drops the ones with too little data (score ``None``), takes the weighted
mean of the others with renormalized weights and maps it to a tier. ``report_row`` turns the pass
into one row of ``methodology_audit_reports``, with the learning tables' checksums around it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import polars as pl

from tradingmem_assets.defs.audit.dimensions import (
    attribution_integrity,
    coverage_health,
    cron_health,
    graduation_fp_rate,
    quarantine_churn,
    synthesis_quality,
)
from tradingmem_assets.defs.audit.findings import SEVERITIES, DimensionResult, Finding

# AuditInputError is part of the scoring API: every dimension raises it for a table missing a column.
from tradingmem_assets.defs.audit.inputs import AuditInputError as AuditInputError
from tradingmem_assets.defs.audit.inputs import AuditInputs, AuditWindow
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes

DIMENSIONS: tuple[str, ...] = (
    "synthesis_quality",
    "graduation_fp_rate",
    "attribution_integrity",
    "coverage_health",
    "quarantine_churn",
    "cron_health",
)
WEIGHTS: dict[str, float] = {
    "synthesis_quality": 0.22,
    "graduation_fp_rate": 0.22,
    "attribution_integrity": 0.22,
    "coverage_health": 0.14,
    "quarantine_churn": 0.08,
    "cron_health": 0.12,
}
Tier = Literal["healthy", "watch", "degraded", "alarm", "disabled", "insufficient_data"]
TIERS: tuple[str, ...] = ("healthy", "watch", "degraded", "alarm", "disabled", "insufficient_data")


def composite_score(
    scores: Mapping[str, float | None], weights: Mapping[str, float] = WEIGHTS
) -> tuple[float | None, dict[str, float]]:
    """Weighted mean over the non-null dimensions, and the renormalized weights actually used."""
    used = {d: weights[d] for d in weights if scores.get(d) is not None}
    total = sum(used.values())
    if not used or total <= 0:
        return None, {}
    renormalized = {d: w / total for d, w in used.items()}
    return sum(renormalized[d] * float(scores[d]) for d in renormalized), renormalized  # type: ignore[arg-type]


def tier_of(composite: float | None, enabled: bool = True) -> Tier:
    """>= 80 healthy, 60-80 watch, 40-60 degraded, < 40 alarm; disabled / insufficient_data otherwise."""
    if not enabled:
        return "disabled"
    if composite is None:
        return "insufficient_data"
    if composite >= 80:
        return "healthy"
    if composite >= 60:
        return "watch"
    if composite >= 40:
        return "degraded"
    return "alarm"


@dataclass(frozen=True)
class AuditScore:
    composite: float | None
    tier: Tier
    dimensions: dict[str, DimensionResult]
    weights_used: dict[str, float]

    @property
    def dimension_scores(self) -> dict[str, float | None]:
        return {d: self.dimensions[d].score if d in self.dimensions else None for d in DIMENSIONS}

    @property
    def findings(self) -> list[dict[str, Any]]:
        order = {s: i for i, s in enumerate(SEVERITIES)}
        items = [f for d in self.dimensions.values() for f in d.findings]
        return [
            f.to_dict()
            for f in sorted(
                items,
                key=lambda f: (
                    order[f.severity],
                    DIMENSIONS.index(f.dimension) if f.dimension in DIMENSIONS else 99,
                ),
            )
        ]

    @property
    def advisory_actions(self) -> list[dict[str, str]]:
        return [a.to_dict() for d in self.dimensions.values() for a in d.advisory_actions]


def score_audit(inputs: AuditInputs, window: AuditWindow) -> AuditScore:
    """All six dimensions, the composite and its tier for one pass."""
    dims = [
        synthesis_quality(inputs.lifecycle_events, window),
        graduation_fp_rate(inputs.methodologies, inputs.lifecycle_events, inputs.cases, window),
        attribution_integrity(
            inputs.cases, inputs.case_hints, inputs.methodologies, inputs.known_run_ids, window
        ),
        coverage_health(inputs.methodologies, inputs.cases, window),
        quarantine_churn(inputs.lifecycle_events, window),
        cron_health(inputs.heartbeats, window),
    ]
    by_name = {d.name: d for d in dims}
    composite, weights = composite_score({d.name: d.score for d in dims})
    return AuditScore(composite, tier_of(composite), by_name, weights)


def disabled_score() -> AuditScore:
    """The pass recorded while the audit is switched off: no dimension is read or scored."""
    note = Finding(
        "audit",
        "low",
        "audit_disabled",
        "the methodology audit is switched off (METHODOLOGY_AUDIT_ENABLED=0); nothing was scored",
    )
    return AuditScore(None, "disabled", {"audit": DimensionResult("audit", None, (note,))}, {})


# --- the report row -------------------------------------------------------------------------------


def pass_id_for(ran_at: datetime, run_id: str) -> str:
    """A pass id derived from its wall-clock start and the Dagster run that made it."""
    return "ap_" + hashlib.sha256(f"{ran_at.isoformat()}|{run_id}".encode()).hexdigest()[:16]


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def report_row(
    *,
    pass_id: str,
    ran_at: datetime,
    window_days: int,
    score: AuditScore,
    sha256_before: str,
    sha256_after: str,
) -> dict[str, Any]:
    """One row of methodology_audit_reports (JSON columns serialized with sorted keys)."""
    return {
        "pass_id": pass_id,
        "ran_at": ran_at,
        "window_days": window_days,
        "composite": score.composite,
        "tier": score.tier,
        "dimension_scores": _json(score.dimension_scores),
        "dimension_weights_used": _json(score.weights_used),
        "findings": _json(score.findings),
        "advisory_actions": _json(score.advisory_actions),
        "learning_tables_sha256_before": sha256_before,
        "learning_tables_sha256_after": sha256_after,
        "isolation_ok": sha256_before == sha256_after,
    }


METHODOLOGY_AUDIT_REPORTS_DTYPES = table_dtypes(tables.METHODOLOGY_AUDIT_REPORTS)


def report_frame(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=METHODOLOGY_AUDIT_REPORTS_DTYPES, orient="row")
