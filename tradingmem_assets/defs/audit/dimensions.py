"""The audit's six health dimensions (SPEC section 9), each a pure function of plain rows.

A dimension reads rows of the learning tables and of the heartbeats (Polars frames or sequences of
dicts, see ``core.audit_inputs``) inside one :class:`AuditWindow`, and returns a
:class:`DimensionResult` (``core.audit_findings``). No database handle reaches this module, so a
scoring function cannot write learning state even by mistake. Below the null thresholds a
dimension scores ``None`` rather than a dishonest number.
"""

from __future__ import annotations

import math
from datetime import timedelta

import polars as pl

from tradingmem_assets.defs.audit.findings import DimensionReport, DimensionResult, insufficient
from tradingmem_assets.defs.audit.inputs import (
    CASE_COLUMNS,
    EVENT_COLUMNS,
    HEARTBEAT_COLUMNS,
    HINT_COLUMNS,
    METHODOLOGY_COLUMNS,
    RUN_ID_COLUMNS,
    AuditWindow,
    Rows,
    as_frame,
)

CANDIDATE_EVENTS = ("created", "merged", "rejected_injection", "rejected_invalid")
VALID_CANDIDATE_EVENTS = ("created", "merged")

# Null thresholds (SPEC section 9): below these, a dimension is None rather than a dishonest score.
MIN_CANDIDATES = 5
MIN_OUTCOMES_AFTER_GRADUATION = 5
MIN_GRADUATED_METHODOLOGIES = 3
FALSE_POSITIVE_ACCURACY = 0.5
# The learning job is expected to leave at least one heartbeat per day (docs/audit.md).
EXPECTED_HEARTBEAT_INTERVAL = timedelta(hours=24)


def synthesis_quality(events: Rows, window: AuditWindow) -> DimensionResult:
    """Share of methodology candidates in the window that were valid (not rejected_*)."""
    name = "synthesis_quality"
    ev = as_frame(events, EVENT_COLUMNS, "methodology_lifecycle_events")
    candidates = ev.filter(window.contains("ts") & pl.col("event").is_in(CANDIDATE_EVENTS))
    counts = dict(candidates.group_by("event").len().rows())
    total = candidates.height
    if total < MIN_CANDIDATES:
        return insufficient(
            name,
            f"{total} candidate(s) in the window; at least {MIN_CANDIDATES} are needed to score",
            candidates=total,
        )
    valid = sum(counts.get(e, 0) for e in VALID_CANDIDATE_EVENTS)
    injection = counts.get("rejected_injection", 0)
    invalid = counts.get("rejected_invalid", 0)
    score = 100.0 * valid / total
    report = DimensionReport.scored(
        name,
        score,
        f"only {valid} of {total} candidates were valid",
        rejected_injection=injection,
        rejected_invalid=invalid,
    )
    if injection:
        report.flag(
            "medium" if injection / total >= 0.2 else "low",
            "injection_attempts",
            f"{injection} candidate(s) carried prompt-injection patterns and were rejected",
            {"rejected_injection": injection},
            action="Trace the institution runs whose proposals carried injection patterns "
            "back to their data sources and quarantine those sources.",
            reason=f"{injection} rejected_injection event(s) in the window",
        )
    if invalid and invalid / total >= 0.2:
        report.flag(
            "medium",
            "invalid_proposals",
            f"{invalid} of {total} proposals failed schema or phase-DAG validation",
            {"rejected_invalid": invalid},
            action="Review the proposer's output schema and the declared vocabularies; "
            "most invalid proposals name an unknown signal, timeframe or asset class.",
            reason=f"{invalid} rejected_invalid event(s) in the window",
        )
    return report.result()


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
        return insufficient(
            name,
            f"{after.height} graduated methodolog(ies) with >= {MIN_OUTCOMES_AFTER_GRADUATION} outcomes "
            f"after graduation; at least {MIN_GRADUATED_METHODOLOGIES} are needed to score",
            qualifying=after.height,
            graduated=graduated.height,
        )
    false_pos = after.filter(pl.col("accuracy") < FALSE_POSITIVE_ACCURACY)
    report = DimensionReport.scored(
        name,
        100.0 * (1 - false_pos.height / after.height),
        f"{false_pos.height} of {after.height} graduations look like false positives",
        false_positives=false_pos.height,
    )
    report.flag_rows(
        "high",
        "injectable_below_chance",
        false_pos.filter(pl.col("quarantine").fill_null(0) == 0),
        "methodology_id",
        f"graduated methodolog(ies) are still injectable with accuracy below {FALSE_POSITIVE_ACCURACY:.0%} "
        "since graduation",
        action="Review these methodologies and consider raising "
        "METHODOLOGY_INJECTION_THRESHOLD or METHODOLOGY_MIN_USES.",
        reason="injectable methodologies perform below chance after graduation",
    )
    report.flag_rows(
        "low",
        "false_positive_demoted",
        false_pos.filter(pl.col("quarantine") != 0),
        "methodology_id",
        "false-positive graduation(s) were already demoted",
    )
    return report.result()


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
        return insufficient(name, "no methodology case or hint in the window", cases=0, hints=0)
    case_bad = cs.filter(~(pl.col("methodology_ok") & pl.col("run_ok")))
    hint_bad = hs.filter(~(pl.col("methodology_ok") & pl.col("run_ok") & pl.col("injectable_ok")))
    score = 100.0 * (total - case_bad.height - hint_bad.height) / total
    report = DimensionReport.scored(
        name,
        score,
        f"{case_bad.height + hint_bad.height} of {total} attributions are broken",
        cases=cs.height,
        hints=hs.height,
    )

    def missing(flag: str, column: str) -> pl.DataFrame:
        return pl.concat([bad.filter(~pl.col(flag)).select(column) for bad in (case_bad, hint_bad)])

    report.flag_rows(
        "high",
        "unknown_methodology",
        missing("methodology_ok", "methodology_id"),
        "methodology_id",
        "case(s)/hint(s) cite a methodology that does not exist",
        action="Re-run trading_memory_job and check that methodology ids cited by runs "
        "are the m_<dedup key> ids of stored methodologies.",
        reason="outcomes are attributed to unknown methodologies",
    )
    report.flag_rows(
        "high",
        "unknown_run",
        missing("run_ok", "run_id"),
        "run_id",
        "case(s)/hint(s) name an institution run that does not exist",
        action="Check the institution_runs landing file and raw_rejects for the missing runs.",
        reason="outcomes are attributed to runs that are not in raw.institution_runs",
    )
    report.flag_rows(
        "high",
        "injected_while_quarantined",
        hs.filter(~pl.col("injectable_ok")),
        "injection_id",
        "hint(s) injected a methodology that was not injectable",
        action="Audit the agent's injection path: only graduated methodologies may be injected.",
        reason="quarantined methodologies reached a prompt",
    )
    return report.result()


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
        return insufficient(name, "no methodology exists yet", methodologies=0)
    used = (
        as_frame(cases, CASE_COLUMNS, "methodology_cases")
        .filter(window.contains("recorded_at"))
        .select("methodology_id")
        .unique()
    )
    idle = ms.join(used, on="methodology_id", how="anti")
    score = 100.0 * (ms.height - idle.height) / ms.height
    report = DimensionReport.scored(
        name,
        score,
        f"{idle.height} of {ms.height} methodologies had no outcome in the window",
        idle=idle.height,
    )
    if idle.height:
        report.advise(
            "Check that scheduled institution runs cite methodologies and that the "
            "reflection ladder scores them once each window elapses.",
            f"{idle.height} methodolog(ies) without outcomes in the window",
        )
    report.flag_rows(
        "medium",
        "idle_graduated",
        idle.filter(pl.col("quarantine").fill_null(1) == 0),
        "methodology_id",
        "graduated methodolog(ies) recorded no outcome",
    )
    return report.result()


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
        return insufficient(name, "no graduation or demotion in the window", moved=0)
    flapping = moves.filter(pl.col("graduated") & pl.col("demoted"))
    score = 100.0 * (1 - flapping.height / moves.height)
    report = DimensionReport.scored(
        name,
        score,
        f"{flapping.height} of {moves.height} methodologies both graduated and were demoted",
        flapping=flapping.height,
    )
    report.flag_rows(
        "medium" if score < 80 else "low",
        "flapping",
        flapping,
        "methodology_id",
        "methodolog(ies) flapped between graduated and quarantined",
        action="Consider a higher METHODOLOGY_MIN_USES so graduation waits for a steadier Wilson bound.",
        reason="methodologies flap around the threshold",
    )
    return report.result()


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
        return insufficient(
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
    report = DimensionReport.scored(
        name, score, f"{ok} ok heartbeat(s) for {expected} expected", ok=ok, expected=expected
    )
    if failed:
        report.flag(
            "high" if failed >= ok else "medium",
            "failed_runs",
            f"{failed} learning run(s) in the window ended with status other than ok",
            {"failed": failed},
            action="Open the failed trading_memory_job runs in the Dagster UI and fix the failing asset.",
            reason=f"{failed} failed heartbeat(s)",
        )
    silence = window.end - last  # type: ignore[operator]
    if silence > 2 * expected_interval:
        report.flag(
            "high",
            "stale_heartbeat",
            f"no learning heartbeat for {silence.total_seconds() / 3600:.1f} h",
            {"last_heartbeat": last.isoformat()},
            action="Check that the learning schedule and the Dagster daemon are running.",
            reason="the learning loop has gone quiet",
        )
    return report.result()
