"""Measure the injection scan's cost per 10,000 proposals (docs/security.md).

    PYTHONPATH=. python -m tests.security.bench_scan [--n 10000] [--repeat 3]

Proposals are the demo world's proposal texts, each made unique (its description gets a variant
number), so the per-text caches never answer for a proposal already scanned; caches are cleared
before every timed run. Two paths are timed: ``scan_column`` over the text the methodology pipeline
scans (all strings of a proposal, keys included, one per row), and ``scan_proposal`` (field by field,
which repeats vocabulary fields such as ``long`` or ``4h`` across proposals and caches them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import polars as pl

from tradingmem_assets.core import injection
from tradingmem_assets.core.methodology import parse_proposal
from tradingmem_assets.demo.methodologies import _proposal_table


def proposals(n: int) -> list[str]:
    base = _proposal_table()
    out = []
    for i in range(n):
        body = json.loads(base[i % len(base)])
        body["description"] = f"{body['description']} Variant {i}."
        out.append(json.dumps(body, ensure_ascii=False))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    props = proposals(args.n)
    texts = [parse_proposal(p)["scan_text"] for p in props]
    frame = pl.DataFrame({"t": texts})
    column, report = [], []
    for _ in range(args.repeat):
        injection.clear_caches()
        t0 = time.perf_counter()
        flagged = frame.select(injection.scan_column(pl.col("t")).list.len().gt(0).sum()).item()
        column.append(time.perf_counter() - t0)
        injection.clear_caches()
        t0 = time.perf_counter()
        rejected = sum(not injection.scan_proposal(p).clean for p in props)
        report.append(time.perf_counter() - t0)
    scale = 10_000 / args.n
    print(f"{args.n} proposals, mean {sum(map(len, texts)) / len(texts):.0f} characters scanned each")
    print(
        f"scan_column:   {statistics.median(column) * scale:.2f} s per 10,000 proposals ({flagged} flagged)"
    )
    print(
        f"scan_proposal: {statistics.median(report) * scale:.2f} s per 10,000 proposals ({rejected} flagged)"
    )


if __name__ == "__main__":
    main()
