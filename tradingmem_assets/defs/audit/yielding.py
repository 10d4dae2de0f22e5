"""The audit yields to learning: which runs are learning runs, and whether a pass must give way.

No Dagster import: the audit asset and its scheduler read run records and hand plain values here.
A learning run is a run of a learning job (``trading_memory_job``) or any run whose asset
selection holds a learning asset (an ad-hoc materialization from the UI or the CLI); a run of the
implicit asset job with no selection materializes every asset, learning included.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from tradingmem_assets.lib import tables

# Dagster's implicit asset job (ad-hoc materializations from the UI, `dagster asset materialize`)
IMPLICIT_ASSET_JOB = "__ASSET_JOB"
# the run tags a pass reads and writes (the scheduler reads them back from the run records)
AUDIT_TRIGGER_TAG = "tradingmem/audit_trigger"
YIELDED_TO_TAG = "tradingmem/audit_yielded_to"
FORCED_TRIGGER = "force"

Phase = Literal["score", "write"]
PassOutcome = Literal["in_flight", "yielded", "completed", "failed", "unknown"]


@dataclass(frozen=True)
class RunSeen:
    """One run record as the audit sees it."""

    run_id: str
    job_name: str
    status: str  # Dagster's run status, lower case: queued, starting, started, ...
    asset_selection: frozenset[str] | None = None

    def describe(self) -> str:
        what = self.job_name
        if self.job_name == IMPLICIT_ASSET_JOB and self.asset_selection:
            learning = sorted(self.asset_selection & tables.LEARNING_ASSETS)
            shown = ", ".join(learning[:3]) + (", ..." if len(learning) > 3 else "")
            what = f"materialization of {shown}"
        return f"{what} run {self.run_id[:8]} {self.status}"


def is_learning_run(job_name: str, asset_selection: Iterable[str] | None) -> bool:
    """Whether a run writes learning state: a learning job, or a selection holding a learning asset."""
    if job_name in tables.LEARNING_JOB_NAMES:
        return True
    if asset_selection is not None:
        return bool(set(asset_selection) & tables.LEARNING_ASSETS)
    return job_name == IMPLICIT_ASSET_JOB


def learning_runs(runs: Iterable[RunSeen], *, exclude_run_id: str | None = None) -> list[RunSeen]:
    """The learning runs among ``runs`` (the audit's own run excluded), in the order given."""
    return [r for r in runs if r.run_id != exclude_run_id and is_learning_run(r.job_name, r.asset_selection)]


@dataclass(frozen=True)
class YieldDecision:
    """The pass gives way: it writes no report and names the run it yielded to."""

    yielded_to: RunSeen
    phase: Phase
    waiting: tuple[RunSeen, ...]

    @property
    def reason(self) -> str:
        others = len(self.waiting) - 1
        more = f" (and {others} more learning run(s))" if others > 0 else ""
        return (
            f"the audit pass yielded to {self.yielded_to.describe()}{more} before its {self.phase} phase; "
            "no report was written, and the scheduler counts this pass as a deferral"
        )


def should_yield(waiting: list[RunSeen], *, phase: Phase, trigger: str | None) -> YieldDecision | None:
    """Between two phases: yield to the first waiting learning run, unless the starvation guard
    forced this pass (then it finishes whatever waits)."""
    if not waiting or trigger == FORCED_TRIGGER:
        return None
    return YieldDecision(yielded_to=waiting[0], phase=phase, waiting=tuple(waiting))


def pass_outcome(status: str | None, tags: dict[str, str]) -> PassOutcome:
    """What became of a pass the scheduler launched, from its run record (None: no record)."""
    if status is None:
        return "unknown"
    if status in ("queued", "not_started", "starting", "started", "canceling"):
        return "in_flight"
    if tags.get(YIELDED_TO_TAG):
        return "yielded"
    return "completed" if status == "success" else "failed"
