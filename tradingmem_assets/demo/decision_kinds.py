"""The trading case mix: which kinds of decision the demo builds, how many, and what each must produce.

Trading case mix: see DECISION_KINDS (kind -> share, floor) and KIND_REASONS (kind -> the reason
codes of SPEC §5 the kind is built to produce). `demo_decision_kinds(scale, seed)` returns every
decision's kind, expected reasons and reflection-relevant flags. Only the `recent` kind (decided
2024-06-24..28) has open windows and open positions at DEMO_AS_OF; every other synthetic-symbol
decision is dated no later than 2024-05-15, so its position is closed and its windows have elapsed.
Bulk decisions avoid days whose 7-day window misses any expected bar (exchange holidays,
MISSING_BARS), so short-window coverage problems come only from the gap_* kinds.
`mismatch_decision_id` executions name "<decision_id>_stale", a decision that does not exist;
`no_preview_exec` executions carry a decision_id but no preview and no consumption. Some clean
decisions have an exogenous market event inside their window; about 12% of all decisions miss one
required evidence kind.
"""

from __future__ import annotations

import numpy as np

# kind: (share of decisions, minimum count). "clean" takes the remainder.
DECISION_KINDS: dict[str, tuple[float, int]] = {
    "clean": (0.0, 0),
    "gap_partial": (0.0, 2),
    "gap_insufficient": (0.0, 2),
    "recent": (0.01, 3),
    "no_preview_exec": (0.01, 2),
    "no_preview_none": (0.01, 2),
    "preview_not_consumed": (0.02, 2),
    "preview_consumed_multiple": (0.01, 2),
    "mismatch_symbol": (0.004, 2),
    "mismatch_direction": (0.004, 2),
    "mismatch_account_id": (0.004, 2),
    "mismatch_market": (0.004, 2),
    "mismatch_decision_id": (0.004, 2),
    "autopilot": (0.015, 2),
    "strategy_studio": (0.015, 2),
    "xstrategy": (0.015, 2),
    "workflow": (0.015, 2),
    "automation_flag_manual": (0.01, 2),
    "external_unverified": (0.02, 2),
    "external_verified": (0.03, 2),
    "perp_source_null": (0.006, 2),
    "perp_source_unknown": (0.004, 2),
    "unknown_role": (0.01, 2),
    "wrong_skill": (0.01, 2),
    "open_position": (0.02, 2),
    "liquidated": (0.01, 2),
    "no_role": (0.01, 2),
}
_K = {name: i for i, name in enumerate(DECISION_KINDS)}
# What each kind is built to produce under SPEC §5 ("eligible" kinds have no reason once evaluated).
KIND_REASONS: dict[str, tuple[str, ...]] = {
    "clean": (),
    "gap_partial": (),
    "gap_insufficient": ("insufficient_evaluation",),
    "recent": ("not_settled",),
    "no_preview_exec": ("no_preview", "no_execution"),
    "no_preview_none": ("no_preview", "no_execution"),
    "preview_not_consumed": ("preview_not_consumed", "no_execution"),
    "preview_consumed_multiple": ("preview_consumed_multiple",),
    "mismatch_symbol": ("link_mismatch:symbol",),
    "mismatch_direction": ("link_mismatch:direction",),
    "mismatch_account_id": ("link_mismatch:account_id",),
    "mismatch_market": ("link_mismatch:market",),
    "mismatch_decision_id": ("link_mismatch:decision_id",),
    "autopilot": ("automated_source",),
    "strategy_studio": ("automated_source",),
    "xstrategy": ("automated_source",),
    "workflow": ("automated_source",),
    "automation_flag_manual": ("automated_source",),
    "external_unverified": ("unverified_external",),
    "external_verified": (),
    "perp_source_null": ("unknown_source",),
    "perp_source_unknown": ("unknown_source",),
    "unknown_role": ("unknown_role",),
    "wrong_skill": ("role_not_declared_by_skill",),
    "open_position": ("not_settled",),
    "liquidated": (),
    "no_role": (),
}


def _kind_counts(n: int) -> np.ndarray:
    counts = np.array(
        [
            0 if name == "clean" else max(floor, round(share * n))
            for name, (share, floor) in DECISION_KINDS.items()
        ],
        dtype=np.int64,
    )
    counts[_K["clean"]] = n - counts.sum()
    if counts[_K["clean"]] < 1:
        raise ValueError(f"{n} decisions cannot hold every case kind")
    return counts
