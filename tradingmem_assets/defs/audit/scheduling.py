"""The busy-aware audit trigger's decision, as a pure function of what the sensor observed.

No Dagster import: the sensor gathers run records and hands plain values here, so every branch
(skip while busy, defer while idle too short, force after N deferrals, run when idle) is
unit-testable and the sensor stays a thin reader of Dagster's own records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

Action = Literal["disabled", "skip_audit_running", "skip_learning_busy", "defer", "force", "run"]


@dataclass(frozen=True)
class SchedulerState:
    """What the sensor cursor remembers between ticks."""

    deferrals: int = 0
    last_tick: str | None = None
    last_pass: str | None = None

    def to_cursor(self) -> str:
        return json.dumps(
            {"deferrals": self.deferrals, "last_tick": self.last_tick, "last_pass": self.last_pass},
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
            )
        except (ValueError, TypeError, AttributeError):
            return cls()


@dataclass(frozen=True)
class SchedulerDecision:
    action: Action
    reason: str
    state: SchedulerState

    @property
    def launch(self) -> bool:
        return self.action in ("force", "run")


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
) -> SchedulerDecision:
    """One tick of the audit schedule.

    In order: an audit switched off never runs; a pass already queued or running is not doubled;
    a learning run queued or in progress skips the tick (never forced: isolation outranks
    starvation, and the deferral counter is left as it is); learning idle for less than
    ``min_idle_s`` defers the pass (counter + 1) unless ``max_deferrals`` consecutive deferrals
    already happened, in which case the pass is forced; otherwise the pass runs. A launch resets
    the counter.
    """
    tick = replace(state, last_tick=now.isoformat())
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
            f"learning run (deferrals so far: {state.deferrals}/{max_deferrals})",
            tick,
        )
    launched = replace(tick, deferrals=0, last_pass=now.isoformat())
    idle_s = None if last_learning_end is None else (now - last_learning_end).total_seconds()
    if idle_s is not None and idle_s < min_idle_s:
        if state.deferrals >= max_deferrals:
            return SchedulerDecision(
                "force",
                f"forcing the audit after {state.deferrals} consecutive deferrals (starvation guard); "
                f"learning has been idle for {idle_s:.0f}s of the {min_idle_s:.0f}s wanted",
                launched,
            )
        deferred = replace(tick, deferrals=state.deferrals + 1)
        return SchedulerDecision(
            "defer",
            f"deferred ({deferred.deferrals}/{max_deferrals}): learning finished {idle_s:.0f}s ago, "
            f"the audit waits for {min_idle_s:.0f}s of idle",
            deferred,
        )
    idle_text = "learning has never run" if idle_s is None else f"learning idle for {idle_s:.0f}s"
    return SchedulerDecision("run", f"running the audit: {idle_text}", launched)
