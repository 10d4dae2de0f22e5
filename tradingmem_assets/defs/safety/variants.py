"""Variant readings of a normalised text: de-spaced, de-leeted, repaired, rot13'd and reversed.

``i g n o r e`` / ``ig-no.re`` / ``for_get`` are read de-spaced; ``1gn0r3`` de-leeted (a ``1``
reads as ``i`` or ``l``, whichever gives a word the scan knows); keywords split by stray spaces are
rejoined (``ign ore``) and misspelt ones corrected at edit distance 1, or 2 from eight letters,
same first letter (``previus instructons``); rot13 and reversed views are read only when some
pattern or clause detector could open on them. Each variant keeps the map back to the original
positions, so a finding in a variant still points at the span as written.
"""

from __future__ import annotations

import codecs
import re
from functools import lru_cache

from tradingmem_assets.defs.safety import clauses
from tradingmem_assets.defs.safety.gates import words_of
from tradingmem_assets.defs.safety.intents import ALWAYS, BY_EXACT, PATTERN_LIST, candidates, known_word
from tradingmem_assets.defs.safety.normalise import View

_SPACED_RE = re.compile(r"(?<![a-z0-9])(?:[a-z][ .\-_*|/\\~+·•]{1,3}){3,}[a-z](?![a-z0-9])")
_INNER_SEP_RE = re.compile(r"(?<=[a-z])[.\-_*|~^'·•]+(?=[a-z])")
_LEET = {
    "0": "o",
    "1": "i",
    "3": "e",
    "4": "a",
    "5": "s",
    "7": "t",
    "8": "b",
    "9": "g",
    "@": "a",
    "$": "s",
    "!": "i",
    "|": "l",
    "+": "t",
    "€": "e",
}
_LEET_TOKEN_RE = re.compile(r"[a-z0-9@$!|+€]*[a-z][a-z0-9@$!|+€]*")
_LEET_CHARS = frozenset(_LEET)


def _delete(view: View, mask: list[bool]) -> View:
    index = view.index if view.index is not None else range(len(view.text))
    chars = [c for c, drop in zip(view.text, mask, strict=True) if not drop]
    idx = tuple(i for i, drop in zip(index, mask, strict=True) if not drop)
    return View("".join(chars), idx)


def despaced(view: View) -> View | None:
    """Letter-spaced runs joined (``i g n o r e  a l l`` -> ``ignore all``: the separator used between
    letters is dropped, any other gap becomes one space) and separators inside words dropped."""
    text = view.text
    if not (_SPACED_RE.search(text) or _INNER_SEP_RE.search(text)):
        return None
    chars = list(text)
    mask = [False] * len(text)
    for m in _SPACED_RE.finditer(text):
        seps = [(g.start(), g.end()) for g in re.finditer(r"[^a-z]+", m.group(0))]
        counts: dict[str, int] = {}
        for a, b in seps:
            counts[m.group(0)[a:b]] = counts.get(m.group(0)[a:b], 0) + 1
        letter_sep = max(counts, key=lambda k: (counts[k], -len(k)))
        for a, b in seps:
            a, b = a + m.start(), b + m.start()
            keep_space = text[a:b] != letter_sep
            for j in range(a, b):
                mask[j] = True
            if keep_space:
                mask[a] = False
                chars[a] = " "
    for m in _INNER_SEP_RE.finditer(text):
        for j in range(m.start(), m.end()):
            mask[j] = True
    return _delete(View("".join(chars), view.index), mask)


def leet(view: View) -> View | None:
    """Leetspeak read back as letters, token by token; ``1`` and ``|`` read as ``i`` or ``l``, whichever
    gives a word the scan knows (``1gn0r3`` -> ignore, ``ru135`` -> rules, ``|n5truct|0n5``)."""
    text = view.text
    chars = list(text)
    changed = False
    for m in _LEET_TOKEN_RE.finditer(text):
        tok = m.group(0)
        if not (_LEET_CHARS & set(tok)):
            continue
        as_i = "".join("i" if c == "|" else _LEET.get(c, c) for c in tok)
        word = as_i
        if "1" in tok or "|" in tok:
            as_l = "".join("l" if c in "1|" else _LEET.get(c, c) for c in tok)
            if known_word(as_l) and not known_word(as_i):
                word = as_l
        chars[m.start() : m.end()] = word
        changed = True
    return View("".join(chars), view.index) if changed else None


REPAIR_WORDS = frozenset(
    "ignore disregard forget previous prior instructions instruction system prompt override bypass reveal de"
    "veloper "
    "guidelines directives approve everything jailbreak pretend assistant unrestricted restrictions above gu"
    "idance "
    "rules context".split()
)
_REPAIR_BY_INITIAL: dict[str, list[str]] = {}
for _w in sorted(REPAIR_WORDS):
    _REPAIR_BY_INITIAL.setdefault(_w[0], []).append(_w)
_WORD_SPAN_RE = re.compile(r"[a-z]+")
REPAIR_PREFIXES = frozenset(w[:i] for w in REPAIR_WORDS for i in range(3, len(w)))


def _edit_distance(a: str, b: str, limit: int) -> int:
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if min(cur) > limit:
            return limit + 1
        prev = cur
    return prev[-1]


@lru_cache(maxsize=65536)
def repair_token(tok: str) -> str | None:
    limit = 2 if len(tok) >= 8 else 1
    for word in _REPAIR_BY_INITIAL.get(tok[0], ()):
        if _edit_distance(tok, word, limit) <= limit:
            return word
    return None


def repaired(view: View) -> View | None:
    """Keywords split by stray spaces rejoined (``ign ore`` -> ignore) and misspelt ones corrected
    (``previus instructons`` -> previous instructions): edit distance 1 (2 from eight letters), same first
    letter, only for words the scan does not know already."""
    text = view.text
    tokens = [(m.start(), m.end(), m.group(0)) for m in _WORD_SPAN_RE.finditer(text)]
    edits: list[tuple[int, int, str]] = []
    i = 0
    while i < len(tokens):
        a, b, tok = tokens[i]
        joined = None
        for k in (2, 3) if tok in REPAIR_PREFIXES else ():
            if i + k <= len(tokens):
                parts = tokens[i : i + k]
                if all(parts[j + 1][0] - parts[j][1] == 1 and text[parts[j][1]] == " " for j in range(k - 1)):
                    cand = "".join(p[2] for p in parts)
                    if cand in REPAIR_WORDS:
                        joined = (a, parts[-1][1], cand, k)
        if joined:
            edits.append(joined[:3])
            i += joined[3]
            continue
        if len(tok) >= 5 and tok not in REPAIR_WORDS and tok not in BY_EXACT:
            word = repair_token(tok)
            if word:
                edits.append((a, b, word))
        i += 1
    if not edits:
        return None
    index = view.index if view.index is not None else range(len(text))
    chars: list[str] = []
    idx: list[int] = []
    pos = 0
    for a, b, word in edits:
        chars.extend(text[pos:a])
        idx.extend(index[pos:a])
        chars.extend(word)
        idx.extend(index[a] if j == 0 else index[b - 1] for j in range(len(word)))
        pos = b
    chars.extend(text[pos:])
    idx.extend(index[pos:])
    return View("".join(chars), tuple(idx))


def rot13_text(text: str) -> str:
    return codecs.encode(text, "rot13")


def reversed_text(text: str) -> str:
    return text[::-1]


def view_may_match(text: str) -> bool:
    """Whether a variant view can hold a finding the text as written does not: some pattern gated by
    words, or a clause detector, opens on its words (word-free patterns match the variant exactly
    where they match the text, and those findings are merged away)."""
    words = words_of(text)
    if any(pid not in ALWAYS and PATTERN_LIST[pid][2].open(words, text) for pid in candidates(words)):
        return True
    return clauses.may_match(words.exact)


def rot13_view(view: View) -> View:
    return View(codecs.encode(view.text, "rot13"), view.index)


def reversed_view(view: View) -> View:
    index = view.index if view.index is not None else tuple(range(len(view.text)))
    return View(view.text[::-1], tuple(reversed(index)))


# views whose findings are also ``encoded_payload`` (the text disguised itself)
ENCODED_VIEWS = frozenset({"rot13", "reversed", "leetspeak"})
# keywords whose letter-split form (``ig-nore``, ``s.y.s.t.e.m``) means the de-spaced view is worth reading
_VIEW_KEYWORDS = (
    "ignore disregard forget override bypass instructions instruction prompt system reveal developer pretend "
    "jailbreak previous guidance assistant transfer secret password verbatim initial hidden immerse unrestri"
    "cted "
    "print repeat directives guidelines everything above prior"
).split()
# a leet character inside a word (``pr0mpt``), opening one (``1gnore``) or closing one (``th3``)
LEET_TRIGGER_RE = re.compile(
    r"[0-9@$!|+€](?:(?<=[a-z][0-9@$!|+€])[0-9@$!|+€]*[a-z]|(?<![a-z0-9][0-9@$!|+€])[a-z]{2}|"
    r"(?<=[a-z]{2}[3@$!])(?![0-9a-z]))"
)
_SPLIT_SEP = r"[-_*.|~^·•+ ]{1,3}"
_OBFUSCATED_RE = re.compile(
    r"(?<![a-z])(?:"
    + "|".join(
        f"(?:{re.escape(w[0])}" + "".join(f"(?:{_SPLIT_SEP})?{re.escape(c)}" for c in w[1:]) + ")"
        for w in sorted(
            set(_VIEW_KEYWORDS + "follow learned before mode developer reveal you dan".split()),
            key=len,
            reverse=True,
        )
    )
    + r")"
)


def obfuscated_keyword(text: str) -> bool:
    """Whether a keyword appears split by separators (``ig-nore``, ``i g n o r e``, ``s.y.s.t.e.m``)."""
    for m in _OBFUSCATED_RE.finditer(text):
        if not m.group(0).isalpha():
            return True
    return False
