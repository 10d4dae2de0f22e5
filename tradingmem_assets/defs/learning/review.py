"""Learning review (SPEC section 8): which agent turns earn a learning, and its identity.

Review (deterministic, offline). A turn is reviewed only if ``explicit_learn``, ``completed``, every
tool call ``ok`` and at least ``min_calls`` calls. Its score (0-10) is the sum of:

====  ==========================================================================
 4    it passed the review filter (completed, explicit, all calls ok, >= min calls)
 2    a reusable length: 3-8 calls (1 point for 1-2 or 9-12 calls, 0 above 12)
 1    at least two distinct tools (not one tool repeated)
 1    no call immediately repeats the previous one (same tool, same args)
 1    a usable trigger: the user message has at least 3 words
 1    every tool is declared in tools.yaml (no unvetted tool)
====  ==========================================================================

A learning is written only at ``score >= threshold`` (default 7).

Identity. ``learning_id = "l_" + sha256(normalized trigger + "|" + ",".join(tool names))[:16]``
with normalized trigger = user message stripped and lower-cased.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import polars as pl

from tradingmem_assets.defs.learning.tiers import ToolTiers
from tradingmem_assets.defs.safety.redaction import redact_text, redact_value

# review outcomes
NOT_REVIEWED, REJECTED, BELOW_THRESHOLD, CREATED, MERGED, SUPPRESSED = (
    "not_reviewed",
    "rejected",
    "below_threshold",
    "created",
    "merged",
    "suppressed_deleted",
)
REVIEW_OUTCOMES = (NOT_REVIEWED, REJECTED, BELOW_THRESHOLD, CREATED, MERGED, SUPPRESSED)


def normalize_trigger(user_message: str) -> str:
    return (user_message or "").strip().lower()


def learning_id_for(user_message: str, tool_names: Sequence[str]) -> str:
    """``l_`` + the first 16 hex of sha256(normalized trigger | tool names joined by ',')."""
    raw = normalize_trigger(user_message) + "|" + ",".join(tool_names)
    return "l_" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


# --------------------------------------------------------------------------------------- parsing


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def parse_tool_calls(text: str | None) -> dict[str, Any]:
    """One turn's tool calls: names, ok-ness, the redacted sequence, or the reason it is malformed."""
    out: dict[str, Any] = {
        "tool_names": [],
        "n_calls": 0,
        "all_ok": False,
        "repeated_call": False,
        "tool_sequence": None,
        "error": None,
    }
    try:
        calls = json.loads(text) if text is not None else None
    except (TypeError, ValueError):
        out["error"] = "tool_calls is not valid JSON"
        return out
    if not isinstance(calls, list):
        out["error"] = "tool_calls is not a JSON list"
        return out
    names: list[str] = []
    sequence: list[dict[str, Any]] = []
    raw_keys: list[str] = []
    all_ok = True
    for i, call in enumerate(calls, start=1):
        if not isinstance(call, dict):
            out["error"] = f"call {i} is not an object"
            return out
        name = call.get("tool_name")
        if not isinstance(name, str) or not name.strip():
            out["error"] = f"call {i} has no tool_name"
            return out
        ok = call.get("ok")
        if not isinstance(ok, bool):
            out["error"] = f"call {i} ({name}): 'ok' must be true or false"
            return out
        args = call.get("args", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            out["error"] = f"call {i} ({name}): 'args' must be an object"
            return out
        all_ok &= ok
        names.append(name)
        raw_keys.append(name + "|" + _canonical(args))
        redacted, _kinds = redact_value(args)
        sequence.append({"tool_name": name, "args": redacted})
    out.update(
        tool_names=names,
        n_calls=len(names),
        all_ok=all_ok,
        repeated_call=any(a == b for a, b in zip(raw_keys, raw_keys[1:], strict=False)),
        tool_sequence=_canonical(sequence),
    )
    return out


_PARSED_DTYPES = pl.Schema(
    {
        "tool_calls": pl.String(),
        "tool_names": pl.List(pl.String()),
        "n_calls": pl.Int64(),
        "all_ok": pl.Boolean(),
        "repeated_call": pl.Boolean(),
        "tool_sequence": pl.String(),
        "error": pl.String(),
    }
)


def _parse_unique(texts: pl.Series) -> pl.DataFrame:
    """Parse each distinct tool_calls text once (JSON with arbitrary args has no set-based parser)."""
    uniq = texts.unique(maintain_order=True).to_list()
    rows = [{"tool_calls": t, **parse_tool_calls(t)} for t in uniq]
    return pl.DataFrame(rows, schema=_PARSED_DTYPES) if rows else pl.DataFrame(schema=_PARSED_DTYPES)


# --------------------------------------------------------------------------------------- review


def score_expr(min_calls: int, known_tools: Sequence[str]) -> pl.Expr:
    """The documented 0-10 review score of a turn that passed the review filter."""
    n = pl.col("n_calls")
    length = pl.when(n.is_between(3, 8)).then(2).when(n <= 12).then(1).otherwise(0)
    distinct = (pl.col("tool_names").list.n_unique() >= 2).cast(pl.Int64)
    no_repeat = (~pl.col("repeated_call")).cast(pl.Int64)
    words = (pl.col("user_message").str.count_matches(r"\w+") >= 3).cast(pl.Int64)
    known = pl.col("tool_names").list.eval(pl.element().is_in(list(known_tools))).list.all().cast(pl.Int64)
    return (4 + length + distinct + no_repeat + words + known).cast(pl.Int64)


def review_turns(
    turns: pl.DataFrame, tiers: ToolTiers, *, min_calls: int, threshold: float
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(candidates, reviews): turns that earn a learning, and one review row per turn.

    ``turns``: turn_id, started_at, user_message, tool_calls, completed, explicit_learn.
    Candidates carry the redacted trigger and sequence, the tool names and the candidate id.
    """
    gate = (
        pl.when(~pl.col("explicit_learn"))
        .then(pl.lit("not_explicit_learn"))
        .when(~pl.col("completed"))
        .then(pl.lit("not_completed"))
    )
    base = turns.with_columns(gate.alias("gate"))
    parsed = _parse_unique(base.filter(pl.col("gate").is_null()).get_column("tool_calls"))
    frame = base.join(parsed, on="tool_calls", how="left", nulls_equal=True)
    passed_filter = pl.col("gate").is_null() & pl.col("error").is_null() & pl.col("all_ok")
    passed_filter = passed_filter & (pl.col("n_calls") >= min_calls)
    frame = frame.with_columns(
        pl.when(passed_filter).then(score_expr(min_calls, list(tiers.tiers))).alias("score"),
    )
    outcome = (
        pl.when(pl.col("gate").is_not_null())
        .then(pl.lit(NOT_REVIEWED))
        .when(pl.col("error").is_not_null())
        .then(pl.lit(REJECTED))
        .when(~pl.col("all_ok") | (pl.col("n_calls") < min_calls))
        .then(pl.lit(NOT_REVIEWED))
        .when(pl.col("score") < threshold)
        .then(pl.lit(BELOW_THRESHOLD))
    )
    reason = (
        pl.when(pl.col("gate").is_not_null())
        .then(pl.col("gate"))
        .when(pl.col("error").is_not_null())
        .then(pl.lit("malformed_tool_calls: ") + pl.col("error"))
        .when(~pl.col("all_ok"))
        .then(pl.lit("failed_tool_call"))
        .when(pl.col("n_calls") < min_calls)
        .then(pl.format("too_few_calls: {} < {}", pl.col("n_calls"), pl.lit(min_calls)))
        .when(pl.col("score") < threshold)
        .then(pl.format("score {} < threshold {}", pl.col("score"), pl.lit(threshold)))
    )
    frame = frame.with_columns(outcome.alias("outcome"), reason.alias("reason"))
    candidates = frame.filter(pl.col("outcome").is_null())
    if candidates.height:
        messages = candidates.get_column("user_message").to_list()
        # redaction is a pure function of the text: each distinct message is redacted once
        redacted = {m: redact_text(m.strip())[0] for m in dict.fromkeys(messages)}
        triggers = [redacted[m] for m in messages]
        ids = [
            learning_id_for(m, names)
            for m, names in zip(messages, candidates.get_column("tool_names").to_list(), strict=True)
        ]
    else:
        triggers, ids = [], []
    candidates = candidates.with_columns(
        pl.Series("trigger", triggers, dtype=pl.String),
        pl.Series("candidate_learning_id", ids, dtype=pl.String),
        pl.col("tool_names").list.join(",").alias("tool_key"),
        tiers.required_tier_expr(pl.col("tool_names")).alias("required_tier"),
    ).sort("started_at", "turn_id")
    reviews = frame.filter(pl.col("outcome").is_not_null()).select(
        "turn_id",
        "started_at",
        "outcome",
        "reason",
        "score",
        pl.lit(None, dtype=pl.String).alias("candidate_learning_id"),
        pl.lit(None, dtype=pl.String).alias("learning_id"),
    )
    return candidates, reviews
