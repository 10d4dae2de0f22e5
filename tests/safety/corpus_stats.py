"""The project's injection corpus (tests/safety/corpus) and its detection / false-positive rates."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tradingmem_assets.defs.safety.injection import scan_text

CORPUS = Path(__file__).resolve().parent / "corpus"
# rounds used to write and generalise the rules (each round after the first was first measured untuned)
TUNED_ATTACKS = (
    "attacks.jsonl",
    "attacks_round2.jsonl",
    "attacks_round3.jsonl",
    "attacks_round4.jsonl",
    "attacks_round5.jsonl",
)
TUNED_BENIGN = (
    "benign.jsonl",
    "benign_round2.jsonl",
    "benign_round3.jsonl",
    "benign_round4.jsonl",
    "benign_round5.jsonl",
)
# held-out sets: each was written before the rule change it measures and its rate recorded untuned
# (docs/security.md); the families they exposed were then generalised, so they now guard regressions
HELD_OUT_SETS = {
    "held-out 1": ("attacks_heldout.jsonl", "benign_heldout.jsonl"),
    "held-out 2": ("attacks_heldout2.jsonl", "benign_heldout2.jsonl"),
}
HELD_OUT_ATTACKS = tuple(a for a, _ in HELD_OUT_SETS.values())
HELD_OUT_BENIGN = tuple(b for _, b in HELD_OUT_SETS.values())

# corpus family -> the reason code the scan should give it
EXPECTED_CODE = {
    "instruction_override": "ignore_instructions",
    "multilingual": "ignore_instructions",
    "role_tag": "role_tag",
    "prompt_extraction": "prompt_exfiltration",
    "roleplay_jailbreak": "new_instructions",
    "markdown_exfiltration": "markdown_exfiltration",
    "tool_call": "tool_call_syntax",
    "harmful_action": "harmful_action",
    "hidden_unicode": "hidden_unicode",
    "homoglyph": "homoglyph",
    "leetspeak": "encoded_payload",
}


def expected_code(family: str) -> str | None:
    if family.startswith("encoded_"):
        return "encoded_payload"
    return EXPECTED_CODE.get(family)


def load(*names: str) -> list[dict]:
    rows = []
    for name in names:
        with (CORPUS / name).open(encoding="utf-8") as f:
            rows.extend(json.loads(line) for line in f if line.strip())
    return rows


@dataclass(frozen=True)
class Rates:
    by_family: dict[str, tuple[int, int]]  # family -> (detected, total)
    misses: list[dict]

    @property
    def detected(self) -> int:
        return sum(d for d, _ in self.by_family.values())

    @property
    def total(self) -> int:
        return sum(t for _, t in self.by_family.values())

    @property
    def rate(self) -> float:
        return self.detected / self.total if self.total else 1.0

    def table(self) -> str:
        lines = [f"{'family':24} detected"]
        for family, (d, t) in sorted(self.by_family.items()):
            lines.append(f"{family:24} {d}/{t} ({100 * d / t:.0f}%)")
        lines.append(f"{'all':24} {self.detected}/{self.total} ({100 * self.rate:.1f}%)")
        return "\n".join(lines)


def detection(rows: list[dict]) -> Rates:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    for row in rows:
        hit = bool(scan_text(row["text"]))
        counts[row["family"]][1] += 1
        counts[row["family"]][0] += hit
        if not hit:
            misses.append(row)
    return Rates({k: (v[0], v[1]) for k, v in counts.items()}, misses)


def false_positives(rows: list[dict]) -> list[tuple[str, list[str]]]:
    return [(row["text"], found) for row in rows if (found := scan_text(row["text"]))]
