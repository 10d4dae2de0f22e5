"""The audit's six health dimensions and their 0-100 composite (SPEC section 9).

Every dimension is a pure function of plain data: rows of the learning tables and of the
heartbeats, given as Polars frames or as sequences of dicts. No database handle reaches this
module, so a scoring function cannot write learning state even by mistake. Each returns a
:class:`DimensionResult` ``(score 0-100 or None, findings, advisory_actions)``; ``None`` means too
little data to score honestly and drops the dimension from the composite.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import polars as pl

# --- vocabulary ---------------------------------------------------------------------------------

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
Severity = Literal["high", "medium", "low"]
SEVERITIES: tuple[str, ...] = ("high", "medium", "low")

CANDIDATE_EVENTS = ("created", "merged", "rejected_injection", "rejected_invalid")
VALID_CANDIDATE_EVENTS = ("created", "merged")

# Null thresholds (SPEC section 9): below these, a dimension is None rather than a dishonest score.
MIN_CANDIDATES = 5
MIN_OUTCOMES_AFTER_GRADUATION = 5
MIN_GRADUATED_METHODOLOGIES = 3
FALSE_POSITIVE_ACCURACY = 0.5
# The learning job is expected to leave at least one heartbeat per day (docs/audit.md).
EXPECTED_HEARTBEAT_INTERVAL = timedelta(hours=24)
SAMPLE_IDS = 10


class AuditInputError(ValueError):
    """A learning table handed to the audit lacks a column the scoring needs (named in the message)."""


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    dimension: str
    severity: Severity
    code: str
    message: str
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "detail": dict(self.detail),
        }


@dataclass(frozen=True)
class Advisory:
    """An action for an operator; the audit itself never acts on learning state."""

    dimension: str
    action: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"dimension": self.dimension, "action": self.action, "reason": self.reason}


@dataclass(frozen=True)
class DimensionResult:
    name: str
    score: float | None
    findings: tuple[Finding, ...] = ()
    advisory_actions: tuple[Advisory, ...] = ()


@dataclass(frozen=True)
class AuditWindow:
    """The closed interval ``[as_of - window_days, as_of]`` every dimension looks at."""

    start: datetime
    end: datetime
    days: int

    @classmethod
    def ending(cls, as_of: datetime, window_days: int) -> AuditWindow:
        if window_days < 1:
            raise ValueError(f"window_days must be at least 1, got {window_days}")
        return cls(start=as_of - timedelta(days=window_days), end=as_of, days=window_days)

    def contains(self, column: str) -> pl.Expr:
        return pl.col(column).is_between(pl.lit(self.start), pl.lit(self.end), closed="both")


# --- input normalization --------------------------------------------------------------------------

UTC_TS = pl.Datetime("us", "UTC")
METHODOLOGY_COLUMNS = {
    "methodology_id": pl.String,
    "quarantine": pl.Int64,
    "graduated_at": UTC_TS,
    "created_at": UTC_TS,
}
EVENT_COLUMNS = {"methodology_id": pl.String, "event": pl.String, "ts": UTC_TS}
CASE_COLUMNS = {
    "case_id": pl.String,
    "methodology_id": pl.String,
    "run_id": pl.String,
    "correct": pl.Boolean,
    "recorded_at": UTC_TS,
}
HINT_COLUMNS = {
    "methodology_id": pl.String,
    "run_id": pl.String,
    "injection_id": pl.String,
    "injected_at": UTC_TS,
    "injectable_at_injection": pl.Boolean,
}
HEARTBEAT_COLUMNS = {"status": pl.String, "ts": UTC_TS}
RUN_ID_COLUMNS = {"run_id": pl.String}

Rows = pl.DataFrame | Sequence[Mapping[str, Any]]


def _cast(column: str, dtype: pl.DataType, source: pl.DataType) -> pl.Expr:
    col = pl.col(column)
    if dtype == UTC_TS:
        if isinstance(source, pl.Datetime):
            return (
                col.dt.replace_time_zone("UTC")
                if source.time_zone is None
                else col.dt.convert_time_zone("UTC")
            ).dt.cast_time_unit("us")
        if source == pl.Date:
            return col.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        if source == pl.String:
            return col.str.to_datetime(time_zone="UTC", time_unit="us")
        return col.cast(UTC_TS)
    if dtype == pl.Boolean and source == pl.String:
        return col.str.to_lowercase().is_in(["true", "1", "t", "yes"])
    return col.cast(dtype)


def as_frame(rows: Rows, columns: Mapping[str, pl.DataType], table: str) -> pl.DataFrame:
    """The columns the scoring needs, typed; raises AuditInputError naming a missing column."""
    if isinstance(rows, pl.DataFrame):
        frame = rows
    else:
        rows = list(rows)
        if not rows:
            return pl.DataFrame(schema=dict(columns))
        missing = [c for c in columns if c not in rows[0]]
        if missing:
            raise AuditInputError(f"{table} rows have no column(s) {', '.join(missing)}")
        frame = pl.DataFrame({c: [r.get(c) for r in rows] for c in columns}, strict=False)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise AuditInputError(f"{table} has no column(s) {', '.join(missing)}")
    if frame.height == 0:
        return pl.DataFrame(schema=dict(columns))
    return frame.select(
        _cast(c, dtype, frame.schema[c]).alias(c) if frame.schema[c] != dtype else pl.col(c)
        for c, dtype in columns.items()
    )


# --- helpers --------------------------------------------------------------------------------------


def _severity_for(score: float) -> Severity | None:
    if score < 40:
        return "high"
    if score < 60:
        return "medium"
    if score < 80:
        return "low"
    return None


def _sample(frame: pl.DataFrame, column: str) -> list[str]:
    return sorted(frame.get_column(column).drop_nulls().unique().to_list())[:SAMPLE_IDS]


def _insufficient(name: str, message: str, **detail: Any) -> DimensionResult:
    return DimensionResult(name, None, (Finding(name, "low", "insufficient_data", message, detail),))


def _score_finding(name: str, score: float, message: str, **detail: Any) -> tuple[Finding, ...]:
    severity = _severity_for(score)
    if severity is None:
        return ()
    return (Finding(name, severity, "low_score", message, {"score": round(score, 2), **detail}),)


# --- the six dimensions ---------------------------------------------------------------------------


def synthesis_quality(events: Rows, window: AuditWindow) -> DimensionResult:
    """Share of methodology candidates in the window that were valid (not rejected_*)."""
    name = "synthesis_quality"
    ev = as_frame(events, EVENT_COLUMNS, "methodology_lifecycle_events")
    candidates = ev.filter(window.contains("ts") & pl.col("event").is_in(CANDIDATE_EVENTS))
    counts = dict(candidates.group_by("event").len().rows())
    total = candidates.height
    if total < MIN_CANDIDATES:
        return _insufficient(
            name,
            f"{total} candidate(s) in the window; at least {MIN_CANDIDATES} are needed to score",
            candidates=total,
        )
    valid = sum(counts.get(e, 0) for e in VALID_CANDIDATE_EVENTS)
    injection = counts.get("rejected_injection", 0)
    invalid = counts.get("rejected_invalid", 0)
    score = 100.0 * valid / total
    findings = list(
        _score_finding(
            name,
            score,
            f"only {valid} of {total} candidates were valid",
            rejected_injection=injection,
            rejected_invalid=invalid,
        )
    )
    advice: list[Advisory] = []
    if injection:
        findings.append(
            Finding(
                name,
                "medium" if injection / total >= 0.2 else "low",
                "injection_attempts",
                f"{injection} candidate(s) carried prompt-injection patterns and were rejected",
                {"rejected_injection": injection},
            )
        )
        advice.append(
            Advisory(
                name,
                "Trace the institution runs whose proposals carried injection patterns "
                "back to their data sources and quarantine those sources.",
                f"{injection} rejected_injection event(s) in the window",
            )
        )
    if invalid and invalid / total >= 0.2:
        findings.append(
            Finding(
                name,
                "medium",
                "invalid_proposals",
                f"{invalid} of {total} proposals failed schema or phase-DAG validation",
                {"rejected_invalid": invalid},
            )
        )
        advice.append(
            Advisory(
                name,
                "Review the proposer's output schema and the declared vocabularies; "
                "most invalid proposals name an unknown signal, timeframe or asset class.",
                f"{invalid} rejected_invalid event(s) in the window",
            )
        )
    return DimensionResult(name, score, tuple(findings), tuple(advice))


def graduation_times(methodologies: Rows, events: Rows, window: AuditWindow) -> pl.DataFrame:
    """First graduation of each methodology at or before the window end (event, else graduated_at)."""
    ms = as_frame(methodologies, METHODOLOGY_COLUMNS, "methodologies")
    ev = as_frame(events, EVENT_COLUMNS, "methodology_lifecycle_events")
    from_events = (
        ev.filter((pl.col("event") == "graduated") & (pl.col("ts") <= window.end))
        .group_by("methodology_id")
        .agg(pl.col("ts").min().alias("graduated_at"))
    )
    from_rows = ms.filter(pl.col("graduated_at") <= window.end).select("methodology_id", "graduated_at")
    return (
        pl.concat([from_events, from_rows])
        .group_by("methodology_id")
        .agg(pl.col("graduated_at").min())
        .join(
            ms.select("methodology_id", "quarantine").unique("methodology_id"),
            on="methodology_id",
            how="left",
        )
    )


def graduation_fp_rate(
    methodologies: Rows, events: Rows, cases: Rows, window: AuditWindow
) -> DimensionResult:
    """100 x (1 - share of graduated methodologies whose accuracy after graduation is below 0.5)."""
    name = "graduation_fp_rate"
    graduated = graduation_times(methodologies, events, window)
    cs = as_frame(cases, CASE_COLUMNS, "methodology_cases")
    after = (
        cs.filter(window.contains("recorded_at"))
        .join(graduated, on="methodology_id", how="inner")
        .filter(pl.col("recorded_at") > pl.col("graduated_at"))
        .group_by("methodology_id")
        .agg(
            pl.len().alias("outcomes"),
            pl.col("correct").cast(pl.Float64).mean().alias("accuracy"),
            pl.col("quarantine").first(),
        )
        .filter(pl.col("outcomes") >= MIN_OUTCOMES_AFTER_GRADUATION)
    )
    if after.height < MIN_GRADUATED_METHODOLOGIES:
        return _insufficient(
            name,
            f"{after.height} graduated methodolog(ies) with >= {MIN_OUTCOMES_AFTER_GRADUATION} outcomes "
            f"after graduation; at least {MIN_GRADUATED_METHODOLOGIES} are needed to score",
            qualifying=after.height,
            graduated=graduated.height,
        )
    false_pos = after.filter(pl.col("accuracy") < FALSE_POSITIVE_ACCURACY)
    score = 100.0 * (1 - false_pos.height / after.height)
    findings = list(
        _score_finding(
            name,
            score,
            f"{false_pos.height} of {after.height} graduations look like false positives",
            false_positives=false_pos.height,
        )
    )
    advice: list[Advisory] = []
    still_injectable = false_pos.filter(pl.col("quarantine").fill_null(0) == 0)
    if still_injectable.height:
        findings.append(
            Finding(
                name,
                "high",
                "injectable_below_chance",
                f"{still_injectable.height} graduated methodolog(ies) are still injectable with accuracy "
                f"below {FALSE_POSITIVE_ACCURACY:.0%} since graduation",
                {"methodology_ids": _sample(still_injectable, "methodology_id")},
            )
        )
        advice.append(
            Advisory(
                name,
                "Review these methodologies and consider raising "
                "METHODOLOGY_INJECTION_THRESHOLD or METHODOLOGY_MIN_USES.",
                "injectable methodologies perform below chance after graduation",
            )
        )
    demoted = false_pos.height - still_injectable.height
    if demoted:
        findings.append(
            Finding(
                name,
                "low",
                "false_positive_demoted",
                f"{demoted} false-positive graduation(s) were already demoted",
                {"methodology_ids": _sample(false_pos.filter(pl.col("quarantine") != 0), "methodology_id")},
            )
        )
    return DimensionResult(name, score, tuple(findings), tuple(advice))


def attribution_integrity(
    cases: Rows, hints: Rows, methodologies: Rows, known_run_ids: Rows, window: AuditWindow
) -> DimensionResult:
    """Share of the window's cases and hints whose run and methodology exist (hints: injectable too)."""
    name = "attribution_integrity"
    ms = as_frame(methodologies, METHODOLOGY_COLUMNS, "methodologies").select("methodology_id").unique()
    runs = as_frame(known_run_ids, RUN_ID_COLUMNS, "institution_runs").unique()
    flags = [
        pl.col("methodology_id").is_in(ms.get_column("methodology_id").implode()).alias("methodology_ok"),
        pl.col("run_id").is_in(runs.get_column("run_id").implode()).alias("run_ok"),
    ]
    cs = (
        as_frame(cases, CASE_COLUMNS, "methodology_cases")
        .filter(window.contains("recorded_at"))
        .with_columns(flags)
    )
    hs = (
        as_frame(hints, HINT_COLUMNS, "methodology_case_hints")
        .filter(window.contains("injected_at"))
        .with_columns(flags)
        .with_columns(pl.col("injectable_at_injection").fill_null(False).alias("injectable_ok"))
    )
    total = cs.height + hs.height
    if total == 0:
        return _insufficient(name, "no methodology case or hint in the window", cases=0, hints=0)
    case_bad = cs.filter(~(pl.col("methodology_ok") & pl.col("run_ok")))
    hint_bad = hs.filter(~(pl.col("methodology_ok") & pl.col("run_ok") & pl.col("injectable_ok")))
    score = 100.0 * (total - case_bad.height - hint_bad.height) / total
    findings = list(
        _score_finding(
            name,
            score,
            f"{case_bad.height + hint_bad.height} of {total} attributions are broken",
            cases=cs.height,
            hints=hs.height,
        )
    )
    advice: list[Advisory] = []
    missing_m = pl.concat(
        [
            case_bad.filter(~pl.col("methodology_ok")).select("methodology_id"),
            hint_bad.filter(~pl.col("methodology_ok")).select("methodology_id"),
        ]
    )
    missing_r = pl.concat(
        [
            case_bad.filter(~pl.col("run_ok")).select("run_id"),
            hint_bad.filter(~pl.col("run_ok")).select("run_id"),
        ]
    )
    not_injectable = hs.filter(~pl.col("injectable_ok"))
    if missing_m.height:
        findings.append(
            Finding(
                name,
                "high",
                "unknown_methodology",
                f"{missing_m.height} case(s)/hint(s) cite a methodology that does not exist",
                {"methodology_ids": _sample(missing_m, "methodology_id")},
            )
        )
        advice.append(
            Advisory(
                name,
                "Re-run trading_memory_job and check that methodology ids cited by runs "
                "are the m_<dedup key> ids of stored methodologies.",
                "outcomes are attributed to unknown methodologies",
            )
        )
    if missing_r.height:
        findings.append(
            Finding(
                name,
                "high",
                "unknown_run",
                f"{missing_r.height} case(s)/hint(s) name an institution run that does not exist",
                {"run_ids": _sample(missing_r, "run_id")},
            )
        )
        advice.append(
            Advisory(
                name,
                "Check the institution_runs landing file and raw_rejects for the missing runs.",
                "outcomes are attributed to runs that are not in raw.institution_runs",
            )
        )
    if not_injectable.height:
        findings.append(
            Finding(
                name,
                "high",
                "injected_while_quarantined",
                f"{not_injectable.height} hint(s) injected a methodology that was not injectable",
                {"injection_ids": _sample(not_injectable, "injection_id")},
            )
        )
        advice.append(
            Advisory(
                name,
                "Audit the agent's injection path: only graduated methodologies may be injected.",
                "quarantined methodologies reached a prompt",
            )
        )
    return DimensionResult(name, score, tuple(findings), tuple(advice))


def coverage_health(methodologies: Rows, cases: Rows, window: AuditWindow) -> DimensionResult:
    """Share of stored methodologies with at least one outcome recorded in the window.

    Rejected candidates are never stored as methodologies (SPEC section 8), so every stored row that
    existed at the window end is a non-rejected methodology.
    """
    name = "coverage_health"
    ms = (
        as_frame(methodologies, METHODOLOGY_COLUMNS, "methodologies")
        .filter(pl.col("created_at").is_null() | (pl.col("created_at") <= window.end))
        .unique("methodology_id")
    )
    if ms.height == 0:
        return _insufficient(name, "no methodology exists yet", methodologies=0)
    used = (
        as_frame(cases, CASE_COLUMNS, "methodology_cases")
        .filter(window.contains("recorded_at"))
        .select("methodology_id")
        .unique()
    )
    idle = ms.join(used, on="methodology_id", how="anti")
    score = 100.0 * (ms.height - idle.height) / ms.height
    findings = list(
        _score_finding(
            name,
            score,
            f"{idle.height} of {ms.height} methodologies had no outcome in the window",
            idle=idle.height,
        )
    )
    advice: list[Advisory] = []
    idle_graduated = idle.filter(pl.col("quarantine").fill_null(1) == 0)
    if idle_graduated.height:
        findings.append(
            Finding(
                name,
                "medium",
                "idle_graduated",
                f"{idle_graduated.height} graduated methodolog(ies) recorded no outcome",
                {"methodology_ids": _sample(idle_graduated, "methodology_id")},
            )
        )
    if idle.height:
        advice.append(
            Advisory(
                name,
                "Check that scheduled institution runs cite methodologies and that the "
                "reflection ladder scores them once each window elapses.",
                f"{idle.height} methodolog(ies) without outcomes in the window",
            )
        )
    return DimensionResult(name, score, tuple(findings), tuple(advice))


def quarantine_churn(events: Rows, window: AuditWindow) -> DimensionResult:
    """100 x (1 - share of methodologies graduated or demoted in the window that were both)."""
    name = "quarantine_churn"
    moves = (
        as_frame(events, EVENT_COLUMNS, "methodology_lifecycle_events")
        .filter(window.contains("ts") & pl.col("event").is_in(["graduated", "demoted"]))
        .group_by("methodology_id")
        .agg(
            (pl.col("event") == "graduated").any().alias("graduated"),
            (pl.col("event") == "demoted").any().alias("demoted"),
        )
    )
    if moves.height == 0:
        return _insufficient(name, "no graduation or demotion in the window", moved=0)
    flapping = moves.filter(pl.col("graduated") & pl.col("demoted"))
    score = 100.0 * (1 - flapping.height / moves.height)
    findings = list(
        _score_finding(
            name,
            score,
            f"{flapping.height} of {moves.height} methodologies both graduated and were demoted",
            flapping=flapping.height,
        )
    )
    advice: list[Advisory] = []
    if flapping.height:
        findings.append(
            Finding(
                name,
                "medium" if score < 80 else "low",
                "flapping",
                f"{flapping.height} methodolog(ies) flapped between graduated and quarantined",
                {"methodology_ids": _sample(flapping, "methodology_id")},
            )
        )
        advice.append(
            Advisory(
                name,
                "Consider a higher METHODOLOGY_MIN_USES so graduation waits for a steadier Wilson bound.",
                "methodologies flap around the threshold",
            )
        )
    return DimensionResult(name, score, tuple(findings), tuple(advice))


def cron_health(
    heartbeats: Rows, window: AuditWindow, expected_interval: timedelta = EXPECTED_HEARTBEAT_INTERVAL
) -> DimensionResult:
    """100 x min(1, ok heartbeats / expected heartbeats in the window).

    Expected = one per ``expected_interval`` from the later of the window start and the first
    heartbeat ever (a new deployment is not blamed for days before it existed), at least one.
    """
    name = "cron_health"
    hb = as_frame(heartbeats, HEARTBEAT_COLUMNS, "methodology_cron_runs").filter(pl.col("ts") <= window.end)
    if hb.height == 0:
        return _insufficient(
            name, "no learning heartbeat at all (methodology_cron_runs is empty)", heartbeats=0
        )
    first = hb.get_column("ts").min()
    last = hb.get_column("ts").max()
    span = window.end - max(window.start, first)  # type: ignore[type-var]
    expected = max(1, math.ceil(span / expected_interval))
    in_window = hb.filter(window.contains("ts"))
    ok = in_window.filter(pl.col("status") == "ok").height
    failed = in_window.height - ok
    score = 100.0 * min(1.0, ok / expected)
    findings = list(
        _score_finding(name, score, f"{ok} ok heartbeat(s) for {expected} expected", ok=ok, expected=expected)
    )
    advice: list[Advisory] = []
    if failed:
        findings.append(
            Finding(
                name,
                "high" if failed >= ok else "medium",
                "failed_runs",
                f"{failed} learning run(s) in the window ended with status other than ok",
                {"failed": failed},
            )
        )
        advice.append(
            Advisory(
                name,
                "Open the failed trading_memory_job runs in the Dagster UI and fix the failing asset.",
                f"{failed} failed heartbeat(s)",
            )
        )
    silence = window.end - last  # type: ignore[operator]
    if silence > 2 * expected_interval:
        findings.append(
            Finding(
                name,
                "high",
                "stale_heartbeat",
                f"no learning heartbeat for {silence.total_seconds() / 3600:.1f} h",
                {"last_heartbeat": last.isoformat()},
            )
        )
        advice.append(
            Advisory(
                name,
                "Check that the learning schedule and the Dagster daemon are running.",
                "the learning loop has gone quiet",
            )
        )
    return DimensionResult(name, score, tuple(findings), tuple(advice))


# --- composite ------------------------------------------------------------------------------------


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
class AuditInputs:
    """Plain rows of everything one pass reads (learning tables, heartbeats, known run ids)."""

    methodologies: Rows = ()
    lifecycle_events: Rows = ()
    cases: Rows = ()
    case_hints: Rows = ()
    heartbeats: Rows = ()
    known_run_ids: Rows = ()


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


REPORT_SCHEMA = pl.Schema(
    {
        "pass_id": pl.String(),
        "ran_at": UTC_TS,
        "window_days": pl.Int64(),
        "composite": pl.Float64(),
        "tier": pl.String(),
        "dimension_scores": pl.String(),
        "dimension_weights_used": pl.String(),
        "findings": pl.String(),
        "advisory_actions": pl.String(),
        "learning_tables_sha256_before": pl.String(),
        "learning_tables_sha256_after": pl.String(),
        "isolation_ok": pl.Boolean(),
    }
)


def report_frame(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=REPORT_SCHEMA, orient="row")
