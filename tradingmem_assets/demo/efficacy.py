"""A role that learns (SPEC section 17): macro_rates trades better once its first lessons are known.

macro_rates decides EURUSD from June 2017 on, with a 30-day window and 30 days of maturity, so its
first lessons become known around late August 2017 (at the default scale). From LEARNED_AT on,
most of its decisions (P_LEARNED) wait for a rate view the market has not priced in yet: they
fall on a day whose next 30 days move beyond CLEAR_BAND times the role's noise band, in the
direction of that move, so they mostly win. The other roles decide as before (their lessons make
no measurable difference). The draws come from their own stream, so nothing else in the world moves.
"""

from __future__ import annotations

import numpy as np

from tradingmem_assets.demo.clock import _DAY, _HOUR, _t
from tradingmem_assets.demo.frames import _rng
from tradingmem_assets.demo.prices import SYMBOLS, _Book

LEARNING_ROLE = 4  # macro_rates in roles._ROLES
LEARNED_AT = _t(2017, 9, 1)
P_LEARNED = 0.85
CLEAR_BAND = 1.2  # |30-day move| / (noise_k x volatility x sqrt(30)), with room for fills and timing
_HORIZON_DAYS = 30
_VOL_BARS = 30


def _clear_days(book: _Book, sym: str, days: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The candidate days whose next 30 days moved clearly, and the sign of that move (+1 up)."""
    ts, close = book.ts[sym], book.close[sym]
    sidx = np.full(len(days), SYMBOLS.index(sym))
    entry = book.close_at(sidx, days * _DAY + 12 * _HOUR)
    exit_ = book.close_at(sidx, days * _DAY + 12 * _HOUR + _HORIZON_DAYS * _DAY)
    band = np.empty(len(days))
    for i, d in enumerate(days):  # the volatility evaluation uses: 30 bars strictly before the day
        k = np.searchsorted(ts, d * _DAY, side="right")
        band[i] = np.diff(np.log(close[max(0, k - _VOL_BARS) : k])).std(ddof=1) * np.sqrt(_HORIZON_DAYS)
    move = exit_ / entry - 1
    clear = np.abs(move) > CLEAR_BAND * band
    return days[clear], np.sign(move[clear]).astype(np.int64)


def learned_decisions(
    seed: int,
    book: _Book,
    role: np.ndarray,
    sym: np.ndarray,
    day: np.ndarray,
    direction: np.ndarray,
    eligible: np.ndarray,
    hi_day: dict[str, int],
) -> tuple[np.ndarray, np.ndarray]:
    """``day`` and ``direction`` (0 long, 1 short) with the learning role's later decisions moved.

    ``eligible``: decisions that may move (bulk decisions, not the timed case kinds); ``hi_day``:
    the last decision day per symbol.
    """
    rng = _rng(seed, "efficacy")
    n = len(day)
    learned = rng.random(n) < P_LEARNED
    pick = rng.random(n)
    day, direction = day.copy(), direction.copy()
    for s in np.unique(sym[role == LEARNING_ROLE]):
        name = SYMBOLS[s]
        m = (role == LEARNING_ROLE) & (sym == s) & eligible & learned & (day * _DAY >= LEARNED_AT)
        if not m.any():
            continue
        candidates = book.safe_days(name, LEARNED_AT // _DAY, hi_day[name])
        clear, sign = _clear_days(book, name, candidates)
        if len(clear) == 0:
            continue
        k = np.minimum((pick[m] * len(clear)).astype(np.int64), len(clear) - 1)
        day[m] = clear[k]
        direction[m] = np.where(sign[k] > 0, 0, 1)
    return day, direction
