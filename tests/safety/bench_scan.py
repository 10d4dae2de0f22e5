"""Measure the injection scan's cost per 10,000 proposals (docs/security.md).

    PYTHONPATH=. python -m tests.safety.bench_scan [--n 10000] [--repeat 3]

Proposals are the demo world's proposal texts, each made unique (its description gets a variant
number), so the per-text caches never answer for a proposal already scanned; caches are cleared
before every timed run. Three paths are timed: ``scan_column`` over all strings of a proposal joined
(keys included, one per row: the Pandera check's kind of text), ``scan_proposal`` (field by field,
which repeats vocabulary fields such as ``long`` or ``4h`` across proposals and caches them), and
``scan_candidate`` (what the methodology pipeline runs: field by field, then the joined strings).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import polars as pl

from tradingmem_assets.defs.learning.candidates import parse_proposal
from tradingmem_assets.defs.safety import injection
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
    bodies = [json.loads(p) for p in props]
    column, report, candidate = [], [], []
    for _ in range(args.repeat):
        injection.clear_caches()
        t0 = time.perf_counter()
        flagged = frame.select(injection.scan_column(pl.col("t")).list.len().gt(0).sum()).item()
        column.append(time.perf_counter() - t0)
        injection.clear_caches()
        t0 = time.perf_counter()
        rejected = sum(not injection.scan_proposal(p).clean for p in props)
        report.append(time.perf_counter() - t0)
        injection.clear_caches()
        t0 = time.perf_counter()
        caught = sum(not injection.scan_candidate(b, t).clean for b, t in zip(bodies, texts, strict=True))
        candidate.append(time.perf_counter() - t0)
    scale = 10_000 / args.n
    print(f"{args.n} proposals, mean {sum(map(len, texts)) / len(texts):.0f} characters scanned each")
    print(
        f"scan_column:   {statistics.median(column) * scale:.2f} s per 10,000 proposals ({flagged} flagged)"
    )
    print(
        f"scan_proposal: {statistics.median(report) * scale:.2f} s per 10,000 proposals ({rejected} flagged)"
    )
    print(
        f"scan_candidate: {statistics.median(candidate) * scale:.2f} s per 10,000 proposals "
        f"({caught} flagged)"
    )


if __name__ == "__main__":
    main()
