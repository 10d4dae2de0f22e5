"""Intent frames: families of intent read as word classes in one clause, not as phrases.

A clause (ends at ``. ; ! ?``, a newline or ``: ``) is read as tokens, and each token is looked up
in small word classes. A frame fires when its classes meet in the right order and distance:

- **override** (``ignore_instructions``): a verb of dismissal (``DISMISS``: ignore, disregard,
  forget, scrap, disobey, throw out, set aside, pay no attention to, never mind; or a negated verb
  of compliance: do not / stop / no longer + follow, obey, heed, apply, honour) followed by an
  object of guidance, with an anchor that points at the model or the conversation. Objects come in
  tiers: ``GUIDE`` words only mean instructions to a model (instructions, directives, prompt,
  guidelines, programming, guardrails); ``RULE`` words are guidance in general (rules, guidance,
  constraints, checklist, criteria, context) and need a conversational anchor next to them ("the
  above guidance", "your earlier checklist", "the rules from up there"); ``LOOSE`` words (orders,
  data, text, checks, everything) need a strong anchor (you, your, this dataset, came before).
  A positional word counts as an anchor only as an adjective or at the clause's end ("the rules
  above"), not as a preposition ("above the VWAP", "before the open"); an object right after a
  trading modifier ("the entry rules", "the risk limits") is the methodology's own subject;
- **voided** (``ignore_instructions``): an anchored object of guidance followed by a predicate
  that voids it (``VOID``: suspended, revoked, lifted, null; no longer applies / binds; does not
  apply; never existed);
- **interrupt** (``ignore_instructions``): an exclamatory interruption standing alone ("HALT!!!",
  "STOP EVERYTHING!!! NOW!!!"), or "drop everything you are doing";
- **foreign override** (``ignore_instructions``): a dismissal verb of another Latin-script language
  (Dutch, Polish, Czech, Scandinavian, Romanian, Indonesian, Turkish, ...) before a word of the
  ``instr*`` / ``anweis*`` / ``pokyn*`` family.

In decoded text (``relaxed``: a payload someone took the trouble to encode) a dismissal verb and any
object of guidance are enough. Negated dismissal ("do not ignore the system instructions") and
instructions attributed to a human source ("from the desk") are clean, as in ``clauses``.
"""

from __future__ import annotations

import bisect
import re

_CLAUSE_RE = re.compile(r"[.;!?\n]+(?=\s|$)|[;!?\n]|:\s")
_TOKEN_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")
_HUMAN_SOURCE_RE = re.compile(
    r"\b(?:from|by|of)\s+(?:the\s+|our\s+|my\s+)?(?:risk|compliance|trading|execution|research|investment|"
    r"operations|ops)?\s*(?:desk|pm|portfolio\s+manager|manager|broker|team|client|committee|analyst|cio|"
    r"head\s+trader|regulator|exchange|fund)\b"
)


def _w(words: str) -> frozenset[str]:
    return frozenset(words.split())


# verbs of dismissal; CORE ones carry the intent alone, SOFT ones are also trading verbs (cancel, drop)
CORE = _w(
    "ignore ignoring disregard disregarding forget forgetting overlook overlooking "
    "override overriding overrule bypass disobey disobeying defy circumvent neglect dismiss discard abandon "
    "unlearn nevermind scrap ditch nullify rescind revoke void invalidate supersede skip"
)
SOFT = _w("drop cancel toss clear reset erase wipe purge suspend lift remove delete scratch")
_PHRASAL = {  # first word -> (following words, any of which completes a dismissal)
    "set": _w("aside"),
    "put": _w("aside"),
    "throw": _w("out away"),
    "toss": _w("out away"),
    "cast": _w("aside off"),
    "get": _w("rid"),
    "leave": _w("behind"),
    "never": _w("mind"),
    "pay": _w("no"),
    "take": _w("no"),
    "move": _w("past"),
}
_NEGATOR = _w("not don't dont never stop cease quit longer")
_COMPLY = _w(
    "follow following obey obeying heed heeding apply applying respect respecting honor honour observe "
    "adhere adhering comply complying listen listening abide abiding use using honoring honouring observing "
    "respecting"
)
# objects of guidance, in tiers
GUIDE = _w(
    "instruction instructions directive directives prompt prompts preprompt programming guideline "
    "guidelines guardrail guardrails safeguards conditioning alignment briefing"
)
RULE = _w(
    "rule rules rulebook guidance constraint constraints restriction restrictions limitation limitations "
    "policy policies checklist criteria manual script mandate protocol rubric commands command "
    "configuration task assignment training directions checks check"
)
CONV = _w("context conversation chat messages sentence sentences paragraph paragraphs passage")
LOOSE = _w(
    "orders order data dataset text input content settings history lines words everything "
    "anything whatever stuff"
)
_EVERYTHING = _w("everything anything whatever all")
# anchors: STRONG point at the model or the conversation; POSITIONAL ones only as adjectives
STRONG = _w(
    "you your yours yourself you've you're system developer developers assistant reviewer evaluator "
    "grader moderator review session conversation chat standing"
)
POSITIONAL = _w(
    "previous previously prior preceding above earlier before former original initial given existing "
    "remaining rest remainder following below old aforementioned foregoing preset predefined"
)
_THIS_NOUNS = _w(
    "message prompt document dataset data text input line point sentence submission proposal review "
    "conversation chat session page file entry"
)
_DEICTIC = {("up", "there"), ("so", "far"), ("until", "now"), ("up", "here"), ("came", "before")}
# trading words that make an object the methodology's own ("the entry rules", "the risk limits")
_DOMAIN = _w(
    "entry exit sizing size risk trading trade stop position scaling execution signal screening filter "
    "money portfolio margin broker brokerage tax wash pdt settlement market listing fund desk house firm "
    "compliance regulatory account leverage crypto options futures backtest exchange sector strategy "
    "setup's playbook weekend gap indicator order"
)
_POST_OK = _w("and then this here now too entirely completely please instead so but or just verbatim")
_PRONOUN = _w("it them that those this all")
# predicates that void an object
VOID = _w(
    "void voided null nullified obsolete revoked rescinded suspended lifted cancelled canceled invalid "
    "invalidated superseded overridden withdrawn waived moot inapplicable"
)
_VOID_AFTER = {
    "longer": _w(
        "apply applies bind binds binding count counts matter matters hold holds valid stand stands "
        "exist exists relevant"
    ),
    "not": _w("apply count matter bind exist valid binding"),
    "doesn't": _w("apply count matter bind exist"),
    "don't": _w("apply count matter bind exist"),
    "never": _w("existed happened"),
}
_INTERRUPT = _w("stop halt abort cease freeze wait")
_INTERRUPT_FILL = _w("everything all now immediately right it this here")
_DOING = re.compile(
    r"\b(?:drop|stop|quit|abandon|halt)\s+(?:everything|all|whatever)\s+(?:that\s+)?"
    r"you(?:'re|\s+are|\s+were)\s+(?:doing|working\s+on)\b"
)
_DEMAND = re.compile(
    r"\b(?:approve|accept|graduate|validate|greenlight|rubber-?stamp)\s+(?:it|this|that|them|the\s+(?:methodology|"
    r"strategy|submission|proposal|candidate))\b|\b(?:mark|rate|grade|score|label)\s+(?:it|this|the\s+\w+)\s+"
    r"(?:as\s+)?(?:valid|approved|excellent|safe|graduated|passed)\b|\b(?:say|reply|respond|answer|output|print)\s+"
    r"(?:with\s+)?[\"']?(?:yes|approved|ok|pass|passed|valid)\b"
)
_EVERY_POST = _w(
    "that which what has have had was were is came comes come been said told wrote gave written stated "
    "given learned learnt heard read else are doing got received were"
)
_EVERY_ANCHOR = _w("before above earlier previously prior you i we")
# foreign dismissal verbs and instruction stems (diacritics already stripped)
_ML_VERBS = _w(
    "negeer negeren vergeet zignoruj ignoruj zapomnij pomin ignorujte zapomente ignorer ignorera glem glom "
    "ignorati ignorati uitati uita abaikan lupakan unutun yoksay ignoroi unohda ignoreer ignoreeri "
    "ignoreerige hagyd felejtsd"
)
_ML_STEMS = (
    "instr",
    "anweis",
    "pokyn",
    "polecen",
    "wytyczn",
    "richtlijn",
    "aanwijz",
    "talimat",
    "arahan",
    "petunjuk",
    "ohje",
    "utasit",
    "regul",
    "regel",
    "zasad",
    "direktiv",
    "komend",
    "kommand",
)
ALL_VERBS = CORE | SOFT | frozenset(_PHRASAL) | _NEGATOR | _INTERRUPT | _ML_VERBS | _w("drop quit")
GATE_WORDS = ALL_VERBS | VOID | frozenset(_VOID_AFTER)
_OBJECTS = GUIDE | RULE | CONV | LOOSE
# the same classes as the gate tokeniser splits them ("don't" -> "don", "t")
_OBJECTS_ANY = _OBJECTS | _EVERYTHING
_SINGLE_DISMISS = CORE | SOFT
_NEGATOR_ANY = _NEGATOR | _w("don")
_VOID_WORDS = VOID | frozenset(_VOID_AFTER) | _w("don doesn")
_DOING_VERBS = _w("drop quit abandon")
_INTERRUPT_ANY = _INTERRUPT | _INTERRUPT_FILL
_GATE_RE = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, GATE_WORDS), key=len, reverse=True)) + r")\b")


def _clauses(text: str) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """The clauses holding a gate word, with their token spans; a one-word clause is joined with its
    one-word neighbours ("IGNORE. ALL. PREVIOUS. INSTRUCTIONS.")."""
    hits = [m.start() for m in _GATE_RE.finditer(text)]
    if not hits:
        return []
    bounds = [0, *(m.end() for m in _CLAUSE_RE.finditer(text)), len(text)]
    pairs = [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    starts = [a for a, _ in pairs]
    out: list[tuple[int, int, list[tuple[int, int]]]] = []
    last = -1
    for i in sorted({bisect.bisect_right(starts, x) - 1 for x in hits}):
        if i <= last:
            continue
        lo = hi = i
        spans = [m.span() for m in _TOKEN_RE.finditer(text, *pairs[i])]
        if len(spans) == 1:
            one = lambda j: len(_TOKEN_RE.findall(text, *pairs[j])) == 1  # noqa: E731
            while lo > last + 1 and one(lo - 1):
                lo -= 1
            while hi + 1 < len(pairs) and one(hi + 1):
                hi += 1
            spans = [m.span() for m in _TOKEN_RE.finditer(text, pairs[lo][0], pairs[hi][1])]
        out.append((pairs[lo][0], pairs[hi][1], spans))
        last = hi
    return out


def _dismissals(toks: list[str]) -> list[tuple[int, int, bool]]:
    """(first, last, core) token indices of each dismissal verb (phrasal and negated forms included)."""
    out = []
    for i, t in enumerate(toks):
        if i and toks[i - 1] in ("not", "don't", "dont", "never") and (t in CORE or t in SOFT):
            continue  # "do not ignore": the opposite of a dismissal
        if t in CORE or t in SOFT:
            out.append((i, i, t in CORE))
        elif t in _PHRASAL and any(x in _PHRASAL[t] for x in toks[i + 1 : i + 5]):
            out.append((i, i + 1, True))
        elif t in _NEGATOR:
            if t == "longer" and (not i or toks[i - 1] != "no"):
                continue
            nxt = [x for x in toks[i + 1 : i + 3] if x not in ("to", "any", "even", "ever", "be")]
            if nxt and nxt[0] in _COMPLY:
                out.append((i, i + 1, True))
    return out


def _anchor(toks: list[str], lo: int, hi: int, obj: int) -> tuple[bool, bool]:
    """(strong, positional) anchors among tokens lo..hi around the object at ``obj``."""
    strong = positional = False
    for k in range(max(0, lo), min(len(toks), hi + 1)):
        t = toks[k]
        nxt = toks[k + 1] if k + 1 < len(toks) else ""
        if t in STRONG or (t == "this" and nxt in _THIS_NOUNS) or (t, nxt) in _DEICTIC:
            strong = True
        elif t in POSITIONAL:
            before_obj = k < obj and obj - k <= 3
            if before_obj or (k > obj and (k + 1 == len(toks) or nxt in _POST_OK)):
                positional = True
    return strong, positional


def _tier(t: str) -> str:
    if t in GUIDE:
        return "guide"
    if t in RULE or t in CONV:
        return "conv" if t in CONV else "rule"
    return "loose" if t in LOOSE else ""


def _override(toks: list[str], relaxed: bool) -> tuple[int, int] | None:
    for first, last, core in _dismissals(toks):
        if last + 1 < len(toks) and toks[last + 1] in _PRONOUN and first:
            # left-dislocated: "whatever you were asked to check, skip it"
            for j in range(first - 1, max(-1, first - 10), -1):
                if _tier(toks[j]) or toks[j] in _EVERYTHING:
                    if _anchor(toks, first - 10, first - 1, j)[0]:
                        return j, last + 1
                    break
        for j in range(last + 1, min(len(toks), last + 9)):
            t = toks[j]
            if toks[j - 1] in _DOMAIN or (j + 1 < len(toks) and toks[j + 1] in _OBJECTS | {"book"}):
                continue  # a trading object ("the entry rules"), or a modifier of the next noun
            if t in _EVERYTHING and j - last <= 3:
                post = toks[j + 1 : j + 6]
                fill = [x for x in post if x in _EVERY_POST or x in _EVERY_ANCHOR]
                if post and post[0] in _EVERY_POST | _EVERY_ANCHOR and any(x in _EVERY_ANCHOR for x in fill):
                    if not (post[:3] == ["you", "know", "about"]):
                        return first, j + len(fill)
                continue
            tier = _tier(t)
            if not tier:
                continue
            if relaxed and tier != "loose":
                return first, j
            strong, positional = _anchor(toks, first + 1, j + 8, j)
            if (tier == "guide" and (strong or positional or toks[j - 1] in ("all", "any", "every"))) or (
                tier in ("rule", "conv") and (strong or (core and positional)) or (tier == "loose" and strong)
            ):
                return first, j
    return None


def _voided(toks: list[str]) -> tuple[int, int] | None:
    for j, t in enumerate(toks):
        tier = _tier(t)
        if not tier or (j and toks[j - 1] in _DOMAIN) or (j + 1 < len(toks) and toks[j + 1] in _OBJECTS):
            continue
        for k in range(j + 1, min(len(toks), j + 10)):
            p = toks[k]
            nxt = toks[k + 1] if k + 1 < len(toks) else ""
            if p in VOID or (p in _VOID_AFTER and nxt in _VOID_AFTER[p]):
                strong, positional = _anchor(toks, j - 4, k + 3, j)
                if strong or (positional and tier in ("guide", "conv")):
                    return j, k + (p not in VOID)
                break
    return None


def _foreign(toks: list[str]) -> tuple[int, int] | None:
    for i, t in enumerate(toks):
        if t in _ML_VERBS:
            for j in range(i + 1, min(len(toks), i + 6)):
                if toks[j].startswith(_ML_STEMS):
                    return i, j
    return None


def frame_hits(text: str, words: frozenset[str], relaxed: bool = False) -> list[tuple[str, int, int]]:
    """(family, start, end) of the frames found in the normalised ``text`` (``words``: its words, as
    ``gates.words_of`` splits them). Each frame first checks that its word classes are all present."""
    objects = not words.isdisjoint(_OBJECTS_ANY)
    override = objects and (
        not words.isdisjoint(_SINGLE_DISMISS)
        or any(first in words and not words.isdisjoint(rest) for first, rest in _PHRASAL.items())
        or not (words.isdisjoint(_NEGATOR_ANY) or words.isdisjoint(_COMPLY))
    )
    voided = objects and not words.isdisjoint(_VOID_WORDS)
    interrupt = "!" in text and not words.isdisjoint(_INTERRUPT)
    foreign = not words.isdisjoint(_ML_VERBS)
    doing = ("doing" in words or "working" in words) and not words.isdisjoint(_INTERRUPT | _DOING_VERBS)
    if not (override or voided or interrupt or foreign or doing):
        return []
    out: list[tuple[str, int, int]] = []
    if doing:
        out.extend(("ignore_instructions", m.start(), m.end()) for m in _DOING.finditer(text))
    demand = override and _DEMAND.search(text) is not None  # an approval demanded too: no anchor needed
    finders = [
        f
        for f, on in (
            (lambda x: _override(x, relaxed or demand), override),
            (_voided, voided),
            (_foreign, foreign),
        )
        if on
    ]
    for a, b, spans in _clauses(text):
        toks = [text[s:e] for s, e in spans]
        clause = text[a:b].rstrip()
        bang = clause.endswith("!!") or (clause.endswith("!") and len(toks) > 1)
        if interrupt and bang and toks[0] in _INTERRUPT and _INTERRUPT_ANY.issuperset(toks):
            out.append(("ignore_instructions", spans[0][0], spans[-1][1]))
            continue
        if not finders or _HUMAN_SOURCE_RE.search(clause):
            continue
        for find in finders:
            hit = find(toks)
            if hit:
                out.append(("ignore_instructions", spans[hit[0]][0], spans[hit[1]][1]))
                break
    return out
