"""Market events: scheduled earnings and rate decisions, plus a few exogenous shocks (outages, bans, flash
crashes) placed inside the windows of some clean decisions, which reflection must not blame on the role."""

from __future__ import annotations

import numpy as np
import polars as pl

from tradingmem_assets.demo.clock import _AS_OF, _DAY, _t
from tradingmem_assets.demo.frames import _dt, _ids, _pick
from tradingmem_assets.demo.prices import SYMBOLS

_EXOGENOUS_KINDS = ("exchange_outage", "regulatory_ban", "flash_crash")
_EXOGENOUS_EVENTS = 12  # ~1-2 per symbol and year of decisions: under a tenth of the windows


def _market_events(
    rng: np.random.Generator,
    candidates: np.ndarray,
    start: np.ndarray,
    horizon_days: np.ndarray,
    sym: np.ndarray,
    has_exec: np.ndarray,
) -> tuple[pl.DataFrame, np.ndarray]:
    """The market_events table, and per decision whether an exogenous event lies inside its window.

    Per decision: `start` (first execution; meaningless where not `has_exec`), `horizon_days` and `sym`.
    Exogenous shocks fall inside the windows of some `candidates` (clean decisions).
    """
    n_exo = min(len(candidates), _EXOGENOUS_EVENTS)  # a realistic density whatever the scale
    exo_dec = np.sort(rng.choice(candidates, size=n_exo, replace=False))
    hz = horizon_days[exo_dec]
    exo_ts = start[exo_dec] + (rng.uniform(0.2, 0.8, n_exo) * hz * _DAY).astype(np.int64)
    exo_sym = sym[exo_dec]
    sched_sym, sched_ts, sched_kind = [], [], []
    for s, years in (("GOOG", range(2011, 2014)), ("AAPLX", range(2019, 2025)), ("MSFTX", range(2019, 2025))):
        for y in years:
            for mo in (1, 4, 7, 10):
                ts = _t(y, mo, 25, 21, 30)
                if ts < _AS_OF and (s != "GOOG" or ts < _t(2013, 3, 1)):
                    sched_sym.append(SYMBOLS.index(s)), sched_ts.append(ts), sched_kind.append("earnings")
    for y, mo, d in (
        (2017, 6, 8),
        (2017, 7, 20),
        (2017, 9, 7),
        (2017, 10, 26),
        (2017, 12, 14),
        (2018, 1, 25),
    ):
        sched_sym.append(SYMBOLS.index("EURUSD")), sched_ts.append(_t(y, mo, d, 11, 45))
        sched_kind.append("rate_decision")
    ev_sym = np.r_[exo_sym, np.array(sched_sym)]
    ev_ts = np.r_[exo_ts, np.array(sched_ts)]
    ev_kind = pl.concat(
        [_pick(_EXOGENOUS_KINDS, rng.integers(0, 3, n_exo)), pl.Series("", sched_kind, pl.String)]
    )
    ev_exo = np.r_[np.ones(n_exo, dtype=bool), np.zeros(len(sched_ts), dtype=bool)]
    eo = np.lexsort((ev_sym, ev_ts))
    events = pl.DataFrame(
        {
            "event_id": _ids("ev_", len(eo), 6),
            "symbol": _pick(SYMBOLS, ev_sym[eo]),
            "ts": _dt(ev_ts[eo]),
            "kind": ev_kind.gather(eo),
            "exogenous": ev_exo[eo],
        }
    )

    exo_window = np.zeros(len(sym), dtype=bool)
    for i in np.unique(exo_sym):
        ev = np.sort(exo_ts[exo_sym == i])
        m = has_exec & (sym == i)
        inside = np.searchsorted(ev, start[m] + horizon_days[m] * _DAY, "right") - np.searchsorted(
            ev, start[m], "left"
        )
        exo_window[m] = inside > 0
    return events, exo_window
