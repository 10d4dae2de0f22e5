"""Decision texts: plausible one-sentence rationales per role and direction, drawn from fixed phrasings."""

from __future__ import annotations

import numpy as np
import polars as pl

from tradingmem_assets.demo.frames import _cat, _pick
from tradingmem_assets.demo.prices import SYMBOLS
from tradingmem_assets.demo.roles import _ROLES

_OPENERS = ("Taking a", "Opening a", "Initiating a", "Entering a", "Adding a", "Starting a small")
_DIR_PHRASE = ("long position in", "short position in")
_CONNECTORS = ("because", "since", "as", "given that")
_QUALIFIERS = (
    "",
    " with a tight stop",
    " sized at half the usual risk",
    " ahead of the weekly close",
    " while liquidity is good",
    " and will reassess at the horizon",
)
# fmt: off
_RATIONALES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # role: (long reasons, short reasons)
    "valuation": (("it trades below its five-year median forward P/E",
                   "free cash flow yield looks attractive versus peers",
                   "the discount to intrinsic value has widened",
                   "margins are expanding while the multiple is flat",
                   "buybacks support the per-share value"),
                  ("the multiple prices in growth the fundamentals do not support",
                   "free cash flow is shrinking while the stock rallies",
                   "dilution from stock compensation is eroding value",
                   "it trades at a premium to every peer on EV/EBITDA",
                   "guidance cuts are not reflected in the price")),
    "earnings_momentum": (("the earnings beat came with raised guidance",
                           "the revenue surprise started a positive post-earnings drift",
                           "analysts are revising estimates upward after the report",
                           "the stock gapped up on volume after earnings",
                           "the earnings surprise was the largest in two years"),
                          ("the earnings miss was followed by weak guidance",
                           "margins contracted in the latest report",
                           "post-earnings drift is negative after the miss",
                           "estimate revisions keep moving lower",
                           "the earnings quality deteriorated with one-off gains")),
    "trend_follower": (("price broke above the 50-day moving average on rising volume",
                        "higher highs and higher lows print daily",
                        "the breakout held with volume confirmation",
                        "momentum is strong and the trend is intact",
                        "the weekly trend turned up with expanding volume"),
                       ("price lost the 50-day moving average on heavy volume",
                        "lower highs keep forming on the daily chart",
                        "the breakdown was confirmed by volume",
                        "the uptrend is exhausted and momentum rolled over",
                        "volume dried up on every bounce")),
    "funding_arbitrage": (("funding turned deeply negative so longs get paid",
                           "the perp trades at a discount to spot", "shorts are crowded and paying to hold",
                           "the basis is inverted versus spot",
                           "order book depth favours bids while funding is negative"),
                          ("funding is elevated so shorts collect the carry",
                           "the perp premium to spot is stretched",
                           "longs are crowded and paying high funding",
                           "open interest spiked with positive funding",
                           "the order book is thin on the bid while funding stays high")),
    "macro_rates": (("the rate differential is moving in favour of the euro",
                     "the ECB sounded more hawkish than expected",
                     "US yields are falling faster than Bund yields",
                     "the economic calendar favours euro strength",
                     "inflation surprises in the euro area point to tighter policy"),
                    ("the rate differential widened in favour of the dollar",
                     "the ECB signalled a longer pause", "US data surprises keep beating expectations",
                     "the calendar is heavy with dollar-positive releases",
                     "euro area PMIs slipped below fifty")),
}
# fmt: on


def _decision_text(
    rng: np.random.Generator, role: np.ndarray, direction: np.ndarray, sym: np.ndarray
) -> pl.Series:
    """One sentence per decision: opener, direction, symbol and a reason fitting its role and direction."""
    n = len(role)
    rationale_pool = [x for spec in _ROLES for pair in _RATIONALES[spec.role_id] for x in pair]
    n_rat = len(_RATIONALES["valuation"][0])
    rat_idx = (role * 2 + direction) * n_rat + rng.integers(0, n_rat, n)
    return _cat(
        _pick(_OPENERS, rng.integers(0, len(_OPENERS), n)),
        " ",
        _pick(_DIR_PHRASE, direction),
        " ",
        _pick(SYMBOLS, sym),
        " ",
        _pick(_CONNECTORS, rng.integers(0, len(_CONNECTORS), n)),
        " ",
        _pick(rationale_pool, rat_idx),
        _pick(_QUALIFIERS, rng.integers(0, len(_QUALIFIERS), n)),
        ".",
    )
