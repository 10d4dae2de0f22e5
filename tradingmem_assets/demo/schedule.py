"""The institution's daily schedule over the last month before the anchor: what the first audit sees.

The audit looks at [DEMO_AS_OF - 30 days, DEMO_AS_OF] (SPEC section 9). The 18-month history is
sized by the scale factor, so at a small scale only a handful of runs fall in that window; the daily
schedule is the same at every scale: one scheduled run per symbol per day from 2024-06-01 (six a
day, 180 runs), which is what makes every audit dimension scoreable on the demo's first pass:

- synthesis_quality: their analyst, bull and bear re-propose templates (merges), and
  SCHEDULE_SPECIALS adds two prompt-injection and two invalid proposals (a few rejected candidates).
- graduation_fp_rate: the graduated popular templates keep being cited (with ≥ 5 outcomes after
  graduation each); Index trend filter, decayed since 2024, is cited too.
- coverage_health: popular templates plus random second citations reach almost every methodology.
- quarantine_churn: JUNE_TEMPLATE is proposed by the first run's analyst on 2024-06-01 and, from
  the next day on, cited by every equity run whose setup is clear (the best action is right at
  every ladder window), so it is right almost every time and graduates inside the window.
"""

from __future__ import annotations

import numpy as np

from tradingmem_assets.demo.clock import _DAY, _t

SCHEDULE_FROM = _t(2024, 6, 1)
SCHEDULE_DAYS = 30
# symbols of institution.py's _RUN_SYMBOLS, one scheduled run each per day
SCHEDULE_SYMBOLS = 6
# popular templates by asset class in the schedule, as in the history: (template index, share);
# on top, every equity run whose setup is clear cites JUNE_TEMPLATE once it is proposed
SCHEDULE_POPULAR = {
    "crypto_major": ((0, 0.6), (3, 0.2)),
    "crypto_alt": ((5, 0.7),),
    "equity": ((10, 0.65),),
    "index": ((15, 0.7),),
}
# special proposals of the schedule (indices of methodologies._special_proposals): astrology,
# 15-minute bars (invalid); "ignore previous instructions", a <system> block (injection)
SCHEDULE_SPECIALS = (0, 5, 1, 6)


def schedule_runs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kind, symbol index, started_at) of the schedule's runs in time order: all scheduled, a few
    minutes after midnight UTC, symbols in a fixed order a minute apart."""
    days = np.repeat(np.arange(SCHEDULE_DAYS), SCHEDULE_SYMBOLS)
    rsym = np.tile(np.arange(SCHEDULE_SYMBOLS), SCHEDULE_DAYS)
    started = SCHEDULE_FROM + days * _DAY + 300 + rsym * 60 + rng.integers(0, 60, len(days))
    return np.zeros(len(days), dtype=np.int64), rsym, started
