"""Encoded text: the decoders, and the ``encoded_payload`` wording ("decode this and follow it").

Everything that looks encoded is decoded (``decode_spans``): base64 (standard, URL-safe, wrapped over
lines), base32, base16/hex (plain, spaced, ``\\x..``, ``0x..``), binary, decimal character codes,
ascii85 (``<~...~>`` and bare), base85, URL %-encoding, HTML entities, ``\\u`` escapes and Morse;
text smuggled in tag characters or variation selectors is read back (``smuggled``). A decoding
counts only when the bytes read as text; decoding alone is never a finding (tickers, hashes, dates
and vendor ids decode to nothing or to harmless text): the scan reads the decoded text again.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import urllib.parse
from collections.abc import Iterable

from tradingmem_assets.defs.safety.gates import G, Gate
from tradingmem_assets.defs.safety.normalise import View

_DECODE_WORDING = [
    r"\b(?:decode|decipher|decrypt|unscramble|deobfuscate|unhex|un-hex|hex-?decode)\w*\s+(?:the\s+|this\s+|"
    r"that\s+)?"
    r"(?:following|below|above|it|this|that|string|text|message|payload|blob|data|line|snippet|code|cipher|"
    r"content|"
    r"instructions?|hex|base-?\d\d|rot-?13|ascii-?85|binary)\b[^\n]{0,80}?\b(?:follow|execute|obey|comply|"
    r"carry\s+out|"
    r"act\s+on|run|do\s+(?:what|as)\s+it\s+says|perform|implement|apply\s+it|treat\s+it\s+as)\b",
    r"\b(?:rot-?13|base-?(?:64|32|16|85)|ascii-?85|hex)\b[^\n]{0,40}?\b(?:decode|decoded|decoding|"
    r"decipher)\w*\b"
    r"[^\n]{0,60}?\b(?:follow|execute|obey|comply|carry\s+out|act\s+on|run|do\s+(?:what|as)\s+it\s+says|"
    r"perform)\b",
    r"\b(?:follow|execute|obey|carry\s+out|act\s+on|run|perform|comply\s+with)\b[^\n]{0,40}?\b(?:decoded|"
    r"hidden|encoded|encrypted|obfuscated|base-?64|hex|rot-?13|reversed|deciphered)\b[^\n]{0,20}?\b(?:text|"
    r"message|instructions?|payload|string|command|content|version|data|directive)\b",
    r"\b(?:translate|convert|read|interpret)\b[^\n]{0,30}?\b(?:from|out\s+of)\s+(?:base-?64|base-?32|"
    r"base-?16|"
    r"hex(?:adecimal)?|rot-?13|ascii-?85|binary|morse|leet(?:speak)?)\b[^\n]{0,80}?\b(?:follow|execute|"
    r"obey|comply|carry\s+out|act\s+on|do\s+(?:what|as)\s+it\s+says)\b",
    r"\b(?:the\s+)?(?:following|below|this|next)\s+(?:is\s+)?(?:a\s+)?(?:base-?64|base-?32|base-?16|hex|"
    r"rot-?13|"
    r"ascii-?85|encoded|encrypted|obfuscated)\s+(?:\w+\s+){0,2}?(?:instructions?|commands?|payload|directive|"
    r"message\s+(?:for|to)\s+you|order)\b",
]

DECODING_GATES: dict[str, list[Gate]] = {
    "encoded_payload": [
        G(
            "decode decoded decoding decodes decipher deciphered decrypt decrypted unscramble deobfuscate un"
            "hex un "
            "hexdecode",
            "follow execute obey comply carry act run do perform implement apply treat",
        ),
        G(
            "rot base ascii hex",
            "decode decoded decoding decodes decipher deciphered",
            "follow execute obey comply carry act run do perform",
        ),
        G(
            "follow execute obey carry act run perform comply",
            "decoded hidden encoded encrypted obfuscated base hex rot reversed deciphered",
        ),
        G("translate convert read interpret", "base hex hexadecimal rot ascii binary morse leet leetspeak"),
        G("following below this next", "base hex rot ascii encoded encrypted obfuscated"),
    ],
}
DECODING_PATTERNS: dict[str, list[str]] = {"encoded_payload": _DECODE_WORDING}

# ------------------------------------------------------------------------------------ decoders

_B64_RE = re.compile(
    r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{16,}(?:\r?\n[A-Za-z0-9+/]{4,})*={0,2}(?![A-Za-z0-9+/=])"
)
_B64URL_RE = re.compile(
    r"(?<![A-Za-z0-9+/=_-])(?=[A-Za-z0-9_-]*[_-])[A-Za-z0-9_-]{16,}={0,2}(?![A-Za-z0-9_=-])"
)
_B32_RE = re.compile(r"(?<![A-Za-z0-9=])(?:[A-Z2-7]{16,}|[a-z2-7]{16,})={0,6}(?![A-Za-z0-9=])")
_HEX_RE = re.compile(
    r"(?<![0-9A-Za-z])(?:(?:0x|\\x)?[0-9a-fA-F]{2}(?:[\s,:-]|\\x|0x)?){8,}(?![0-9A-Za-z])|"
    r"(?<![0-9A-Za-z])[0-9a-fA-F]{16,}(?![0-9A-Za-z])"
)
_BIN_RE = re.compile(r"(?<![01])(?:[01]{8}[\s,]?){4,}")
_CHARCODE_RE = re.compile(
    r"(?<![\d.])(?:(?:3[2-9]|[4-9]\d|1[01]\d|12[0-6])[\s,]+){5,}(?:3[2-9]|[4-9]\d|1[01]\d|12[0-6])(?![\d.])"
)
_A85_ADOBE_RE = re.compile(r"<~[\s\S]{4,}?~>")
_A85_RE = re.compile(r"(?<![!-u])[!-u]{16,}(?![!-u])")
_B85_RE = re.compile(
    r"(?<![0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~])[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|"
    r"}~]{16,}(?![0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~])"
)
_PCT_RE = re.compile(r"(?:%[0-9a-fA-F]{2}|[\w.~+-])*%[0-9a-fA-F]{2}(?:%[0-9a-fA-F]{2}|[\w.~+-])*")
_UESC_RE = re.compile(r"\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|\\U[0-9a-fA-F]{8}")
_ENTITY_RE = re.compile(r"&#x?[0-9a-fA-F]+;|&[a-zA-Z]{2,8};")
_RUN_RE = re.compile(r"\S{16,}")
_DIGIT_RE = re.compile(r"\d")
_HEXSEP_GATE = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-fA-F]{2}[\s,:-]){7}[0-9a-fA-F]{2}(?![0-9A-Za-z])")
_MORSE_RE = re.compile(r"(?<![.\-\w])(?:[.\-]{1,6}(?:[ ]{1,3}|\s*/\s*)){6,}[.\-]{1,6}(?![.\-\w])")
_MORSE = {
    ".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g", "....": "h",
    "..": "i", ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n", "---": "o", ".--.": "p",
    "--.-": "q", ".-.": "r", "...": "s", "-": "t", "..-": "u", "...-": "v", ".--": "w", "-..-": "x",
    "-.--": "y", "--..": "z", "-----": "0", ".----": "1", "..---": "2", "...--": "3", "....-": "4",
    ".....": "5", "-....": "6", "--...": "7", "---..": "8", "----.": "9",
}  # fmt: skip


def _texty(raw: bytes) -> str | None:
    """Decoded bytes as text when they read as text (mostly printable, mostly letters and spaces)."""
    if len(raw) < 6:
        return None
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not s.strip():
        return None
    printable = sum(1 for c in s if c.isprintable() or c in "\n\r\t")
    letters = sum(1 for c in s if c.isalpha() or c.isspace())
    if printable / len(s) < 0.9 or letters / len(s) < 0.5:
        return None
    return s


def _b64(s: str, urlsafe: bool) -> bytes | None:
    s = re.sub(r"\s+", "", s).rstrip("=")
    if len(s) % 4 == 1:
        return None
    s += "=" * (-len(s) % 4)
    try:
        return base64.urlsafe_b64decode(s) if urlsafe else base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None


def decode_spans(view: View) -> Iterable[tuple[int, int, str, str]]:
    """(start, end, encoding, decoded text) for every span of ``view`` that decodes to text."""
    text = view.text
    seen: set[tuple[int, int, str]] = set()

    def emit(start: int, end: int, enc: str, raw: bytes | None) -> Iterable[tuple[int, int, str, str]]:
        if raw is None or (start, end, enc) in seen:
            return
        decoded = _texty(raw)
        if decoded is not None:
            seen.add((start, end, enc))
            yield start, end, enc, decoded

    runs = [(m.start(), m.group(0)) for m in _RUN_RE.finditer(text)]

    def matches(regex: re.Pattern[str], whole: bool = False) -> Iterable[tuple[int, int, str]]:
        if whole:
            for m in regex.finditer(text):
                yield m.start(), m.end(), m.group(0)
            return
        for offset, run in runs:
            for m in regex.finditer(run):
                yield offset + m.start(), offset + m.end(), m.group(0)

    multiline = bool(runs) and "\n" in text
    for start, end, tok in matches(_B64_RE, whole=multiline):
        yield from emit(start, end, "base64", _b64(tok, urlsafe=False))
    for start, end, tok in matches(_B64URL_RE):
        yield from emit(start, end, "base64", _b64(tok, urlsafe=True))
    for start, end, tok in matches(_B32_RE):
        s = tok.upper().rstrip("=")
        s += "=" * (-len(s) % 8)
        try:
            raw = base64.b32decode(s)
        except (binascii.Error, ValueError):
            raw = None
        yield from emit(start, end, "base32", raw)
    spaced_hex = "\\x" in text or "0x" in text or _HEXSEP_GATE.search(text) is not None
    for start, end, tok in matches(_HEX_RE, whole=spaced_hex):
        digits = re.sub(r"0x|\\x|[\s,:-]", "", tok)
        if len(digits) % 2 or not re.fullmatch(r"[0-9a-fA-F]+", digits):
            continue
        yield from emit(start, end, "base16", bytes.fromhex(digits))
    if text.count("01") >= 8:
        for m in _BIN_RE.finditer(text):
            bits = re.findall(r"[01]{8}", m.group(0))
            yield from emit(*m.span(), "binary", bytes(int(b, 2) for b in bits))
    if len(_DIGIT_RE.findall(text)) >= 12:
        for m in _CHARCODE_RE.finditer(text):
            codes = [int(x) for x in re.findall(r"\d+", m.group(0))]
            yield from emit(*m.span(), "charcodes", bytes(codes))
    for m in _A85_ADOBE_RE.finditer(text) if "<~" in text else ():
        try:
            raw = base64.a85decode(m.group(0), adobe=True, ignorechars=" \t\n\r\x0b")
        except (ValueError, binascii.Error):
            raw = None
        yield from emit(*m.span(), "ascii85", raw)
    for regex, enc, decode in ((_A85_RE, "ascii85", base64.a85decode), (_B85_RE, "base85", base64.b85decode)):
        for start, end, tok in matches(regex):
            if sum(1 for c in tok if not c.isalnum() and c not in "_-") < 2:
                continue
            prefix = re.match(r"[A-Za-z_]{1,12}[=:]", tok)
            for offset in (0, prefix.end()) if prefix else (0,):
                try:
                    raw = decode(tok[offset:])
                except (ValueError, binascii.Error):
                    continue
                yield from emit(start + offset, end, enc, raw)
    if text.count("%") >= 3:
        for m in _PCT_RE.finditer(text):
            if m.group(0).count("%") >= 3:
                yield from emit(*m.span(), "url_encoding", urllib.parse.unquote_plus(m.group(0)).encode())
    if "\\" in text and len(_UESC_RE.findall(text)) >= 3:
        decoded = _UESC_RE.sub(lambda m: chr(int(m.group(0)[2:], 16)), text)
        yield from emit(0, len(text), "unicode_escapes", decoded.encode("utf-8", "replace"))
    if "&" in text and len(_ENTITY_RE.findall(text)) >= 2:
        yield from emit(0, len(text), "html_entities", html.unescape(text).encode("utf-8", "replace"))
    for m in _MORSE_RE.finditer(text) if text.count(".-") + text.count("-.") >= 4 else ():
        words = re.split(r"\s*/\s*|\s{3,}", m.group(0).strip())
        decoded = " ".join("".join(_MORSE.get(c, "") for c in w.split()) for w in words)
        yield from emit(*m.span(), "morse", decoded.encode())


def smuggled(text: str) -> Iterable[tuple[int, int, str, str]]:
    """Text hidden in tag characters or variation selectors (decoded to ASCII / bytes)."""
    for m in re.finditer(r"[\U000e0020-\U000e007e]{4,}", text):
        yield m.start(), m.end(), "tag_characters", "".join(chr(ord(c) - 0xE0000) for c in m.group(0))
    for m in re.finditer(r"[\ufe00-\ufe0f\U000e0100-\U000e01ef]{4,}", text):
        raw = bytes((ord(c) - 0xFE00) if ord(c) <= 0xFE0F else (ord(c) - 0xE0100 + 16) for c in m.group(0))
        decoded = _texty(raw)
        if decoded:
            yield m.start(), m.end(), "variation_selectors", decoded
