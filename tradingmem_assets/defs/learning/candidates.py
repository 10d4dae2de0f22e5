"""Methodology candidates (SPEC section 8): injection scan, validation, structured dedup.

Every ``proposed_methodology`` of a role output (any run kind) is a candidate, taken in
``(run started_at, run_id, output_id)`` order:

1. injection scan of every field of the proposal, then of all its strings joined
   (``safety.injection.scan_candidate``) -> ``rejected_injection``; the text is never stored as a
   methodology;
2. validation -> ``rejected_invalid``: the output itself must be valid, the fields present and of
   the right type, ``direction``/``primary_signal``/``timeframe``/``asset_class`` inside the
   vocabularies of ``core.vocabulary``, indicators a list of strings, and the phases a DAG (unique
   names; every ``depends_on`` names an *earlier* phase, which also rules out cycles);
3. structured dedup key = sha256 hex of ``direction|primary_signal|timeframe|indicators|asset_class``
   (each value and indicator trimmed and lower-cased, indicators sorted and joined with ``,``); a
   hit on an existing methodology's key -> ``merged`` (times_proposed + 1);
4. on a miss, TF-IDF cosine >= 0.85 between the candidate's description and the descriptions of
   existing methodologies *of the same direction* -> ``merged`` into the most similar one; for a
   pair where TF-IDF fails (a text without any word token, or no vocabulary at all) Jaccard over
   character 4-grams decides with the same bar, 0.85;
5. otherwise ``created``: quarantine = 1, confidence = 0.1,
   ``methodology_id = "m_" + dedup_key[:16]``; its first proposal gives name, description and phases.

The proposal JSON is nested and free-form, so each *distinct* proposal text is parsed once in
Python; the greedy dedup pass is inherently sequential and runs over compact arrays.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import polars as pl

from tradingmem_assets.defs.learning.dedup import arrival_tfidf
from tradingmem_assets.defs.safety.injection import scan_candidate
from tradingmem_assets.lib import vocabulary as v
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.similarity import jaccard_4gram

TFIDF_MERGE = 0.85
JACCARD_MERGE = 0.85
INITIAL_CONFIDENCE = 0.1

# what a methodology's first accepted proposal says of it (also the head of the stored table)
PROPOSAL_FACTS: dict[str, pl.DataType] = {
    "methodology_id": pl.String(),
    **{field: pl.String() for field in v.METHODOLOGY_PROPOSAL_FIELDS},
    "dedup_key": pl.String(),
}
CANDIDATE_BASE_DTYPES = pl.Schema(
    {
        **PROPOSAL_FACTS,
        "created_at": UTC_TS,
        "times_proposed": pl.Int64(),
        "last_proposed_at": UTC_TS,
        "source_output_id": pl.String(),
    }
)
CANDIDATE_EVENTS_DTYPES = pl.Schema(
    {
        "source_id": pl.String(),
        "methodology_id": pl.String(),
        "event": pl.String(),
        "ts": UTC_TS,
        "detail": pl.String(),
    }
)


def dedup_key_text(
    direction: str, primary_signal: str, timeframe: str, indicators: list[str], asset_class: str
) -> str:
    inds = ",".join(sorted(i.strip().lower() for i in indicators))
    return "|".join(
        [
            direction.strip().lower(),
            primary_signal.strip().lower(),
            timeframe.strip().lower(),
            inds,
            asset_class.strip().lower(),
        ]
    )


def dedup_key(
    direction: str, primary_signal: str, timeframe: str, indicators: list[str], asset_class: str
) -> str:
    """sha256 hex of the structured key string (SPEC section 8)."""
    text = dedup_key_text(direction, primary_signal, timeframe, indicators, asset_class)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def methodology_id_for(key: str) -> str:
    return "m_" + key[:16]


# --------------------------------------------------------------------------------------- parsing


def _strings(value: Any) -> list[str]:
    """Every string anywhere in a JSON value, keys included (the injection scan reads them all)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, x in value.items() for s in [str(k), *_strings(x)]]
    if isinstance(value, list):
        return [s for x in value for s in _strings(x)]
    return []


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) and x.strip() for x in value)


def _vocab(field: str, value: Any, allowed: tuple[str, ...], problems: list[str]) -> str | None:
    if not isinstance(value, str) or not value.strip():
        problems.append(f"missing {field}")
        return None
    norm = value.strip().lower()
    if norm not in allowed:
        problems.append(f"{field} '{norm}' is not one of {', '.join(allowed)}")
    return norm


def _injection(proposal: Any, joined: str) -> dict[str, Any]:
    """Every field of the proposal scanned, then its strings ``joined`` (``scan_candidate``):
    ``injection`` the families (reason codes), ``injection_hits`` a JSON list of ``{family, field,
    start, end, form}`` per hit (span in that field's text; field ``(all fields)``: in ``scan_text``)."""
    report = scan_candidate(proposal, joined)
    hits = [{k: getattr(h, k) for k in ("family", "field", "start", "end", "form")} for h in report.hits]
    return {"injection": report.families, "injection_hits": json.dumps(hits, ensure_ascii=False)}


def parse_proposal(text: str | None) -> dict[str, Any]:
    """A proposal's normalized fields, its text for the injection scan, the scan's families
    (``injection``) and hits (``injection_hits``, JSON), and its validation problems."""
    out: dict[str, Any] = {k: None for k in CANDIDATE_BASE_DTYPES.names()}
    problems: list[str] = []
    try:
        body = json.loads(text) if text is not None else None
    except (TypeError, ValueError):
        body = None
    if not isinstance(body, dict):
        problems = ["proposed_methodology is not a JSON object"]
        return {**out, "scan_text": text or "", **_injection(text, text or ""), "problems": problems}
    scan_text = "\n".join(_strings(body))
    for field in ("name", "description"):
        val = body.get(field)
        if not isinstance(val, str) or not val.strip():
            problems.append(f"missing {field}")
        else:
            out[field] = val.strip()
    direction = _vocab("direction", body.get("direction"), v.METHODOLOGY_DIRECTIONS, problems)
    signal = _vocab("primary_signal", body.get("primary_signal"), v.PRIMARY_SIGNALS, problems)
    timeframe = _vocab("timeframe", body.get("timeframe"), v.TIMEFRAMES, problems)
    asset_class = _vocab("asset_class", body.get("asset_class"), v.ASSET_CLASSES, problems)
    indicators = body.get("indicators")
    if not _str_list(indicators):
        problems.append("indicators must be a list of non-empty strings")
        indicators = None
    phases = body.get("phases")
    norm_phases: list[dict[str, Any]] = []
    if not isinstance(phases, list):
        problems.append("phases must be a list")
    else:
        seen: list[str] = []
        for i, phase in enumerate(phases, start=1):
            if (
                not isinstance(phase, dict)
                or not isinstance(phase.get("name"), str)
                or not phase["name"].strip()
            ):
                problems.append(f"phase {i} has no name")
                continue
            name = phase["name"].strip()
            fields = {}
            for key in ("criteria", "tools_used", "depends_on"):
                val = phase.get(key, [])
                if val is None:
                    val = []
                if not _str_list(val):
                    problems.append(f"phase '{name}': {key} must be a list of strings")
                    val = []
                fields[key] = [x.strip() for x in val]
            if name in seen:
                problems.append(f"phase name '{name}' is used twice")
            for dep in fields["depends_on"]:
                if dep not in seen:
                    problems.append(
                        f"phase '{name}' depends on '{dep}', which is not an earlier phase (not a DAG)"
                    )
            seen.append(name)
            norm_phases.append({"name": name, **fields})
    out["direction"], out["primary_signal"], out["timeframe"], out["asset_class"] = (
        direction,
        signal,
        timeframe,
        asset_class,
    )
    if indicators is not None:
        norm_inds = sorted(i.strip().lower() for i in indicators)
        out["indicators"] = json.dumps(norm_inds, ensure_ascii=False)
    out["phases"] = json.dumps(norm_phases, ensure_ascii=False)
    if not problems:
        out["dedup_key"] = dedup_key(direction, signal, timeframe, indicators, asset_class)  # type: ignore[arg-type]
    return {**out, "scan_text": scan_text, **_injection(body, scan_text), "problems": problems}


_PARSED_DTYPES = pl.Schema(
    {
        "proposed_methodology": pl.String(),
        **{field: pl.String() for field in v.METHODOLOGY_PROPOSAL_FIELDS},
        "dedup_key": pl.String(),
        "scan_text": pl.String(),
        "injection": pl.List(pl.String()),
        "injection_hits": pl.String(),
        "problems": pl.List(pl.String()),
    }
)


def parse_candidates(proposals: pl.DataFrame) -> pl.DataFrame:
    """Candidates with parsed fields, injection hits and problems; one parse per distinct text.

    ``proposals``: output_id, run_id, started_at, output_valid, output_reason, proposed_methodology.
    Adds ``injection`` (list of family codes; empty: clean) and ``injection_hits`` (JSON list of
    ``{family, field, start, end, form}``, one per hit; ``[]``: clean).
    """
    uniq = proposals.get_column("proposed_methodology").unique(maintain_order=True).to_list()
    rows = []
    for text in uniq:
        parsed = parse_proposal(text)
        rows.append({"proposed_methodology": text, **{k: parsed.get(k) for k in _PARSED_DTYPES.names()[1:]}})
    parsed = pl.DataFrame(rows, schema=_PARSED_DTYPES) if rows else pl.DataFrame(schema=_PARSED_DTYPES)
    return proposals.join(parsed, on="proposed_methodology", how="left").sort(
        "started_at", "run_id", "output_id"
    )


# --------------------------------------------------------------------------------------- dedup


@dataclass(frozen=True)
class CandidateResult:
    base: pl.DataFrame  # one row per methodology, before outcomes
    events: pl.DataFrame  # created / merged / rejected_* (with source_id = output_id)


def _detail(**fields: Any) -> str:
    return json.dumps(fields, ensure_ascii=False, sort_keys=True)


_HITS_DTYPE = pl.List(
    pl.Struct(
        {"family": pl.String, "field": pl.String, "start": pl.Int64, "end": pl.Int64, "form": pl.String}
    )
)


def resolve_candidates(candidates: pl.DataFrame) -> CandidateResult:
    """Run the ordered dedup over parsed candidates; return the methodologies and their events."""
    cand = candidates.with_columns(
        pl.when(pl.col("injection").list.len() > 0)
        .then(pl.lit("rejected_injection"))
        .when(~pl.col("output_valid") | (pl.col("problems").list.len() > 0))
        .then(pl.lit("rejected_invalid"))
        .alias("verdict")
    )
    valid = cand.filter(pl.col("verdict").is_null())
    # Each decision is made once, in arrival order, against the methodologies that existed then:
    # the TF-IDF is the one fitted on their descriptions plus the candidate's (SPEC section 8).
    tfidf = arrival_tfidf()
    by_key: dict[str, str] = {}
    reps: dict[
        str, list[tuple[str, str, bool]]
    ] = {}  # direction -> [(methodology_id, description, has_terms)]
    doc_owner: list[str] = []  # document id -> methodology_id
    decisions: list[tuple[str, str, str, float | None]] = []  # (methodology_id, event, via, similarity)
    # a merge depends only on the candidate and on the methodologies created before it: until the
    # next creation, a repeated (direction, description) is merged as its first occurrence was
    merges: dict[tuple[str, str], tuple[str, str, str, float | None]] = {}
    for key, direction, desc in valid.select("dedup_key", "direction", "description").iter_rows():
        if key in by_key:
            decisions.append((by_key[key], "merged", "dedup_key", None))
            continue
        if (merged := merges.get((direction, desc))) is not None:
            decisions.append(merged)
            continue
        doc = tfidf.document(desc)
        scored: list[tuple[float, int, str, str]] = []  # (similarity, arrival, methodology_id, via)
        if doc.terms:
            ids, sims = tfidf.cosines(doc, direction, min_cosine=TFIDF_MERGE)
            scored += [(float(s), int(i), doc_owner[i], "tfidf") for i, s in zip(ids, sims, strict=True)]
        # where TF-IDF cannot judge a pair (a text without any word token), Jaccard 4-grams decide
        for n, (mid, other, has_terms) in enumerate(reps.get(direction, [])):
            if not (doc.terms and has_terms):
                scored.append((jaccard_4gram(desc, other), -1 - n, mid, "jaccard"))
        passing = [s for s in scored if s[0] >= (TFIDF_MERGE if s[3] == "tfidf" else JACCARD_MERGE) - 1e-12]
        if passing:
            sim, _, mid, via = max(passing, key=lambda s: (s[0], -abs(s[1])))
            merges[(direction, desc)] = merged = (mid, "merged", via, round(sim, 6))
            decisions.append(merged)
            continue
        merges.clear()
        mid = methodology_id_for(key)
        by_key[key] = mid
        reps.setdefault(direction, []).append((mid, desc, bool(doc.terms)))
        if doc.terms:
            tfidf.add(doc, direction)
            doc_owner.append(mid)
        decisions.append((mid, "created", "new", None))

    resolved = valid.with_columns(
        pl.Series("methodology_id", [d[0] for d in decisions], dtype=pl.String),
        pl.Series("event", [d[1] for d in decisions], dtype=pl.String),
        pl.Series("via", [d[2] for d in decisions], dtype=pl.String),
        pl.Series("similarity", [d[3] for d in decisions], dtype=pl.Float64),
    )
    created = resolved.filter(pl.col("event") == "created")
    stats = resolved.group_by("methodology_id").agg(
        pl.len().cast(pl.Int64).alias("times_proposed"), pl.col("started_at").max().alias("last_proposed_at")
    )
    base = (
        created.select(
            "methodology_id",
            *v.METHODOLOGY_PROPOSAL_FIELDS,
            "dedup_key",
            pl.col("started_at").alias("created_at"),
            pl.col("output_id").alias("source_output_id"),
        )
        .join(stats, on="methodology_id", how="left")
        .select(CANDIDATE_BASE_DTYPES.names())
        .cast(CANDIDATE_BASE_DTYPES)  # type: ignore[arg-type]
        .sort("methodology_id")
    )

    accepted_events = resolved.select(
        pl.col("output_id").alias("source_id"),
        "methodology_id",
        "event",
        pl.col("started_at").alias("ts"),
        pl.struct("output_id", "run_id", "dedup_key", "via", "similarity")
        .struct.json_encode()
        .alias("detail"),
    )
    rejected = cand.filter(pl.col("verdict").is_not_null())
    reasons = (
        pl.when(pl.col("verdict") == "rejected_injection")
        .then(pl.col("injection"))
        .when(~pl.col("output_valid"))
        .then(pl.concat_list([pl.lit("output rejected: ") + pl.col("output_reason").fill_null("")]))
        .otherwise(pl.col("problems"))
    )
    rejected_events = rejected.select(
        pl.col("output_id").alias("source_id"),
        pl.lit(None, dtype=pl.String).alias("methodology_id"),
        pl.col("verdict").alias("event"),
        pl.col("started_at").alias("ts"),
        pl.struct(
            "output_id",
            "run_id",
            reasons.alias("reasons"),
            # where each injection family was found: field path, span and form (text / decoded:...)
            pl.when(pl.col("verdict") == "rejected_injection")
            .then(pl.col("injection_hits").str.json_decode(_HITS_DTYPE))
            .alias("hits"),
        )
        .struct.json_encode()
        .alias("detail"),
    )
    events = pl.concat(
        [accepted_events.cast(CANDIDATE_EVENTS_DTYPES), rejected_events.cast(CANDIDATE_EVENTS_DTYPES)]
    )  # type: ignore[arg-type]
    return CandidateResult(base=base, events=events.sort("ts", "source_id"))
