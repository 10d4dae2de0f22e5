"""Seeded randomness and the vectorized column builders every domain module shares.

Every random draw comes from `numpy.random.default_rng([seed, crc32(stream)])` (one stream per domain),
so a domain's rows do not depend on what other domains draw. Timestamps become Datetime("us", "UTC")
columns (parquet) or ISO-8601 strings with a trailing "Z" (CSV).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import polars as pl

_CSV_TS = "%Y-%m-%dT%H:%M:%SZ"


def _rng(seed: int, stream: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(stream.encode())])


def _choice(rng: np.random.Generator, n: int, p: Sequence[float]) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return rng.choice(len(p), size=n, p=p / p.sum())


def _null_where(s: pl.Series, mask: np.ndarray) -> pl.Series:
    if not np.any(mask):
        return s
    return (
        pl.DataFrame({"v": s, "m": np.asarray(mask, dtype=bool)})
        .select(pl.when(pl.col("m")).then(None).otherwise(pl.col("v")).alias(s.name))
        .to_series()
    )


def _dt(secs: np.ndarray, null: np.ndarray | None = None) -> pl.Series:
    s = (
        pl.Series("", np.asarray(secs, dtype=np.int64) * 1_000_000, dtype=pl.Int64)
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone("UTC")
    )
    return s if null is None else _null_where(s, null)


def _iso(secs: np.ndarray) -> pl.Series:
    return _dt(secs).dt.strftime(_CSV_TS)


def _ids(prefix: str, n: int, width: int, start: int = 1) -> pl.Series:
    return prefix + pl.Series("", np.arange(start, start + n)).cast(pl.String).str.zfill(width)


def _pick(vocab: Sequence[str | None], idx: np.ndarray) -> pl.Series:
    return pl.Series("", list(vocab), dtype=pl.String).gather(np.asarray(idx, dtype=np.int64))


def _cat(*parts: pl.Series | str) -> pl.Series:
    return pl.select(pl.concat_str([pl.lit(p) for p in parts])).to_series()


def _cumcount(counts: np.ndarray) -> np.ndarray:
    """Rank of each row inside its group when groups of `counts` rows are laid out back to back."""
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.cumsum(counts) - counts
    return np.arange(int(counts.sum())) - np.repeat(starts, counts)


def _group_cumsum(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Inclusive cumulative sum of `values` restarted at every group of `counts` rows."""
    c = np.cumsum(values)
    ends = np.cumsum(counts)
    before = np.r_[0.0, c][ends - counts]
    return c - np.repeat(before, counts)
