"""Methodology dedup decisions are made once, in arrival order: later candidates never change them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl

from tradingmem_assets.defs.learning.candidates import parse_candidates, resolve_candidates

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def proposal(i: int, direction: str, description: str, signal: str = "trend", indicators=("ema",)) -> dict:
    body = {
        "name": f"method {i}",
        "description": description,
        "direction": direction,
        "primary_signal": signal,
        "timeframe": "1d",
        "indicators": list(indicators) + [f"x{i}"],  # distinct dedup keys: only the text can merge
        "asset_class": "equity",
        "phases": [
            {"name": "entry", "criteria": ["close above the mean"], "tools_used": [], "depends_on": []}
        ],
    }
    return {
        "output_id": f"o{i:03d}",
        "run_id": f"r{i:03d}",
        "started_at": T0 + timedelta(hours=i),
        "output_valid": True,
        "output_reason": None,
        "proposed_methodology": json.dumps(body),
    }


EARLY = [
    proposal(1, "long", "buy the pullback to the rising fifty day average after a breakout on volume"),
    proposal(2, "long", "buy the pullback to the rising fifty day average after a breakout on strong volume"),
    proposal(3, "long", "fade the opening gap when the previous close sits inside the value area"),
]
# later and unrelated: they only change the corpus statistics a global TF-IDF would be fitted on
LATER = [
    proposal(10 + i, "short", f"sell the rally into resistance {word} after a failed breakout")
    for i, word in enumerate(["average", "pullback", "volume", "rising", "fifty", "day"])
]


def decisions(rows: list[dict]) -> pl.DataFrame:
    frame = pl.DataFrame(rows)
    result = resolve_candidates(parse_candidates(frame))
    return result.events.filter(pl.col("source_id").is_in([r["output_id"] for r in EARLY])).sort("source_id")


def test_later_candidates_never_change_an_earlier_merge_or_id():
    early = decisions(EARLY)
    assert early.get_column("event").to_list() == ["created", "merged", "created"]  # 2 joins 1 by TF-IDF
    with_later = decisions(EARLY + LATER)
    assert with_later.select("methodology_id", "event", "detail").equals(
        early.select("methodology_id", "event", "detail")
    )


def _merge_of(rows: list[dict], output_id: str) -> tuple:
    events = resolve_candidates(parse_candidates(pl.DataFrame(rows))).events
    row = events.filter(pl.col("source_id") == output_id).row(0, named=True)
    return row["methodology_id"], row["event"], json.loads(row["detail"])["similarity"]


def test_a_repeated_description_is_judged_again_after_each_creation():
    """A text seen before is merged as then only while no methodology was created in between: a
    creation changes the corpus (and so the similarity), and the repeat must see that."""
    text = "buy the pullback to the rising fifty day average after a breakout on strong volume"
    first = proposal(1, "long", "buy the pullback to the rising fifty day average after a breakout on volume")
    created = proposal(3, "long", "sell strength into the fifty day average when volume dries up")
    rows = [first, proposal(2, "long", text), created, proposal(4, "long", text), proposal(5, "long", text)]
    before, after, again = (_merge_of(rows, f"o{i:03d}") for i in (2, 4, 5))
    assert before[:2] == after[:2] == (_merge_of(rows, "o001")[0], "merged")  # into the first one
    assert after[2] != before[2]  # the creation moved the statistics
    assert again == after  # nothing created in between: the same decision
    # each equals the decision made without the earlier repeats in the sequence
    assert _merge_of([first, created, proposal(4, "long", text)], "o004") == after
    assert _merge_of([first, proposal(2, "long", text)], "o002") == before
    assert _merge_of(rows[:4], "o003")[1] == "created"
