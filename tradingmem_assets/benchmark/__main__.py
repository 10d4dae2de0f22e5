"""``python -m tradingmem_assets.benchmark --one LANDING DATABASE AS_OF [NEXT_LANDING NEXT_AS_OF]``:
one repetition, as JSON (with the next day's landing folder and instant: the incremental runs too)."""

import json
import sys
from pathlib import Path

from tradingmem_assets.benchmark import __doc__ as usage
from tradingmem_assets.benchmark import run_once

if __name__ == "__main__":
    if len(sys.argv) in (5, 7) and sys.argv[1] == "--one":
        next_day = (Path(sys.argv[5]), sys.argv[6]) if len(sys.argv) == 7 else None
        print(json.dumps(run_once(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], next_day)))
    else:
        print(usage)
        sys.exit(2)
