"""Time in the demo world: epoch seconds (UTC) throughout, DEMO_AS_OF as "now"; no wall clock is read."""

from __future__ import annotations

from datetime import UTC, datetime

from tradingmem_assets.demo.tables import DEMO_AS_OF

_DAY = 86_400
_HOUR = 3_600
_AS_OF = int(DEMO_AS_OF.timestamp())


def _t(y: int, m: int, d: int, hh: int = 0, mm: int = 0) -> int:
    return int(datetime(y, m, d, hh, mm, tzinfo=UTC).timestamp())


def _epoch_day(y: int, m: int, d: int) -> int:
    return _t(y, m, d) // _DAY
