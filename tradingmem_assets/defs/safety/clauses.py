"""Clause detectors: families of intent as co-occurrence inside one clause.

A clause ends at ``. ; ! ?``, a newline or ``: ``. An override is a verb of dismissal + a noun for
the model's instructions + an anchor to the conversation ("you were given", "above", "your", "the
operator"); an extraction is a verb of showing + such a noun + an anchor (or a secret noun alone);
a persona switch is "you are / act as / become" + an AI noun + an unrestricted descriptor. Trading
prose has the verbs and the nouns, rarely all three: "follow the previous instructions from the risk
desk" is clean, and instructions attributed to a human source (the desk, the PM, a client) are the
methodology's subject, not an override.
"""

from __future__ import annotations

import bisect
import re

from tradingmem_assets.defs.safety import gates
from tradingmem_assets.defs.safety.intents import NEG, NEG_BEFORE

_CLAUSE_SPLIT_RE = re.compile(r"[.;!?\n]+(?=\s|$)|[;!?\n]|:\s")
_DISMISS_RE = re.compile(
    r"\b(?:ignor(?:e|es|ed|ing)|disregard(?:s|ed|ing)?|forget(?:s|ting)?|forgot|overrid(?:e|es|ing|den)|"
    r"overrul(?:e|es|ed)|"
    r"bypass(?:es|ed|ing)?|discard(?:s|ed|ing)?|dismiss(?:es|ed|ing)?|abandon(?:s|ed|ing)?|neglect(?:s|ed|"
    r"ing)?|"
    r"nullif(?:y|ies|ied)|revok(?:e|es|ed)|rescind(?:s|ed)?|unlearn|scrap|ditch|erase|wipe|purge|"
    r"set\s+aside|put\s+aside|never\s+mind|pay\s+no\s+(?:attention|heed|mind)|"
    r"(?:do\s+not|don'?t|never|no\s+longer|stop)\s+(?:pay(?:ing)?\s+(?:any\s+)?attention\s+to|"
    r"follow(?:ing)?|obey(?:ing)?|"
    r"apply(?:ing)?|observ(?:e|ing)|heed(?:ing)?|respect(?:ing)?|us(?:e|ing)|take\s+into\s+account|"
    r"consider(?:ing)?|"
    r"adher(?:e|ing)\s+to|listen(?:ing)?\s+to|comply(?:ing)?\s+with)|"
    r"leave\s+behind|get\s+rid\s+of|throw\s+(?:out|away)|move\s+on\s+from|"
    r"treat\s+(?:\w+\s+){0,5}?as\s+(?:irrelevant|void|null|obsolete|cancel+ed|invalid|fake|a\s+test)|"
    r"consider\s+(?:\w+\s+){0,5}?(?:void|null|obsolete|cancel+ed|invalid|irrelevant)|"
    r"(?:are|is|were|was|have\s+been|has\s+been|now)\s+(?:hereby\s+|now\s+)?(?:void(?:ed)?|null|nullified|"
    r"cancel+ed|"
    r"revoked|rescinded|withdrawn|expired|obsolete|outdated|superseded|overridden|suspended|lifted|invalid|"
    r"irrelevant|a\s+mistake|mistaken|fake|a\s+test)|"
    r"no\s+longer\s+(?:appl(?:y|ies)|counts?|matters?|valid|holds?|binding|in\s+effect)|"
    r"(?:has|have|carr(?:y|ies)|hold|holds)\s+no\s+(?:authority|force|weight|effect|power|validity|standing)|"
    r"supersed(?:e|es|ed|ing)|invalidat(?:e|es|ed)|takes?\s+precedence\s+over|"
    r"(?:don'?t|doesn'?t|do\s+not|does\s+not)\s+(?:apply|count|matter))\b"
)
_DISMISS_NEG_RE = re.compile(rf"\b{NEG}\s+(?:ever\s+|even\s+|just\s+)?$")
_STRONG_NOUN_RE = re.compile(
    r"\b(?:instructions?|directives?|directions|prompts?|preprompt|programming|guidelines?|guidance|"
    r"polic(?:y|ies)|training|"
    r"conditioning|configuration|constraints?|restrictions?|guardrails?|commands|system\s+(?:prompt|"
    r"message)s?)\b"
)
_WEAK_NOUN_RE = re.compile(
    r"\b(?:rules?|rulebook|context|text|content|data|input|messages?|everything|anything|whatever|setup|"
    r"brief|"
    r"briefing|mandate|script|"
    r"what\s+(?:\w+\s+){0,3}?(?:told|said|gave|wrote|instructed))\b"
)
_STRONG_ANCHOR_RE = re.compile(
    r"\b(?:you(?:'ve|'re|\s+are|\s+were|\s+have\s+been|\s+had\s+been|\s+have)?\s+(?:been\s+)?(?:given|told|"
    r"taught|"
    r"trained|following|operating|using|set\s+up|configured|loaded|provided|handed|received|got)|"
    r"given\s+to\s+you|"
    r"told\s+you|came\s+before|comes\s+before|so\s+far|until\s+now|up\s+to\s+now|"
    r"this\s+(?:paragraph|text|message|prompt|conversation|chat|line|entry|point|sentence)|"
    r"the\s+rest\s+of\s+(?:this|the)|"
    r"earlier\s+text|old\s+context|operator|administrator|admin|developers?|creators?|trainers?|verbatim)\b"
)
_WEAK_ANCHOR_RE = re.compile(
    r"\b(?:previous(?:ly)?|prior|preceding|above|earlier|original|initial|usual|old|former|your|its)\b"
)
_EXFIL_VERB_RE = re.compile(
    r"\b(?:reveal|print|show|display|repeat|output|leak|dump|expose|echo|recite|spell\s+out|write|put|copy|"
    r"spit\s+out|describe|outline|detail|enumerate|paraphrase|regurgitate|restate|"
    r"paste|"
    r"give\s+me|tell\s+me|send\s+me|share|disclose|list|quote|reproduce|summari[sz]e|translate|return|"
    r"provide|"
    r"what|which)\b"
)
_EXFIL_NOUN_RE = re.compile(
    r"\b(?:instructions?|prompts?|system\s+(?:prompt|message|configuration|settings)|preamble|configuration|"
    r"directives?|"
    r"programming|context\s+window|first\s+message|guidelines|rules|messages?|setup|text|everything)\b"
)
_EXFIL_SECRET_RE = re.compile(
    r"\b(?:api\s+(?:keys?|tokens?|secrets?)|secret\s+keys?|private\s+keys?|passwords?|passphrases?|"
    r"credentials|"
    r"seed\s+phrases?|mnemonics?|access\s+tokens?|auth\s+tokens?|session\s+tokens?|"
    r"env(?:ironment)?\s+variables)\b"
)
_EXFIL_ANCHOR_RE = re.compile(
    r"\b(?:your|you\s+(?:were|have\s+been|use|follow|received|got|are\s+using|(?:are\s+)?(?:operat|work|run)"
    r"(?:e|ing)\s+(?:under|with|by)|are\s+bound\s+by|abide\s+by)|came\s+before|initial|original|hidden|"
    r"secret|this\s+(?:message|prompt|conversation|chat|line)|"
    r"developer|verbatim|word\s+for\s+word|word-for-word|precede[sd]?|preceding|above|before\s+this|earlier|"
    r"first|"
    r"confidential|internal|loaded|you\s+(?:were|have\s+been|had\s+been)\s+(?:told|given|instructed|asked|"
    r"shown))\b"
)
_PERSONA_RE = re.compile(
    r"\b(?:pretend(?:ing)?|imagine|act(?:ing)?|behav(?:e|ing)|role-?\s?play(?:ing)?|play(?:ing)?|become|"
    r"simulate|emulate|"
    r"impersonate|you(?:'re|\s+are|\s+will\s+be|\s+become)|be)\b"
)
_AI_NOUN_RE = re.compile(
    r"\b(?:ai|a\.i\.|assistant|chatbot|chat\s*bot|bot|llm|language\s+model|model|gpt|persona|character|"
    r"entity|"
    r"version\s+of\s+yourself|oracle|alter\s+ego|reviewer|grader|evaluator|judge|moderator)\b"
)
_UNRESTRICTED_RE = re.compile(
    r"\b(?:(?:no|never|without|zero|free\s+(?:of|from))\s+(?:\w+\s+){0,2}?(?:rules|restrictions|limits|"
    r"limitations|filters|"
    r"guidelines|ethics|morals|policies|censorship|boundaries|guardrails|training|alignment|safeguards|"
    r"safety)|never\s+(?:refuses?|says\s+no|rejects?|declines?|denies|objects?)|always\s+(?:approves?|agrees?|"
    r"complies|says\s+yes|accepts?)|approves?\s+(?:everything|anything|all)|"
    r"unfiltered|uncensored|unrestricted|unlimited|jailbroken|rogue|evil|unaligned|amoral|lawless|unethical|"
    r"ignores?\s+(?:its|all|any|every|the|your)\s+(?:\w+\s+)?(?:developers?|creators?|rules|guidelines|"
    r"policies|"
    r"instructions|restrictions)|bypass(?:es|ing)?\s+(?:\w+\s+)?(?:limits|rules|restrictions|filters)|"
    r"(?:can|will)\s+do\s+anything|broken\s+free|unbound|unchained)\b"
)
_RESET_RE = re.compile(
    r"\b(?:reset|revert|return|restore|wipe)\b[^.\n]{0,30}?\b(?:blank|clean|empty|factory)\s+(?:state|slate|"
    r"settings|"
    r"mode|memory)\b"
)
_CLAUSE_GATE = frozenset(
    "ignore ignores ignored ignoring disregard disregards disregarded disregarding forget forgets forgetting"
    " forgot "
    "override overrides overriding overridden overrule bypass discard dismiss abandon neglect nullify revoke"
    " revoked "
    "rescind rescinded unlearn scrap ditch erase wipe purge aside mind attention not don never longer stop l"
    "eave rid "
    "throw move treat consider void voided null nullified cancelled canceled withdrawn expired obsolete outd"
    "ated "
    "superseded suspended lifted invalid irrelevant mistake mistaken fake test doesn does reset revert resto"
    "re "
    "supersede supersedes superseding invalidate invalidates invalidated precedence authority force "
    "weight".split()
)
_EXFIL_GATE = frozenset(
    "reveal print show display repeat output leak dump expose echo recite spell write put copy paste give te"
    "ll send "
    "share disclose list quote reproduce summarize summarise translate return provide what which spit "
    "describe outline detail enumerate paraphrase regurgitate restate".split()
)
_PERSONA_GATE = frozenset(
    "pretend pretending imagine act acting behave behaving roleplay role play playing become simulate emulat"
    "e "
    "impersonate you be".split()
)
_OVERRIDE_NOUNS = frozenset(
    "instruction instructions directive directives directions prompt prompts preprompt programming guideline "
    "guidelines guidance policy policies training conditioning configuration constraint constraints restrict"
    "ion "
    "restrictions guardrail guardrails commands system rule rules rulebook context text content data input m"
    "essage "
    "messages everything anything whatever what setup blank clean empty factory brief briefing mandate "
    "script".split()
)
_EXFIL_NOUNS = frozenset(
    "instruction instructions prompt prompts system preamble configuration directive directives programming "
    "context "
    "first guidelines rules message messages setup told given instructed shown asked api secret private pass"
    "word text everything operate operating "
    "passwords passphrase passphrases "
    "credentials seed mnemonic mnemonics access auth session env environment".split()
)
_PERSONA_NOUNS = frozenset(
    "ai a assistant chatbot chat bot llm language model gpt persona character entity yourself oracle alter "
    "ego reviewer grader evaluator judge moderator".split()
)


def _clauses(text: str) -> list[tuple[int, int]]:
    bounds = [0]
    for m in _CLAUSE_SPLIT_RE.finditer(text):
        bounds.append(m.end())
    bounds.append(len(text))
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _spans(regex: re.Pattern[str], clause: str, offset: int) -> list[tuple[int, int]]:
    return [(offset + m.start(), offset + m.end()) for m in regex.finditer(clause)]


def _near(*groups: list[tuple[int, int]], window: int = 160) -> tuple[int, int] | None:
    """The smallest span holding one span of every group within ``window`` characters, if any."""
    best: tuple[int, int] | None = None
    for first in groups[0]:
        picked = [first]
        for g in groups[1:]:
            cand = [x for x in g if abs(x[0] - first[0]) <= window]
            if not cand:
                break
            picked.append(min(cand, key=lambda x: abs(x[0] - first[0])))
        else:
            span = (min(a for a, _ in picked), max(b for _, b in picked))
            if span[1] - span[0] <= window and (best is None or span[1] - span[0] < best[1] - best[0]):
                best = span
    return best


_HUMAN_SOURCE_RE = re.compile(
    r"\bfrom\s+(?:the\s+|our\s+|my\s+)?(?:risk|compliance|trading|execution|research|investment|operations|"
    r"ops)?\s*"
    r"(?:desk|pm|portfolio\s+manager|manager|broker|team|client|committee|analyst|cio|head\s+trader|"
    r"regulator)\b"
)


def clause_hits(text: str, words: frozenset[str]) -> list[tuple[str, int, int]]:
    """(family, start, end) of clause-level findings in the normalised ``text``."""
    gated = gates.USE_GATES
    override = not gated or not (words.isdisjoint(_CLAUSE_GATE) or words.isdisjoint(_OVERRIDE_NOUNS))
    exfil = not gated or not (words.isdisjoint(_EXFIL_GATE) or words.isdisjoint(_EXFIL_NOUNS))
    persona = not gated or not (words.isdisjoint(_PERSONA_GATE) or words.isdisjoint(_PERSONA_NOUNS))
    if not (override or exfil or persona):
        return []
    out: list[tuple[str, int, int]] = []
    for m in _RESET_RE.finditer(text):
        out.append(("ignore_instructions", m.start(), m.end()))
    # only clauses holding a verb of a family are read (the verbs are found once over the whole text)
    starts = [m.start() for m in _DISMISS_RE.finditer(text)] if override else []
    starts += [m.start() for m in _EXFIL_VERB_RE.finditer(text)] if exfil else []
    starts += [m.start() for m in _PERSONA_RE.finditer(text)] if persona else []
    if not starts:
        return out
    clauses = _clauses(text)
    keep = sorted({bisect.bisect_right([c[0] for c in clauses], x) - 1 for x in starts})
    for a, b in (clauses[i] for i in keep if i >= 0):
        clause = text[a:b]
        if _HUMAN_SOURCE_RE.search(clause):
            continue  # instructions from the desk, the PM, a client: the methodology's own subject matter
        dismiss: list[tuple[int, int]] = []
        if override:
            dismiss = [
                (a + m.start(), a + m.end())
                for m in _DISMISS_RE.finditer(clause)
                if not _DISMISS_NEG_RE.search(clause, max(0, m.start() - 30), m.start())
                or m.group(0).startswith(("do not", "don't", "dont", "never", "no longer"))
            ]
            if dismiss:
                strong_n, weak_n = _spans(_STRONG_NOUN_RE, clause, a), _spans(_WEAK_NOUN_RE, clause, a)
                strong_a, weak_a = _spans(_STRONG_ANCHOR_RE, clause, a), _spans(_WEAK_ANCHOR_RE, clause, a)
                span = _near(dismiss, strong_n, strong_a + weak_a) or _near(dismiss, weak_n, strong_a)
                if span:
                    out.append(("ignore_instructions", *span))
        if exfil:
            verbs = _spans(_EXFIL_VERB_RE, clause, a)
            if verbs:
                secret = _near(verbs, _spans(_EXFIL_SECRET_RE, clause, a), window=60)
                nouns = _spans(_EXFIL_NOUN_RE, clause, a)
                anchors = _spans(_EXFIL_ANCHOR_RE, clause, a)
                strong_nouns = [
                    x
                    for x in nouns
                    if text[x[0] : x[1]]
                    not in ("rules", "guidelines", "messages", "message", "setup", "text", "everything")
                ]
                strong_anchors = [
                    x for x in anchors if text[x[0] : x[1]] not in ("your", "first", "above", "earlier")
                ]
                told = [x for x in anchors if text[x[0] : x[1]].startswith("you ")]
                span = (
                    secret
                    or _near(verbs, strong_nouns, anchors, window=100)
                    or _near(verbs, nouns, strong_anchors, window=100)
                    or _near(
                        [
                            v
                            for v in verbs
                            if text.startswith(("tell me", "repeat", "show", "print", "list", "reveal"), v[0])
                            or (text.startswith("what", v[0]) and "?" in text[b - 1 : b + 2] and not dismiss)
                        ],
                        told,
                        window=60,
                    )
                )
                if span and not NEG_BEFORE.search(text, max(0, span[0] - 40), span[0]):
                    out.append(("prompt_exfiltration", *span))
        if persona:
            personas = _spans(_PERSONA_RE, clause, a)
            if personas:
                span = _near(
                    personas, _spans(_AI_NOUN_RE, clause, a), _spans(_UNRESTRICTED_RE, clause, a), window=140
                )
                if span:
                    out.append(("new_instructions", *span))
    return out


def may_match(words: frozenset[str]) -> bool:
    """Whether some clause detector could fire on a text with these words (its gate opens)."""
    return not (
        (words.isdisjoint(_CLAUSE_GATE) or words.isdisjoint(_OVERRIDE_NOUNS))
        and (words.isdisjoint(_EXFIL_GATE) or words.isdisjoint(_EXFIL_NOUNS))
        and (words.isdisjoint(_PERSONA_GATE) or words.isdisjoint(_PERSONA_NOUNS))
    )
