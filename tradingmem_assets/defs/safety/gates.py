"""Gates: a cheap test of whether a pattern can match a text at all, from the words it needs.

Each pattern has a gate: word groups (every group needs one of its words among the text's words,
compared on their first four or five letters so inflections pass: ``ignor*``) and substrings (one
must be present). Gates only save time: a pattern whose gate fails cannot match, and the corpus
test runs every text with ``USE_GATES`` off too and requires identical results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

USE_GATES = True  # tests switch gates off to check they never hide a match
TOKEN_RE = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class Gate:
    """Word groups (each needs one of its words among the text's words: exact words, or stems ending
    in ``*`` of 4 or 5 letters) and substrings (one must be present); ``alts``: any of these instead."""

    groups: tuple[tuple[frozenset[str], frozenset[str], frozenset[str]], ...] = ()
    subs: tuple[str, ...] = ()
    alts: tuple[Gate, ...] = ()

    def open(self, words: Words, text: str) -> bool:
        if self.alts:
            return any(g.open(words, text) for g in self.alts)
        if self.subs and not any(s in text for s in self.subs):
            return False
        for exact, p4, p5 in self.groups:
            if exact.isdisjoint(words.exact) and p4.isdisjoint(words.p4) and p5.isdisjoint(words.p5):
                return False
        return True

    def __or__(self, other: Gate) -> Gate:
        return Gate(alts=(self.alts or (self,)) + (other.alts or (other,)))


@dataclass(frozen=True)
class Words:
    exact: frozenset[str]
    p4: frozenset[str]
    p5: frozenset[str]


def G(*groups: str, subs: tuple[str, ...] = ()) -> Gate:
    out = []
    for g in groups:
        words = g.split()
        stems = [w[:-1] for w in words if w.endswith("*")]
        assert all(len(x) in (4, 5) for x in stems), stems
        out.append(
            (
                frozenset(w for w in words if not w.endswith("*")),
                frozenset(x for x in stems if len(x) == 4),
                frozenset(x for x in stems if len(x) == 5),
            )
        )
    return Gate(tuple(out), subs)


def words_of(text: str) -> Words:
    """The words of ``text`` with their 4- and 5-letter prefixes, as gates read them."""
    tokens = frozenset(TOKEN_RE.findall(text))
    return Words(tokens, frozenset(w[:4] for w in tokens), frozenset(w[:5] for w in tokens))
