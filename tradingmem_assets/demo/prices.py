"""Daily price bars (real GOOG and EURUSD, seeded synthetic symbols) and as-of lookups on their closes.

Price bars. A bar's `ts` is the moment its close is known: every daily bar is stamped 21:00 UTC of
its trading date.
- GOOG: the real daily bars 2004-08-19..2013-03-01 shipped in the `backtesting` package (read as
  CSV through importlib.resources; the package itself is never imported), used as is (no bars on
  exchange holidays).
- EURUSD: the real hourly bars 2017-04-19..2018-02-07 from the same package, aggregated per UTC
  calendar day (open first, high max, low min, close last, volume sum). The two Sunday-evening
  hours of each week (the FX open) are folded into Monday's bar, so the calendar is weekdays.
  The bar therefore includes the hours after 21:00 of its day: a documented liberty of the demo.
- Synthetic, seeded geometric random walks (Brownian bridges in log price between realistic end
  points): MKTIDX (benchmark index, weekdays 2004-01-01..2024-06-30), AAPLX and MSFTX (weekdays
  2019-01-01..2024-06-30, correlated with MKTIDX), BTCUSD, ETHUSD, SOLUSD (every calendar day
  2019-01-01..2024-06-30).
- MISSING_BARS are removed on purpose (SOLUSD): one isolated day (7-day windows over it have
  coverage 6/7) and three consecutive days (7-day windows over them fall under min_coverage 0.8).
  Expected bars should follow each symbol's calendar (weekdays vs every day).
"""

from __future__ import annotations

import io
from importlib.resources import files

import numpy as np
import polars as pl

from tradingmem_assets.demo.clock import _DAY, _HOUR, _epoch_day
from tradingmem_assets.demo.frames import _dt, _rng

SYMBOLS = ("GOOG", "EURUSD", "MKTIDX", "AAPLX", "MSFTX", "BTCUSD", "ETHUSD", "SOLUSD")
_EVERY_DAY = frozenset({"BTCUSD", "ETHUSD", "SOLUSD"})
# symbol: (first day, last day, p0, p_end, annual vol, volume scale)
_SYNTH: dict[str, tuple[tuple[int, int, int], tuple[int, int, int], float, float, float, float]] = {
    "MKTIDX": ((2004, 1, 1), (2024, 6, 30), 1130.0, 5460.0, 0.17, 3.5e9),
    "AAPLX": ((2019, 1, 1), (2024, 6, 30), 39.5, 210.0, 0.30, 9.0e7),
    "MSFTX": ((2019, 1, 1), (2024, 6, 30), 101.0, 446.0, 0.27, 2.5e7),
    "BTCUSD": ((2019, 1, 1), (2024, 6, 30), 3800.0, 62700.0, 0.65, 3.0e4),
    "ETHUSD": ((2019, 1, 1), (2024, 6, 30), 130.0, 3430.0, 0.80, 4.0e5),
    "SOLUSD": ((2019, 1, 1), (2024, 6, 30), 2.0, 146.0, 1.00, 2.0e6),
}
MISSING_BARS: dict[str, tuple[str, ...]] = {
    "SOLUSD": ("2024-02-06", "2024-03-12", "2024-03-13", "2024-03-14")
}
_BAR_OFFSET = 21 * _HOUR


def _package_csv(name: str) -> pl.DataFrame:
    data = (files("backtesting") / "test" / name).read_bytes()
    return pl.read_csv(io.BytesIO(data)).rename({"": "stamp"})


def _real_bars() -> list[pl.DataFrame]:
    goog = _package_csv("GOOG.csv")
    goog = goog.select(
        pl.lit("GOOG").alias("symbol"),
        (
            pl.col("stamp").str.to_date("%Y-%m-%d").cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
            + pl.duration(hours=21)
        ).alias("ts"),
        pl.col("Open").alias("open"),
        pl.col("High").alias("high"),
        pl.col("Low").alias("low"),
        pl.col("Close").alias("close"),
        pl.col("Volume").cast(pl.Float64).alias("volume"),
    )
    fx = _package_csv("EURUSD.csv").with_columns(pl.col("stamp").str.to_datetime("%Y-%m-%d %H:%M:%S"))
    # Sunday-evening hours open the FX week: they belong to Monday's bar.
    day = pl.col("stamp").dt.date() + pl.when(pl.col("stamp").dt.weekday() == 7).then(
        pl.duration(days=1)
    ).otherwise(pl.duration(days=0))
    fx = (
        fx.sort("stamp")
        .with_columns(day.alias("day"))
        .group_by("day", maintain_order=True)
        .agg(
            pl.col("Open").first().alias("open"),
            pl.col("High").max().alias("high"),
            pl.col("Low").min().alias("low"),
            pl.col("Close").last().alias("close"),
            pl.col("Volume").sum().cast(pl.Float64).alias("volume"),
        )
        .sort("day")
        .select(
            pl.lit("EURUSD").alias("symbol"),
            (pl.col("day").cast(pl.Datetime("us")).dt.replace_time_zone("UTC") + pl.duration(hours=21)).alias(
                "ts"
            ),
            "open",
            "high",
            "low",
            "close",
            "volume",
        )
    )
    return [goog, fx]


def _synthetic_bars(seed: int) -> list[pl.DataFrame]:
    rng = _rng(seed, "prices")
    out: list[pl.DataFrame] = []
    mkt_days: np.ndarray | None = None
    mkt_z: np.ndarray | None = None
    for sym, (start, end, p0, p1, vol, vscale) in _SYNTH.items():
        days = np.arange(_epoch_day(*start), _epoch_day(*end) + 1)
        if sym not in _EVERY_DAY:
            days = days[(days + 3) % 7 < 5]  # epoch day 0 was a Thursday
        n = len(days)
        sig = vol / np.sqrt(365.0 if sym in _EVERY_DAY else 252.0)
        z = rng.standard_normal(n - 1)
        if sym == "MKTIDX":
            mkt_days, mkt_z = days, z
        elif sym in ("AAPLX", "MSFTX") and mkt_days is not None and mkt_z is not None:
            k = np.searchsorted(mkt_days, days[1:])  # step into day i uses the index's step into the same day
            z = 0.7 * mkt_z[k - 1] + np.sqrt(1 - 0.49) * z
        w = np.r_[0.0, np.cumsum(z * sig)]
        frac = np.arange(n) / (n - 1)
        close = np.exp(np.log(p0) + frac * (np.log(p1) - np.log(p0)) + w - frac * w[-1])
        prev = np.r_[p0, close[:-1]]
        gap = np.ones(n) if sym in _EVERY_DAY else np.exp(rng.normal(0.0, 0.25 * sig, n))
        open_ = prev * gap
        high = np.maximum(open_, close) * np.exp(np.abs(rng.normal(0.0, 0.6 * sig, n)))
        low = np.minimum(open_, close) * np.exp(-np.abs(rng.normal(0.0, 0.6 * sig, n)))
        volume = np.round(vscale * np.exp(rng.normal(0.0, 0.35, n)))
        open_, close, high, low = (np.round(a, 4) for a in (open_, close, high, low))
        high = np.maximum.reduce([high, open_, close])
        low = np.minimum.reduce([low, open_, close])
        keep = np.ones(n, dtype=bool)
        for miss in MISSING_BARS.get(sym, ()):
            keep &= days != _epoch_day(*map(int, miss.split("-")))
        out.append(
            pl.DataFrame(
                {
                    "symbol": [sym] * int(keep.sum()),
                    "ts": _dt(days[keep] * _DAY + _BAR_OFFSET),
                    "open": open_[keep],
                    "high": high[keep],
                    "low": low[keep],
                    "close": close[keep],
                    "volume": volume[keep],
                }
            )
        )
    return out


def _price_bars(seed: int) -> pl.DataFrame:
    frames = _real_bars() + _synthetic_bars(seed)
    return pl.concat(frames, how="vertical").sort("symbol", "ts")


class _Book:
    """As-of lookups on the demo closes (last close at or before t), vectorized per symbol."""

    def __init__(self, bars: pl.DataFrame) -> None:
        self.ts: dict[str, np.ndarray] = {}
        self.close: dict[str, np.ndarray] = {}
        for sym in SYMBOLS:
            part = bars.filter(pl.col("symbol") == sym)
            self.ts[sym] = (part["ts"].dt.epoch("s")).to_numpy().astype(np.int64)
            self.close[sym] = part["close"].to_numpy()

    def close_at(self, sym_idx: np.ndarray, t: np.ndarray) -> np.ndarray:
        out = np.full(len(t), np.nan)
        for i, sym in enumerate(SYMBOLS):
            m = sym_idx == i
            if m.any():
                k = np.searchsorted(self.ts[sym], t[m], side="right") - 1
                out[m] = np.where(k >= 0, self.close[sym][np.clip(k, 0, None)], np.nan)
        return out

    def safe_days(self, sym: str, lo: int, hi: int, window_days: int = 7) -> np.ndarray:
        """Bar days in [lo, hi] whose next `window_days` days miss no expected bar (holidays, gaps)."""
        have = self.ts[sym] // _DAY
        days = have[(have >= lo) & (have <= hi)]
        grid = np.arange(days.min(), days.max() + window_days + 2)
        expected = np.ones(len(grid), dtype=bool) if sym in _EVERY_DAY else (grid + 3) % 7 < 5
        missing = expected & ~np.isin(grid, have) & (grid <= have.max())  # after the last bar is the future
        cm = np.r_[0, np.cumsum(missing)]
        i = days - grid[0]
        return days[(cm[i + window_days + 1] - cm[i]) == 0]
