"""Prompt-injection scan for methodology candidates (SPEC sections 8 and 13).

A methodology's text is injected into future prompts, so a candidate carrying instructions aimed at
the model is refused before storage (``rejected_injection``), never cleaned up and kept.

The scan is set-based (Polars regexes over a text column). Text is first normalized with NFKC
(full-width and compatibility forms fold to ASCII) and a copy with invisible format characters
removed is scanned too, so ``ig<ZWSP>nore previous instructions`` is caught twice: as hidden
unicode and as the phrase. Patterns (name -> what it catches):

- ``ignore_instructions``: ignore/disregard/forget/override ... previous/prior/above/earlier/system
  instructions/prompts/rules/context (and the Chinese 忽略/无视 ... 指令/指示/提示 forms)
- ``new_instructions``: "new instructions:", "from now on you", "you are now", "act as ... (DAN|
  unrestricted|jailbroken)", "developer mode", "jailbreak", "do anything now"
- ``prompt_exfiltration``: reveal/print/show/repeat ... system prompt / hidden instructions
- ``role_tag``: <system>, </system>, <|im_start|>, <|system|>, [INST], [/INST], <<SYS>>,
  "### system", and a line opening with system:/assistant:/developer:/user: (or "assistant:" anywhere)
- ``tool_call_syntax``: <tool_call>, <function_call>, <invoke ...>, ```tool_call / ```function
  fences, "tool_calls"/"function_call" JSON keys, {"name": ..., "args|arguments|parameters": ...},
  functions.<name>( calls
- ``hidden_unicode``: zero-width and other format characters (Unicode Cf: ZWSP, ZWNJ, ZWJ, word
  joiner, BOM, soft hyphen, bidi embeddings/overrides/isolates, tag characters) and variation
  selectors
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

_FILLER = (
    r"all|any|every|of|the|your|my|these|those|previous|prior|preceding|above|earlier|system|original|"
    r"safety|developer|initial|existing|current|other|and"
)
_IGNORE = (
    r"(?i)\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:" + _FILLER + r")\s+){0,4}"
    r"(?:instructions?|prompts?|rules?|directions?|directives?|guidelines?|context|messages?|constraints?|"
    r"guardrails?)\b"
)
_IGNORE_ZH = r"(?:忽略|无视|忽视|忘记|不要理会)[\s\S]{0,12}?(?:指令|指示|提示|说明|规则|设定)"
PATTERNS: dict[str, str] = {
    "ignore_instructions": f"{_IGNORE}|{_IGNORE_ZH}",
    "new_instructions": (
        r"(?i)\bnew\s+instructions?\s*:|\bfrom\s+now\s+on\s*,?\s+you\b|\byou\s+are\s+now\b|"
        r"\bdeveloper\s+mode\b|\bjail\s*break|\bdo\s+anything\s+now\b|"
        r"\bact\s+as\s+(?:an?\s+)?(?:unrestricted|unfiltered|jailbroken|dan)\b|\bpretend\s+(?:to\s+be|you\s+are)\b"
    ),
    "prompt_exfiltration": (
        r"(?i)\b(?:reveal|print|show|repeat|output|leak|dump)\b[\s\S]{0,30}?"
        r"\b(?:system\s+prompt|hidden\s+instructions?|initial\s+instructions?|your\s+instructions)\b"
    ),
    "role_tag": (
        r"(?i)</?\s*(?:system|assistant|developer|user|sys)\s*>|<\|[a-z_]*\|>|\[/?inst\]|<<\s*/?sys\s*>>|"
        r"#{2,}\s*(?:system|assistant|developer|instruction)s?\b|"
        r"(?m:^\s*(?:system|assistant|developer|user)\s*:)|\bassistant\s*:"
    ),
    "tool_call_syntax": (
        r"(?i)</?\s*(?:tool_call|tool_use|function_call|function_calls|invoke|antml:[a-z_]+)\b|"
        r"```\s*(?:tool_call|tool_code|tool|function|json\s*\{\s*\"(?:name|tool)\")|"
        r"\"(?:tool_calls|function_call|tool_use)\"\s*:|"
        r"\{\s*\"(?:name|tool|tool_name|function)\"\s*:\s*\"[^\"]*\"\s*,\s*\"(?:args|arguments|parameters|input)\"\s*:|"
        r"\bfunctions\.[a-z_][a-z0-9_]*\s*\("
    ),
    "hidden_unicode": r"[\p{Cf}\x{FE00}-\x{FE0F}\x{E0100}-\x{E01EF}]",
}
_INVISIBLE = r"[\p{Cf}\x{FE00}-\x{FE0F}\x{E0100}-\x{E01EF}]"


def scan_column(texts: pl.Expr) -> pl.Expr:
    """A list[str] expression: the names of the injection patterns each text matches (empty: clean)."""
    normalized = texts.fill_null("").str.normalize("NFKC")
    visible = normalized.str.replace_all(_INVISIBLE, "")
    hits = []
    for name, pattern in PATTERNS.items():
        source = normalized if name == "hidden_unicode" else visible
        hit = source.str.contains(pattern) | (
            normalized.str.contains(pattern) if name != "hidden_unicode" else pl.lit(False)
        )
        hits.append(pl.when(hit).then(pl.lit(name)))
    return pl.concat_list(hits).list.drop_nulls()


def scan_texts(texts: Iterable[str | None]) -> list[list[str]]:
    """The matched pattern names of each text (a thin wrapper over ``scan_column`` for callers and tests)."""
    frame = pl.DataFrame({"text": list(texts)}, schema={"text": pl.String})
    return frame.select(scan_column(pl.col("text")).alias("hits")).get_column("hits").to_list()


def scan_text(text: str | None) -> list[str]:
    return scan_texts([text])[0]
