"""Legacy role memory: free-text rows exported from the old role-memory store (2020-2021) that migration
must carry over, with mixed languages, trailing whitespace, unknown roles and two provenance formats."""

from __future__ import annotations

import numpy as np
import polars as pl

from tradingmem_assets.demo.clock import _DAY, _t
from tradingmem_assets.demo.frames import _cat, _choice, _dt, _ids, _iso, _null_where, _pick, _rng
from tradingmem_assets.demo.prices import SYMBOLS
from tradingmem_assets.demo.roles import _ROLES
from tradingmem_assets.demo.tables import _count
from tradingmem_assets.demo.texts import TEXTS

_LEGACY_ROLES = tuple(r.role_id for r in _ROLES) + ("generic", "old_scalper")
_LEGACY_ROLE_P = (0.17, 0.17, 0.2, 0.16, 0.15, 0.08, 0.07)
_LEGACY_TEXT = tuple(TEXTS["legacy_role_memory"]["texts"])
_LEGACY_TAILS = ("", "", "", "", "", "", "", "", "  ", " \t")


def _legacy(scale: float, seed: int) -> pl.DataFrame:
    rng = _rng(seed, "legacy")
    n = _count("legacy_role_memory", scale)
    month = np.arange(n) % 24  # every month of 2020-2021 gets rows
    starts = np.array([_t(2020 + m // 12, m % 12 + 1, 1) for m in range(24)])
    created = np.sort(starts[month] + rng.integers(0, 28 * _DAY, n))
    sym = rng.integers(0, len(SYMBOLS), n)
    content = _cat(
        pl.select(
            pl.lit(_pick(_LEGACY_TEXT, rng.integers(0, len(_LEGACY_TEXT), n))).str.replace_all(
                "{s}", pl.lit(_pick(SYMBOLS, sym)), literal=True
            )
        ).to_series(),
        _pick(_LEGACY_TAILS, rng.integers(0, len(_LEGACY_TAILS), n)),
    )
    legacy_id = _ids("lg_", n, 7)
    month_key = _dt(created).dt.strftime("%Y-%m")
    provenance = pl.select(
        pl.when(pl.lit(pl.Series(rng.random(n) < 0.7)))
        .then(
            pl.concat_str(
                [
                    pl.lit('{"source":"rolemem_v1","export":"'),
                    pl.lit(month_key),
                    pl.lit('","row":"'),
                    pl.lit(legacy_id),
                    pl.lit('"}'),
                ]
            )
        )
        .otherwise(pl.concat_str([pl.lit("v1-export:"), pl.lit(month_key), pl.lit("#"), pl.lit(legacy_id)]))
    ).to_series()
    return pl.DataFrame(
        {
            "legacy_id": legacy_id,
            "role": _pick(_LEGACY_ROLES, _choice(rng, n, _LEGACY_ROLE_P)),
            "content": content,
            "score": _null_where(pl.Series("", np.round(rng.random(n), 3)), rng.random(n) < 0.2),
            "created_at": _iso(created),
            "provenance": provenance,
            "symbol": _null_where(_pick(SYMBOLS, sym), rng.random(n) < 0.25),
            "decision_id": _null_where(
                _ids("legacy_d_", n, 6).gather(rng.integers(0, n, n)), rng.random(n) < 0.6
            ),
        }
    )
