"""``python -m tradingmem_assets.benchmark --one LANDING DATABASE AS_OF [--no-incremental]``: one repetition, as JSON."""

import json
import sys
from pathlib import Path

from tradingmem_assets.benchmark import __doc__ as usage
from tradingmem_assets.benchmark import run_once

if __name__ == "__main__":
    if len(sys.argv) in (5, 6) and sys.argv[1] == "--one":
        incremental = sys.argv[5:] != ["--no-incremental"]
        print(json.dumps(run_once(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], incremental)))
    else:
        print(usage)
        sys.exit(2)
