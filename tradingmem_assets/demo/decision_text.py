"""Decision texts: plausible one-sentence rationales per role and direction, drawn from fixed phrasings."""

from __future__ import annotations

import numpy as np
import polars as pl

from tradingmem_assets.demo.frames import _cat, _pick
from tradingmem_assets.demo.prices import SYMBOLS
from tradingmem_assets.demo.roles import _ROLES
from tradingmem_assets.demo.texts import TEXTS

_PHRASES = TEXTS["decision_text"]
_OPENERS = tuple(_PHRASES["openers"])
_DIR_PHRASE = tuple(_PHRASES["direction_phrases"])
_CONNECTORS = tuple(_PHRASES["connectors"])
_QUALIFIERS = tuple(_PHRASES["qualifiers"])
# role: (long reasons, short reasons)
_RATIONALES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    role: (tuple(reasons["long"]), tuple(reasons["short"]))
    for role, reasons in _PHRASES["rationales"].items()
}


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
