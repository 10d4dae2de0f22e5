"""`tradingmem doctor`: what in the warehouse needs an operator, as pure checks over plain data.

The CLI reads aggregates from the warehouse (``cli/doctor.py``) and hands them here; each check
returns a :class:`DoctorCheck` whose ``status`` is ``ok``, ``info`` (worth knowing, no action),
``action`` (someone should act: the command exits non-zero) or ``not_materialized`` (the table does
not exist yet; never an action by itself, never a crash).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import polars as pl

Status = Literal["ok", "info", "action", "not_materialized"]
STALE_HEARTBEAT_AFTER = timedelta(days=2)
ACTION_TIERS = ("degraded", "alarm")
SAMPLE = 10


@dataclass(frozen=True)
class DoctorCheck:
    name: str
    status: Status
    summary: str
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def needs_action(self) -> bool:
        return self.status == "action"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "summary": self.summary,
            "details": dict(self.details),
        }


def not_materialized(name: str, *tables: str) -> DoctorCheck:
    return DoctorCheck(
        name,
        "not_materialized",
        f"{', '.join(tables)} not materialized yet",
        {"missing_tables": list(tables)},
    )


def overdue_pending_cases(
    pending: pl.DataFrame, maturity_days: Mapping[str, int], as_of: datetime
) -> DoctorCheck:
    """Cases still ``pending`` longer than twice their role's maturity window.

    ``pending``: case_id, role_id, since (when the case's clock started: its decision time).
    """
    name = "overdue_pending_cases"
    if pending.height == 0:
        return DoctorCheck(name, "ok", "no pending case", {"pending": 0})
    maturity = pl.DataFrame(
        {"role_id": list(maturity_days), "maturity_days": [int(v) for v in maturity_days.values()]},
        schema={"role_id": pl.String, "maturity_days": pl.Int64},
    )
    aged = pending.join(maturity, on="role_id", how="left").with_columns(
        ((pl.lit(as_of) - pl.col("since")).dt.total_seconds() / 86400).alias("age_days")
    )
    overdue = aged.filter(
        pl.col("maturity_days").is_not_null() & (pl.col("age_days") > 2 * pl.col("maturity_days"))
    ).sort("age_days", descending=True)
    by_role = dict(overdue.group_by("role_id").len().sort("role_id").rows())
    details = {
        "pending": pending.height,
        "overdue": overdue.height,
        "overdue_by_role": by_role,
        "sample_case_ids": overdue.get_column("case_id").head(SAMPLE).to_list(),
    }
    if overdue.height:
        message = f"{overdue.height} case(s) pending longer than twice their maturity window"
        return DoctorCheck(name, "action", message, details)
    return DoctorCheck(name, "ok", f"{pending.height} pending case(s), none overdue", details)


def evaluation_status(counts: pl.DataFrame) -> DoctorCheck:
    """Evaluation runs by status (``counts``: status, is_primary, n); insufficient primary runs need data."""
    name = "evaluation_runs"
    totals = {s: int(n) for s, n in counts.group_by("status").agg(pl.col("n").sum()).rows()}
    primary = {
        s: int(n)
        for s, n in counts.filter(pl.col("is_primary")).group_by("status").agg(pl.col("n").sum()).rows()
    }
    details = {"by_status": totals, "primary_by_status": primary}
    insufficient = primary.get("insufficient_data", 0)
    pending = totals.get("pending", 0)
    if insufficient:
        message = f"{insufficient} primary evaluation run(s) have insufficient price data; {pending} pending"
        return DoctorCheck(name, "action", message, details)
    if pending or totals.get("insufficient_data", 0):
        message = (
            f"{pending} pending and {totals.get('insufficient_data', 0)} insufficient (non-primary) run(s)"
        )
        return DoctorCheck(name, "info", message, details)
    return DoctorCheck(name, "ok", f"{sum(totals.values())} run(s), all complete", details)


def _reason_lists(reasons: pl.Series) -> pl.Series:
    if reasons.dtype == pl.String:
        return reasons.str.json_decode(pl.List(pl.String))
    return reasons.cast(pl.List(pl.String))


def quarantined_by_reason(quarantined: pl.DataFrame) -> DoctorCheck:
    """Quarantined cases counted by each reason code (``quarantined``: case_id, reasons)."""
    name = "quarantined_cases"
    if quarantined.height == 0:
        return DoctorCheck(name, "ok", "no quarantined case", {"quarantined": 0, "by_reason": {}})
    reasons = (
        quarantined.with_columns(_reason_lists(quarantined.get_column("reasons")).alias("reason"))
        .explode("reason")
        .group_by("reason")
        .len()
        .sort(["len", "reason"], descending=[True, False])
    )
    by_reason = {str(r): int(n) for r, n in reasons.rows()}
    return DoctorCheck(
        name,
        "action",
        f"{quarantined.height} quarantined case(s): "
        + ", ".join(f"{r} x{n}" for r, n in list(by_reason.items())[:5]),
        {"quarantined": quarantined.height, "by_reason": by_reason},
    )


def adjudication_backlog(conflicted: pl.DataFrame) -> DoctorCheck:
    """Memory units with conflicts (``conflicted``: unit_id, customer_id, fact_key, conflict_count)."""
    name = "memory_units_awaiting_adjudication"
    if conflicted.height == 0:
        return DoctorCheck(name, "ok", "no memory unit waits for adjudication", {"units": 0})
    by_key = dict(conflicted.group_by("fact_key").len().sort("fact_key").rows())
    return DoctorCheck(
        name,
        "action",
        f"{conflicted.height} memory unit(s) with conflicts wait for adjudication",
        {
            "units": conflicted.height,
            "customers": conflicted.get_column("customer_id").n_unique(),
            "by_fact_key": by_key,
            "sample_unit_ids": conflicted.sort("unit_id").get_column("unit_id").head(SAMPLE).to_list(),
        },
    )


def budget_status(summary: Sequence[Mapping[str, Any]]) -> DoctorCheck:
    """LLM spend against caps (rows of ``core.budget.budget_summary``): an exhausted category needs action."""
    name = "llm_budget"
    rows = [dict(r) for r in summary]
    exhausted = [r["category"] for r in rows if r.get("status") == "exhausted"]
    soft = [r["category"] for r in rows if r.get("status") == "soft"]
    details = {"categories": rows}
    if exhausted:
        return DoctorCheck(name, "action", f"budget exhausted for {', '.join(exhausted)}", details)
    if soft:
        return DoctorCheck(name, "info", f"past the soft threshold: {', '.join(soft)}", details)
    spent = sum(float(r.get("month_usd") or 0.0) for r in rows)
    return DoctorCheck(name, "ok", f"within budget (${spent:.2f} spent this month)", details)


def last_audit(latest: Mapping[str, Any] | None, isolation_violations: int) -> DoctorCheck:
    """The newest audit pass's tier; degraded/alarm or an isolation violation needs action."""
    name = "last_audit"
    if latest is None:
        return DoctorCheck(name, "info", "no audit pass yet (run `tradingmem audit run`)", {})
    details = {
        "pass_id": latest.get("pass_id"),
        "ran_at": latest.get("ran_at"),
        "tier": latest.get("tier"),
        "composite": latest.get("composite"),
        "isolation_ok": latest.get("isolation_ok"),
        "isolation_violations": isolation_violations,
    }
    tier = latest.get("tier")
    composite = latest.get("composite")
    score = "" if composite is None else f" ({float(composite):.1f})"
    if latest.get("isolation_ok") is False:
        return DoctorCheck(
            name, "action", f"the last audit pass changed learning tables (tier {tier})", details
        )
    if tier in ACTION_TIERS:
        return DoctorCheck(name, "action", f"last audit tier {tier}{score}", details)
    return DoctorCheck(
        name, "ok" if tier in ("healthy", "watch") else "info", f"last audit tier {tier}{score}", details
    )


def heartbeat_staleness(
    latest: Mapping[str, Any] | None, now: datetime, stale_after: timedelta = STALE_HEARTBEAT_AFTER
) -> DoctorCheck:
    """The newest learning heartbeat (status, ts): none, too old, or failed needs action."""
    name = "learning_heartbeat"
    if latest is None:
        return DoctorCheck(
            name, "action", "no learning heartbeat at all: the learning job has never finished", {}
        )
    ts: datetime = latest["ts"]
    age = now - ts
    details = {
        "last_ts": ts.isoformat(),
        "last_status": latest.get("status"),
        "age_hours": round(age / timedelta(hours=1), 2),
    }
    if age > stale_after:
        return DoctorCheck(
            name,
            "action",
            f"last learning heartbeat is {age / timedelta(hours=1):.0f} h old (stale)",
            details,
        )
    if latest.get("status") != "ok":
        return DoctorCheck(name, "action", f"the last learning run ended {latest.get('status')}", details)
    return DoctorCheck(name, "ok", f"last learning heartbeat {age / timedelta(hours=1):.1f} h ago", details)


def landing_rejects(by_table: pl.DataFrame) -> DoctorCheck:
    """Landing rows rejected per table (``by_table``: table_name, n, top_reason)."""
    name = "landing_rejects"
    if by_table.height == 0:
        return DoctorCheck(name, "ok", "no landing row rejected", {"rejected": 0, "by_table": {}})
    rows = by_table.sort("table_name").to_dicts()
    total = int(by_table.get_column("n").sum())
    return DoctorCheck(
        name,
        "action",
        f"{total} landing row(s) rejected in {by_table.height} table(s); see main.raw_rejects",
        {
            "rejected": total,
            "by_table": {r["table_name"]: {"rows": int(r["n"]), "top_reason": r["top_reason"]} for r in rows},
        },
    )


def harmful_memory(hurting: pl.DataFrame) -> DoctorCheck:
    """Lessons or methodologies whose later results are worse, by the Wilson intervals (SPEC 17).

    ``hurting``: the ``memory_efficacy`` rows with verdict ``hurts`` (subject_kind, subject_id,
    role_id, scope, before_win_rate, after_win_rate).
    """
    name = "memory_that_hurts"
    if hurting.height == 0:
        return DoctorCheck(name, "ok", "no lesson or methodology hurts later results", {})
    sample = [
        f"{r['subject_kind']} {r['subject_id']}"
        + (f" of {r['role_id']}" if r["role_id"] else "")
        + f" ({r['scope']}): win rate {r['before_win_rate']:.2f} -> {r['after_win_rate']:.2f}"
        for r in hurting.head(SAMPLE).iter_rows(named=True)
    ]
    return DoctorCheck(
        name,
        "action",
        f"{hurting.height} learned subject(s) hurt later results: review or retire them",
        {"hurting": sample},
    )


def report(checks: Sequence[DoctorCheck], as_of: datetime) -> dict[str, Any]:
    """The doctor's one JSON document."""
    return {
        "as_of": as_of.isoformat(),
        "needs_action": any(c.needs_action for c in checks),
        "actions": [c.name for c in checks if c.needs_action],
        "checks": [c.to_dict() for c in checks],
    }


def render(document: Mapping[str, Any]) -> str:
    """The human-readable form of the report."""
    marks = {"ok": "ok  ", "info": "info", "action": "ACT ", "not_materialized": "--  "}
    lines = [f"tradingmem doctor (as of {document['as_of']})"]
    for c in document["checks"]:
        lines.append(f"  [{marks[c['status']]}] {c['name']}: {c['summary']}")
    lines.append(
        "needs action: " + (", ".join(document["actions"]) if document["needs_action"] else "nothing")
    )
    return "\n".join(lines)
