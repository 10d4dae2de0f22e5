"""The busy-aware audit trigger's decision, as a pure function of what the sensor observed.

No Dagster import: the sensor gathers run records and hands plain values here, so every branch
(skip while busy, defer while idle too short, force after N deferrals, run when idle, count a
pass that yielded to learning as a deferral) is unit-testable and the sensor stays a thin reader
of Dagster's own records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from tradingmem_assets.defs.audit.yielding import PassOutcome

Action = Literal["disabled", "skip_audit_running", "skip_learning_busy", "defer", "force", "run"]


@dataclass(frozen=True)
class SchedulerState:
    """What the sensor cursor remembers between ticks."""

    deferrals: int = 0
    last_tick: str | None = None
    last_pass: str | None = None
    # the run key of the last pass launched whose outcome is not known yet, and the deferrals
    # counted before it was launched (a pass that yields is one more deferral on top of those)
    pending_run_key: str | None = None
    pending_deferrals: int = 0

    def to_cursor(self) -> str:
        return json.dumps(
            {
                "deferrals": self.deferrals,
                "last_tick": self.last_tick,
                "last_pass": self.last_pass,
                "pending_run_key": self.pending_run_key,
                "pending_deferrals": self.pending_deferrals,
            },
            sort_keys=True,
        )

    @classmethod
    def from_cursor(cls, cursor: str | None) -> SchedulerState:
        """The state in a cursor; an empty or unreadable cursor starts afresh (no deferrals)."""
        if not cursor:
            return cls()
        try:
            raw = json.loads(cursor)
            return cls(
                deferrals=max(0, int(raw.get("deferrals", 0))),
                last_tick=raw.get("last_tick"),
                last_pass=raw.get("last_pass"),
                pending_run_key=raw.get("pending_run_key"),
                pending_deferrals=max(0, int(raw.get("pending_deferrals", 0))),
            )
        except (ValueError, TypeError, AttributeError):
            return cls()


@dataclass(frozen=True)
class SchedulerDecision:
    action: Action
    reason: str
    state: SchedulerState
    run_key: str | None = None  # the run key of the pass to launch

    @property
    def launch(self) -> bool:
        return self.action in ("force", "run")


def run_key_for(now: datetime) -> str:
    return f"audit:{now.isoformat()}"


def settle_pending(
    state: SchedulerState, outcome: PassOutcome | None, yielded_to: str | None, max_deferrals: int
) -> tuple[SchedulerState, str | None]:
    """Fold the outcome of the last launched pass into the state, with a sentence when it yielded.

    A pass that yielded to learning is a deferral: the counter becomes the deferrals counted before
    that pass was launched, plus one. A pass still in flight stays pending; any other outcome (a
    report written, a failure, no record) just clears it.
    """
    if state.pending_run_key is None or outcome is None or outcome == "in_flight":
        return state, None
    if outcome == "yielded":
        deferrals = state.pending_deferrals + 1
        settled = replace(state, deferrals=deferrals, pending_run_key=None, pending_deferrals=0)
        return settled, (
            f"the last pass yielded to {yielded_to or 'a learning run'}: deferral {deferrals}/{max_deferrals}"
        )
    return replace(state, pending_run_key=None, pending_deferrals=0), None


def decide(
    now: datetime,
    state: SchedulerState,
    *,
    enabled: bool,
    learning_in_flight: list[str],
    audit_in_flight: bool,
    last_learning_end: datetime | None,
    min_idle_s: float,
    max_deferrals: int,
    last_pass_outcome: PassOutcome | None = None,
    last_pass_yielded_to: str | None = None,
) -> SchedulerDecision:
    """One tick of the audit schedule.

    In order: an audit switched off never runs; a pass already queued or running is not doubled;
    a learning run queued or in progress skips the tick (never forced: isolation outranks
    starvation, and the deferral counter is left as it is); learning idle for less than
    ``min_idle_s`` defers the pass (counter + 1) unless ``max_deferrals`` consecutive deferrals
    already happened, in which case the pass is forced; otherwise the pass runs. A launch resets
    the counter, and remembers the pass as pending: when its outcome (``last_pass_outcome``, read
    from its run record on a later tick) says it yielded to learning, that counts as a deferral.
    """
    state, yielded = settle_pending(state, last_pass_outcome, last_pass_yielded_to, max_deferrals)
    tick = replace(state, last_tick=now.isoformat())
    decision = _skip(tick, enabled, learning_in_flight, audit_in_flight, max_deferrals)
    if decision is None:
        decision = _launch(now, tick, last_learning_end, min_idle_s, max_deferrals)
    if yielded:
        decision = replace(decision, reason=f"{yielded}; {decision.reason}")
    return decision


def _skip(
    tick: SchedulerState,
    enabled: bool,
    learning_in_flight: list[str],
    audit_in_flight: bool,
    max_deferrals: int,
) -> SchedulerDecision | None:
    """Why no pass may start at this tick at all, or None."""
    if not enabled:
        return SchedulerDecision(
            "disabled", "the methodology audit is switched off (METHODOLOGY_AUDIT_ENABLED=0)", tick
        )
    if audit_in_flight:
        return SchedulerDecision(
            "skip_audit_running", "an audit pass is already queued or running; not starting another", tick
        )
    if learning_in_flight:
        return SchedulerDecision(
            "skip_learning_busy",
            f"learning is busy ({', '.join(learning_in_flight)}); the audit never runs beside a "
            f"learning run (deferrals so far: {tick.deferrals}/{max_deferrals})",
            tick,
        )
    return None


def _launch(
    now: datetime,
    tick: SchedulerState,
    last_learning_end: datetime | None,
    min_idle_s: float,
    max_deferrals: int,
) -> SchedulerDecision:
    """Learning is idle: run the pass, defer it while learning is too recent, or force it."""
    run_key = run_key_for(now)
    launched = replace(
        tick,
        deferrals=0,
        last_pass=now.isoformat(),
        pending_run_key=run_key,
        pending_deferrals=tick.deferrals,
    )
    idle_s = None if last_learning_end is None else (now - last_learning_end).total_seconds()
    if idle_s is not None and idle_s < min_idle_s:
        if tick.deferrals >= max_deferrals:
            return SchedulerDecision(
                "force",
                f"forcing the audit after {tick.deferrals} consecutive deferrals (starvation guard); "
                f"learning has been idle for {idle_s:.0f}s of the {min_idle_s:.0f}s wanted",
                launched,
                run_key,
            )
        deferred = replace(tick, deferrals=tick.deferrals + 1)
        return SchedulerDecision(
            "defer",
            f"deferred ({deferred.deferrals}/{max_deferrals}): learning finished {idle_s:.0f}s ago, "
            f"the audit waits for {min_idle_s:.0f}s of idle",
            deferred,
        )
    idle_text = "learning has never run" if idle_s is None else f"learning idle for {idle_s:.0f}s"
    return SchedulerDecision("run", f"running the audit: {idle_text}", launched, run_key)
