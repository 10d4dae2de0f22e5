"""What an audit dimension reports: its score, findings and advisory actions (SPEC section 9).

Every dimension returns a :class:`DimensionResult` ``(score 0-100 or None, findings,
advisory_actions)``; ``None`` means too little data to score honestly and drops the dimension from
the composite. A score below 80 is itself a finding, whose severity grows as the score falls.
Advisories are for an operator: the audit itself never acts on learning state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

Severity = Literal["high", "medium", "low"]
SEVERITIES: tuple[str, ...] = ("high", "medium", "low")
# At most this many example ids in a finding's detail.
SAMPLE_IDS = 10


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


def severity_for(score: float) -> Severity | None:
    """< 40 high, 40-60 medium, 60-80 low; None (no finding) from 80 up."""
    if score < 40:
        return "high"
    if score < 60:
        return "medium"
    if score < 80:
        return "low"
    return None


def sample_ids(frame: pl.DataFrame, column: str) -> list[str]:
    """The first few distinct ids of ``column``, sorted, for a finding's detail."""
    return sorted(frame.get_column(column).drop_nulls().unique().to_list())[:SAMPLE_IDS]


def insufficient(name: str, message: str, **detail: Any) -> DimensionResult:
    """A dimension with too little data: no score, one low ``insufficient_data`` finding."""
    return DimensionResult(name, None, (Finding(name, "low", "insufficient_data", message, detail),))


@dataclass
class DimensionReport:
    """One dimension's score, findings and advisories, collected in order while it scores."""

    name: str
    score: float
    findings: list[Finding] = field(default_factory=list)
    advisories: list[Advisory] = field(default_factory=list)

    @classmethod
    def scored(cls, name: str, score: float, message: str, **detail: Any) -> DimensionReport:
        """The report of a dimension scored ``score``, opened with the ``low_score`` finding when
        the score is below 80 (nothing from 80 up)."""
        report = cls(name, score)
        severity = severity_for(score)
        if severity is not None:
            report.flag(severity, "low_score", message, {"score": round(score, 2), **detail})
        return report

    def flag(
        self,
        severity: Severity,
        code: str,
        message: str,
        detail: Mapping[str, Any],
        *,
        action: str | None = None,
        reason: str = "",
    ) -> None:
        """A finding and, given ``action``, the advisory that answers it."""
        self.findings.append(Finding(self.name, severity, code, message, detail))
        if action is not None:
            self.advise(action, reason)

    def flag_rows(
        self,
        severity: Severity,
        code: str,
        rows: pl.DataFrame,
        column: str,
        message: str,
        *,
        action: str | None = None,
        reason: str = "",
    ) -> None:
        """A finding about ``rows``, unless there are none: "<count> <message>", with a sample of
        their ``column`` ids as the detail ``<column>s``."""
        if rows.height:
            detail = {f"{column}s": sample_ids(rows, column)}
            self.flag(severity, code, f"{rows.height} {message}", detail, action=action, reason=reason)

    def advise(self, action: str, reason: str) -> None:
        self.advisories.append(Advisory(self.name, action, reason))

    def result(self) -> DimensionResult:
        return DimensionResult(self.name, self.score, tuple(self.findings), tuple(self.advisories))
