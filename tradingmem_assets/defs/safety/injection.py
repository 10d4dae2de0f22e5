"""Prompt-injection scan for methodology candidates (SPEC sections 8 and 13): the public API.

A methodology's text is injected into future prompts, so a candidate carrying instructions aimed at
the model is refused before storage (``rejected_injection``), never cleaned up and kept. The scan is
a pure function of the text; ``scan_proposal`` reports every hit with its family (the reason code),
the field it sits in (``phases[1].criteria[0]``), its span in that field, the matched text, and the
form it was found in.

Every string goes through four steps:

1. **hidden characters** are findings of their own (``hidden_unicode``), and text smuggled in tag
   characters or variation selectors is read back and scanned (``normalise``, ``decoding``);
2. **normalisation**: NFKC, invisible characters dropped, diacritics stripped, lower case,
   confusables folded to Latin; words mixing scripts are ``homoglyph`` findings (``normalise``);
3. **variants and decoding**: de-spaced, de-leeted, repaired, rot13'd and reversed readings
   (``variants``), and everything that looks encoded decoded and scanned again, depth 2
   (``decoding``); a decoded or disguised text that carries a finding adds ``encoded_payload``;
4. **families of intent**: regexes behind cheap word gates (``intents``, ``gates``; the patterns
   live with their family: ``overrides``, ``personas``, ``exfiltration``, ``markup``, ``harm``) and
   clause detectors that need a verb, an instruction noun and a conversational anchor in one clause
   (``clauses``), and intent frames: word classes (dismissal verb x object of guidance x anchor,
   voiding predicates, interruptions) that must meet in one clause (``frames``).

The project's corpus and its rates live in ``tests/safety/corpus`` and ``docs/security.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Any

import polars as pl

from tradingmem_assets.defs.safety import gates, variants
from tradingmem_assets.defs.safety.clauses import clause_hits
from tradingmem_assets.defs.safety.decoding import decode_spans, smuggled
from tradingmem_assets.defs.safety.frames import frame_hits
from tradingmem_assets.defs.safety.gates import TOKEN_RE, words_of
from tradingmem_assets.defs.safety.intents import (
    BY_EXACT,
    COMPILED_ML,
    FAMILIES,
    FAMILY_DESCRIPTIONS,
    HIDDEN_UNICODE,
    NEG_BEFORE,
    PATTERNS,
    match_view,
)
from tradingmem_assets.defs.safety.normalise import View, homoglyph_spans, normalise, normalise_views
from tradingmem_assets.defs.safety.overrides import MULTILINGUAL_GATE
from tradingmem_assets.defs.safety.variants import (
    ENCODED_VIEWS,
    LEET_TRIGGER_RE,
    REPAIR_PREFIXES,
    REPAIR_WORDS,
    obfuscated_keyword,
    repair_token,
    reversed_text,
    reversed_view,
    rot13_text,
    rot13_view,
    view_may_match,
)
from tradingmem_assets.lib.vocabulary import METHODOLOGY_PROPOSAL_FIELDS

__all__ = [
    "FAMILIES",
    "FAMILY_DESCRIPTIONS",
    "HIDDEN_UNICODE",
    "PATTERNS",
    "InjectionHit",
    "InjectionReport",
    "clear_caches",
    "normalise",
    "scan_candidate",
    "scan_column",
    "scan_proposal",
    "scan_string",
    "scan_text",
    "scan_texts",
]

# -------------------------------------------------------------------------------------- report


@dataclass(frozen=True)
class InjectionHit:
    """One finding: the family (reason code), the field it sits in, its span in that field's text,
    the matched original text, and the form it was found in (``text``: as written; ``normalised``:
    after NFKC / invisible removal / confusable folding; ``despaced``, ``leetspeak``, ``rot13``,
    ``reversed``; ``decoded:<encoding>`` with the decoded excerpt in ``decoded``)."""

    family: str
    field: str
    start: int
    end: int
    matched: str
    form: str = "text"
    decoded: str | None = None

    @property
    def obfuscated(self) -> bool:
        return self.form != "text"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class InjectionReport:
    """The hits of a scan, in field order then position; empty: clean."""

    hits: tuple[InjectionHit, ...] = ()

    @property
    def clean(self) -> bool:
        return not self.hits

    @property
    def families(self) -> list[str]:
        """The reason codes found, in ``FAMILIES`` order."""
        found = {h.family for h in self.hits}
        return [f for f in FAMILIES if f in found]

    @property
    def fields(self) -> list[str]:
        return list(dict.fromkeys(h.field for h in self.hits))

    def by_family(self) -> dict[str, list[InjectionHit]]:
        out: dict[str, list[InjectionHit]] = {}
        for h in self.hits:
            out.setdefault(h.family, []).append(h)
        return {f: out[f] for f in FAMILIES if f in out}

    def to_dict(self) -> dict[str, Any]:
        return {"clean": self.clean, "families": self.families, "hits": [h.to_dict() for h in self.hits]}

    def summary(self) -> str:
        if self.clean:
            return "clean"
        return "; ".join(
            f"{h.family} in {h.field} [{h.start}:{h.end}] {h.matched[:60]!r}"
            + (f" ({h.form})" if h.obfuscated else "")
            for h in self.hits
        )


# ---------------------------------------------------------------------------------------- scan

_MAX_DEPTH = 2
_MAX_LEN = 20000


def _scan_string(text: str, field: str, depth: int = 0, via: str = "") -> list[InjectionHit]:
    if not text:
        return []
    text = text[:_MAX_LEN]
    norm = normalise_views(text)
    gated = gates.USE_GATES
    hits: list[InjectionHit] = []
    seen: set[tuple[str, int, int]] = set()

    def add(family: str, start: int, end: int, form: str, decoded: str | None = None) -> None:
        key = (family, start, end)
        if key in seen:
            return
        seen.add(key)
        hits.append(InjectionHit(family, field, start, end, text[start:end], via + form, decoded))

    for start, end in norm.hidden:
        add("hidden_unicode", start, end, "text")
    for start, end in homoglyph_spans(text):
        add("homoglyph", start, end, "text")

    folded = norm.folded
    ftext = folded.text
    views: list[tuple[View, str]] = [(folded, "text")]
    despaced = None
    if not gated or obfuscated_keyword(ftext):
        despaced = variants.despaced(folded)
        if despaced is not None:
            views.append((despaced, "despaced"))
    if not gated or LEET_TRIGGER_RE.search(ftext):
        leet = variants.leet(folded)
        if leet is not None:
            views.append((leet, "leetspeak"))
    fwords = words_of(ftext)
    unknown = fwords.exact - BY_EXACT.keys() - REPAIR_WORDS
    needs_repair = (
        not gated
        or despaced is not None
        or not fwords.exact.isdisjoint(REPAIR_PREFIXES)
        or any(len(w) >= 5 and repair_token(w) for w in unknown)
    )
    repaired = variants.repaired(despaced if despaced is not None else folded) if needs_repair else None
    if repaired is not None:
        views.append((repaired, "repaired"))
    for build, form, flip in ((rot13_view, "rot13", rot13_text), (reversed_view, "reversed", reversed_text)):
        if not gated or view_may_match(flip(ftext)):
            views.append((build(folded), form))

    plain_spans: dict[str, list[tuple[int, int]]] = {}
    for view, form in views:
        vwords = fwords.exact if view is folded else frozenset(TOKEN_RE.findall(view.text))
        found = match_view(view.text, form, fwords if view is folded else None)
        found += [(family, s, e, form) for family, s, e in clause_hits(view.text, vwords)]
        found += [(family, s, e, form) for family, s, e in frame_hits(view.text, vwords, depth > 0)]
        for family, s, e, f in found:
            start, end = view.span(s, e)
            if form == "text":
                plain_spans.setdefault(family, []).append((start, end))
            elif any(a < end and start < b for a, b in plain_spans.get(family, ())):
                continue  # the same finding, already seen as written
            if f == "text" and text[start:end].lower() != view.text[s:e]:
                f = "normalised"
            add(family, start, end, f, view.text[s:e] if f in ENCODED_VIEWS else None)
            if f in ENCODED_VIEWS:
                add("encoded_payload", start, end, f, view.text[s:e])
    ml = COMPILED_ML if (not gated or not text.isascii() or MULTILINGUAL_GATE.open(fwords, ftext)) else ()
    for pattern in ml:
        for m in pattern.finditer(norm.plain.text):
            if NEG_BEFORE.search(norm.plain.text, max(0, m.start() - 40), m.start()):
                continue
            start, end = norm.plain.span(*m.span())
            add(
                "ignore_instructions",
                start,
                end,
                "text" if text[start:end].lower() == m.group(0) else "normalised",
            )

    if depth < _MAX_DEPTH:
        decodings = [(*norm.visible.span(s, e), enc, dec) for s, e, enc, dec in decode_spans(norm.visible)]
        if not text.isascii():
            decodings += list(smuggled(text))
        for start, end, enc, decoded in decodings:
            inner = _scan_string(decoded, field, depth + 1)
            intent = [
                h for h in inner if h.family not in ("hidden_unicode", "homoglyph") or enc == "tag_characters"
            ]
            if not intent:
                continue
            add("encoded_payload", start, end, f"decoded:{enc}", decoded[:200])
            for h in intent:
                if h.family != "encoded_payload":
                    form = f"decoded:{enc}" + ("" if h.form == "text" else ">" + h.form)
                    add(h.family, start, end, form, h.matched[:200])
    hits.sort(key=lambda h: (h.start, FAMILIES.index(h.family), h.end))
    return hits


def scan_string(text: str | None, field: str = "text") -> InjectionReport:
    """The report of one string (``field`` names it in the hits)."""
    return InjectionReport(tuple(_scan_string(text or "", field)))


def _walk(value: Any, path: str) -> Iterable[tuple[str, str]]:
    if isinstance(value, str):
        yield path or "(text)", value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            key = str(k)
            child = f"{path}.{key}" if path else key
            if not isinstance(k, str) or key not in _PROPOSAL_KEYS:
                yield f"{child} (key)", key
            yield from _walk(v, child)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")


_PROPOSAL_KEYS = frozenset(
    {
        *METHODOLOGY_PROPOSAL_FIELDS,
        "criteria",
        "tools_used",
        "depends_on",
    }
)


def scan_proposal(proposal: Mapping[str, Any] | list[Any] | str | None) -> InjectionReport:
    """Scan every string of a proposed methodology (``{name, description, direction, primary_signal,
    timeframe, indicators: [...], asset_class, phases: [{name, criteria, tools_used, depends_on}]}``),
    keys outside that shape included. A JSON string is parsed first; text that is not JSON is scanned
    as one field ``(text)``."""
    if isinstance(proposal, str):
        try:
            parsed = json.loads(proposal)
        except ValueError:
            parsed = proposal
        proposal = parsed
    hits: list[InjectionHit] = []
    for field, text in _walk(proposal, ""):
        hits.extend(replace(h, field=field) for h in _scan_cached(text))
    return InjectionReport(tuple(hits))


JOINED_FIELD = "(all fields)"


def scan_candidate(proposal: Mapping[str, Any] | list[Any] | str | None, joined: str) -> InjectionReport:
    """``scan_proposal`` (every field on its own), then ``joined`` (all the proposal's strings joined),
    so an instruction split across fields is still caught: a family found only in ``joined`` is
    reported under the field ``(all fields)``, its span in ``joined``."""
    report = scan_proposal(proposal)
    found = set(report.families)
    if set(scan_text(joined)) <= found:
        return report
    extra = tuple(replace(h, field=JOINED_FIELD) for h in _scan_cached(joined) if h.family not in found)
    return InjectionReport(report.hits + extra)


@lru_cache(maxsize=65536)
def _scan_cached(text: str) -> tuple[InjectionHit, ...]:
    """Hits of one string (field left empty): proposals repeat their vocabulary fields, so cache."""
    return tuple(_scan_string(text, ""))


@lru_cache(maxsize=65536)
def _families(text: str) -> tuple[str, ...]:
    found = {h.family for h in _scan_cached(text)}
    return tuple(f for f in FAMILIES if f in found)


def clear_caches() -> None:
    """Forget cached scan results (the scan is pure; caches only save repeated work)."""
    _families.cache_clear()
    _scan_cached.cache_clear()


def scan_text(text: str | None) -> list[str]:
    """The families (reason codes) ``text`` matches, in ``FAMILIES`` order; empty: clean."""
    if not text:
        return []
    return list(_families(text))


def scan_texts(texts: Iterable[str | None]) -> list[list[str]]:
    """The matched families of each text."""
    return [scan_text(t) for t in texts]


def _scan_series(s: pl.Series) -> pl.Series:
    return pl.Series(s.name, [scan_text(t) for t in s.to_list()], dtype=pl.List(pl.String))


def scan_column(texts: pl.Expr) -> pl.Expr:
    """A list[str] expression: the families each text matches (empty: clean)."""
    return texts.cast(pl.String).map_batches(
        _scan_series, return_dtype=pl.List(pl.String), is_elementwise=True
    )
