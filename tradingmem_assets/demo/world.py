"""Assembling and writing the demo world, one domain at a time, one landing file per SPEC §2 table."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from tradingmem_assets.demo.bad_rows import _bad_frame, _bad_rows
from tradingmem_assets.demo.customers import _customers
from tradingmem_assets.demo.institution import _institution
from tradingmem_assets.demo.kb import _kb_documents
from tradingmem_assets.demo.learning import _learning
from tradingmem_assets.demo.legacy import _legacy
from tradingmem_assets.demo.prices import _Book, _price_bars
from tradingmem_assets.demo.roles import PROFILES
from tradingmem_assets.demo.tables import CSV_TABLES, DEMO_SEED, TABLE_COLUMNS
from tradingmem_assets.demo.trading import _trading


@dataclass(frozen=True)
class DemoSummary:
    """What write_demo_world wrote: rows per table, bad rows included."""

    landing_dir: Path
    scale: float
    seed: int
    rows: dict[str, int]


_PARQUET = {"compression": "zstd", "compression_level": 3, "statistics": False, "row_group_size": 262_144}


def _sections(scale: float, seed: int, say: Callable[[str], None]) -> Iterator[dict[str, pl.DataFrame]]:
    """The demo world, one domain at a time, so a large scale never holds every table at once."""
    bars = _price_bars(seed)
    book = _Book(bars)
    profiles = pl.DataFrame(
        {
            "profile_id": [p[0] for p in PROFILES],
            "horizon_days": [p[1] for p in PROFILES],
            "benchmark_symbol": pl.Series([p[2] for p in PROFILES], dtype=pl.String),
            "min_coverage": [p[3] for p in PROFILES],
        }
    )
    say(f"prices: {bars.height:,} daily bars")
    yield {"price_bars": bars, "benchmark_profiles": profiles}
    trading = _trading(scale, seed, book)
    trading.pop("_decision_kinds")
    say(f"trading chain: {trading['trading_decisions'].height:,} decisions")
    yield trading
    yield _learning(scale, seed)
    institution = _institution(scale, seed, book)
    say(f"institution: {institution['institution_runs'].height:,} runs")
    yield institution
    customers = _customers(scale, seed)
    say(f"customers: {customers['customers'].height:,}")
    yield customers
    yield {
        "kb_documents": _kb_documents(),
        "legacy_role_memory": _legacy(scale, seed),
    }


def write_demo_world(
    landing_dir: Path,
    *,
    scale: float = 0.01,
    seed: int = DEMO_SEED,
    progress: Callable[[str], None] | None = None,
) -> DemoSummary:
    """Write the demo landing set (one file per SPEC §2 table) into `landing_dir`; deterministic."""
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    say = progress or (lambda _msg: None)
    landing_dir = Path(landing_dir)
    landing_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}
    for section in _sections(scale, seed, say):
        for table in list(section):
            good = section.pop(table).select(TABLE_COLUMNS[table])
            bad = _bad_rows(table, good)
            df = pl.concat([good, _bad_frame(good, bad)]) if bad else good
            del good
            csv = table in CSV_TABLES
            (landing_dir / f"{table}.{'parquet' if csv else 'csv'}").unlink(
                missing_ok=True
            )  # one file per table
            if csv:
                df.write_csv(landing_dir / f"{table}.csv", quote_style="non_numeric")
            else:
                df.write_parquet(landing_dir / f"{table}.parquet", **_PARQUET)
            written[table] = df.height
            say(f"{table}: {df.height:,} rows")
            del df
    return DemoSummary(
        landing_dir=landing_dir,
        scale=scale,
        seed=seed,
        rows={table: written[table] for table in TABLE_COLUMNS},
    )
