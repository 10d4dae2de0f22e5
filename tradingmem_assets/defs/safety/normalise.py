"""Normalisation: the forms of a text the families are matched on, and what hides in it.

Character by character, so every finding maps back to a span of the original text: NFKC
(full-width, mathematical and circled letters fold to ASCII), invisible characters dropped (blank
fillers become spaces), lower case, diacritics stripped for Latin/Greek/Cyrillic, typographic
quotes, dashes and brackets folded, and confusables (Cyrillic, Greek, Armenian, Cherokee, Lisu,
Latin small capitals, dotless i, ...) folded to the Latin letter they imitate.

Invisible characters are the ``hidden_unicode`` finding: Unicode format characters (zero-width
space/joiners, word joiner, BOM, soft hyphen, invisible operators), bidi embeddings, overrides,
isolates and marks, tag characters, variation selectors and blank fillers (Hangul fillers, braille
blank, Mongolian vowel separator); ordinary emoji sequences are exempt (a ZWJ between pictographs,
VS15/VS16 after a symbol or keycap, the tag sequence of a subdivision flag). A word that mixes Latin
letters with letters of another script (``Ignоre`` with a Cyrillic ``о``), or an all-look-alike word
of another script inside Latin text, is the ``homoglyph`` finding.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

# look-alike letters of other scripts (and Latin small capitals etc.) -> the Latin letter they imitate
_CONFUSABLES: dict[str, str] = {}
for _src, _dst in (
    # Cyrillic
    ("аеорсухіјѕԁԛԝһӏүєѵɡ", "aeopcyxijsdqwhlyevg"),
    ("ԍ", "g"),
    ("ѡ", "w"),
    ("ь", "b"),
    ("в", "b"),
    ("к", "k"),
    ("м", "m"),
    ("н", "h"),
    ("т", "t"),
    ("ё", "e"),
    ("ї", "i"),
    ("ԃ", "d"),
    # Greek
    ("αβεικνορτυχγωϲϳ", "abeikvoptuxywcj"),
    # Armenian
    ("օսոցհզ", "ounghq"),
    # Cherokee (lower-cased forms are the small letters; keep the capitals too)
    ("ꭺᏼꮯꭼꮐꮋꭵꮶꮮꮇꭲꮪꮩꮃꮓꭱ", "abcegHikLmtsvwzr"),
    ("ᎪᏴᏟᎬᏀᎻᎥᏦᏞᎷᎢᏚᏙᎳᏃᎡ", "abcegHikLmtsvwzr"),
    # Lisu
    ("ꓮꓐꓚꓓꓰꓝꓖꓧꓲꓙꓗꓡꓟꓠꓳꓑꓣꓢꓔꓴꓦꓪꓫꓬꓜ", "abcdefghijklmnoprstuvwxyz"),
    # Latin small capitals and other look-alikes
    ("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘǫʀꜱᴛᴜᴠᴡʏᴢ", "abcdefghijklmnopqrstuvwyz"),
    ("ıȷɑɩɪʋʏƚƖǀ", "ijaiivylli"),
    ("ꞵ", "b"),
):
    for _a, _b in zip(_src, _dst, strict=True):
        _CONFUSABLES[_a] = _b.lower()
_PUNCT = str.maketrans(
    {
        "‘": "'",
        "’": "'",
        "‚": "'",
        "‛": "'",
        "′": "'",
        "ʼ": "'",
        "“": '"',
        "”": '"',
        "„": '"',
        "‟": '"',
        "″": '"',
        "«": '"',
        "»": '"',
        "‐": "-",
        "‑": "-",
        "‒": "-",
        "–": "-",
        "—": "-",
        "―": "-",
        "−": "-",
        "﹣": "-",
        "‹": "<",
        "›": ">",
        "❮": "<",
        "❯": ">",
        "˂": "<",
        "˃": ">",
        "〈": "<",
        "〉": ">",
        "⟨": "<",
        "⟩": ">",
        "《": "<",
        "》": ">",
        "【": "[",
        "】": "]",
        "〔": "[",
        "〕": "]",
        "⟦": "[",
        "⟧": "]",
        "ǀ": "|",
        "∣": "|",
        "꞉": ":",
        "˸": ":",
        "⁄": "/",
        "∕": "/",
        "․": ".",
        "｡": ".",
        "։": ":",
    }
)
_BLANK_FILLERS = frozenset([0x115F, 0x1160, 0x2800, 0x3164, 0xFFA0, 0x180E])
_INVISIBLE_EXTRA = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180E, 0x180F, 0x2800, 0x3164, 0xFFA0]
)


def is_invisible(ch: str) -> bool:
    cp = ord(ch)
    return (
        unicodedata.category(ch) == "Cf"
        or cp in _INVISIBLE_EXTRA
        or 0xFE00 <= cp <= 0xFE0F
        or 0xE0100 <= cp <= 0xE01EF
    )


def _is_pictograph(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2600 <= cp <= 0x27BF
        or 0x2190 <= cp <= 0x21FF
        or 0x2B00 <= cp <= 0x2BFF
        or unicodedata.category(ch) == "So"
    )


def _emoji_exempt(text: str, i: int) -> bool:
    """Whether the invisible character at ``i`` is part of an ordinary emoji sequence."""
    ch = text[i]
    cp = ord(ch)
    prev = text[i - 1] if i > 0 else ""
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if cp == 0x200D:  # ZWJ between pictographs (family, profession emoji)
        return (
            bool(prev)
            and bool(nxt)
            and (_is_pictograph(prev) or ord(prev) in (0xFE0F,))
            and _is_pictograph(nxt)
        )
    if cp in (0xFE0E, 0xFE0F):  # text/emoji presentation after a symbol or a keycap base
        return bool(prev) and (_is_pictograph(prev) or prev in "0123456789#*")
    if 0xE0020 <= cp <= 0xE007F:  # subdivision flags: black flag + a-z tags + cancel tag
        j = i
        while j > 0 and 0xE0061 <= ord(text[j - 1]) <= 0xE007A:
            j -= 1
        k = i
        while k < len(text) and 0xE0061 <= ord(text[k]) <= 0xE007A:
            k += 1
        return (
            j > 0
            and ord(text[j - 1]) == 0x1F3F4
            and k < len(text)
            and ord(text[k]) == 0xE007F
            and k - j <= 7
            and (0xE0061 <= cp <= 0xE007A or cp == 0xE007F)
        )
    return False


@lru_cache(maxsize=65536)
def fold_char(ch: str) -> tuple[str, str, str]:
    """(visible, plain, folded) forms of one visible character: NFKC; NFKC + lower case without
    diacritics; the same with confusables folded to Latin."""
    cp = ord(ch)
    if 0x249C <= cp <= 0x24B5:  # parenthesized small letters: NFKC gives "(a)", read the letter
        ch = chr(0x61 + cp - 0x249C)
    visible = unicodedata.normalize("NFKC", ch).translate(_PUNCT)
    low = visible.lower()
    decomposed = unicodedata.normalize("NFD", low)
    if decomposed and ord(decomposed[0]) < 0x0530:  # Latin, Greek, Cyrillic: drop diacritics
        plain = "".join(c for c in decomposed if unicodedata.category(c) not in ("Mn", "Me"))
    else:  # other scripts keep their marks (Japanese dakuten, Indic vowel signs)
        plain = low
    plain = unicodedata.normalize("NFC", plain)
    folded = "".join(_CONFUSABLES.get(c, c) for c in plain)
    if len(folded) != len(plain):  # keep plain and folded aligned char for char
        folded = plain
    return visible, plain, folded


@dataclass(frozen=True)
class View:
    text: str
    index: tuple[int, ...] | None  # view position -> original position (None: identity)

    def span(self, start: int, end: int) -> tuple[int, int]:
        if self.index is None:
            return start, end
        if end <= start:
            return self.index[start] if start < len(self.index) else len(self.index), self.index[start]
        positions = self.index[start:end]
        return min(positions), max(positions) + 1


@dataclass(frozen=True)
class Normalised:
    visible: View  # NFKC, invisible removed, case kept (for decoders)
    plain: View  # + lower case, no diacritics (for other scripts)
    folded: View  # + confusables folded (for English intent)
    hidden: tuple[tuple[int, int], ...]  # spans of invisible characters in the original


def normalise_views(text: str) -> Normalised:
    if text.isascii():
        low = text.lower()
        same = View(text, None)
        return Normalised(same, View(low, None), View(low, None), ())
    vis: list[str] = []
    vis_idx: list[int] = []
    plain: list[str] = []
    folded: list[str] = []
    idx: list[int] = []
    hidden: list[tuple[int, int]] = []
    for i, ch in enumerate(text):
        if is_invisible(ch):
            if not _emoji_exempt(text, i):
                if hidden and hidden[-1][1] == i:
                    hidden[-1] = (hidden[-1][0], i + 1)
                else:
                    hidden.append((i, i + 1))
            if ord(ch) in _BLANK_FILLERS:  # rendered as a blank: it separates words
                vis.append(" ")
                vis_idx.append(i)
                plain.append(" ")
                folded.append(" ")
                idx.append(i)
            continue
        if ch.isascii():
            v, p, f = ch, ch.lower(), ch.lower()
        else:
            v, p, f = fold_char(ch)
        for c in v:
            vis.append(c)
            vis_idx.append(i)
        for cp_, cf in zip(p, f, strict=True):
            plain.append(cp_)
            folded.append(cf)
            idx.append(i)
    index = tuple(idx)
    return Normalised(
        View("".join(vis), tuple(vis_idx)),
        View("".join(plain), index),
        View("".join(folded), index),
        tuple(hidden),
    )


def normalise(text: str) -> str:
    """The text intent families are matched on: NFKC, invisible characters removed, lower case,
    diacritics stripped, confusables folded to Latin."""
    return normalise_views(text).folded.text


# ------------------------------------------------------------------------------------ homoglyphs

_WORD_RE = re.compile(r"[^\W\d_]+")
_ENCLOSED_RUN_RE = re.compile("[\u249c-\u24e9\U0001f130-\U0001f189]{2,}")  # (a) Ⓐ ⓐ 🄰 letters


def _suspicious_letter(ch: str) -> bool:
    if ch.isascii() or ch in "ıſ":
        return False
    nfkc = unicodedata.normalize("NFKC", ch)
    if nfkc == ch and unicodedata.normalize("NFD", ch)[0].isascii():
        return False  # an accented Latin letter
    _v, _p, folded = fold_char(ch)
    return bool(folded) and folded.isascii() and folded.isalpha()


_HOMOGLYPH_EXEMPT = frozenset("µμ")  # the micro sign in units (10µs)


def _is_plain_latin(ch: str) -> bool:
    """An ASCII letter or an accented Latin letter (é, ü, ß), not a look-alike."""
    if ch.isascii():
        return ch.isalpha()
    return (
        ch.isalpha()
        and not _suspicious_letter(ch)
        and unicodedata.name(ch, "").startswith("LATIN")
        and unicodedata.normalize("NFKC", ch) == ch
    )


def homoglyph_spans(text: str) -> list[tuple[int, int]]:
    """Spans of words mixing Latin letters with look-alikes from other scripts or compatibility
    forms, and of all-look-alike words of other scripts inside mostly Latin text."""
    if text.isascii():
        return []
    visible_chars = [(i, c) for i, c in enumerate(text) if not is_invisible(c)]
    joined = "".join(c for _, c in visible_chars)
    letters = [c for c in joined if c.isalpha()]
    latin_share = sum(1 for c in letters if c.isascii()) / max(1, len(letters))
    has_plain = re.search(r"[A-Za-z]{2,}", joined) is not None
    spans = []
    for m in _WORD_RE.finditer(joined):
        word = m.group(0)
        latin = [c for c in word if _is_plain_latin(c)]
        suspicious = [c for c in word if _suspicious_letter(c)]
        foreign = [c for c in word if c.isalpha() and not _is_plain_latin(c) and c not in _HOMOGLYPH_EXEMPT]
        if not (suspicious or foreign):
            continue
        other_script = any(
            not unicodedata.name(c, "").startswith(("LATIN", "FULLWIDTH", "MATHEMATICAL")) for c in suspicious
        )
        mixed = bool(latin) and bool(suspicious or foreign)
        disguised = len(word) >= 3 and len(suspicious) == len(word) and other_script and latin_share >= 0.6
        # a word in mathematical letters (bold, italic, script) among plain words: styled to slip past
        styled = (
            len(word) >= 3
            and has_plain
            and all(unicodedata.name(c, "").startswith("MATHEMATICAL") for c in word)
        )
        if mixed or disguised or styled:
            spans.append((visible_chars[m.start()][0], visible_chars[m.end() - 1][0] + 1))
    for m in _ENCLOSED_RUN_RE.finditer(joined):  # letters in circles or parentheses spell a word
        spans.append((visible_chars[m.start()][0], visible_chars[m.end() - 1][0] + 1))
    return sorted(spans)
