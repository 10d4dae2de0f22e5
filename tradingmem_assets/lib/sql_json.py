"""Canonical JSON written by DuckDB SQL (no Dagster here): SQL expressions that encode values.

The canonical form is what a hash can cover: compact, keys in the order given (callers sort
them), dates ISO, timestamps ``YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]+00:00``, floats in shortest
round-trip form (plain from 1e-5 to 1e16, else ``1e-7`` / ``1e+16``; NaN and infinities null),
control characters escaped with lower-case hex (``lower_hex_escapes``, applied to the finished text).

A document is assembled as a list of parts (``json_object``): constant ``Text`` and SQL expressions
that give JSON text; ``json_document`` turns it into one variadic ``concat``.
"""

from __future__ import annotations

import json


def sql_literal(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def sql_identifier(name: str) -> str:
    """A quoted SQL identifier (a column name as given, whatever its characters or case)."""
    return '"' + name.replace('"', '""') + '"'


def json_number(expr: str) -> str:
    """A DOUBLE as canonical JSON: shortest round-trip digits, plain between 1e-5 and 1e16."""
    return (
        f"CASE WHEN {expr} IS NULL OR isnan({expr}) OR isinf({expr}) THEN 'null' "
        f"WHEN {expr} = 0 OR (abs({expr}) >= 1e-5 AND abs({expr}) < 1e16) THEN to_json({expr})::VARCHAR "
        f"ELSE replace({expr}::VARCHAR, 'e-0', 'e-') END"
    )


def json_timestamp(expr: str) -> str:
    """A UTC timestamp as canonical JSON: ISO-8601, fraction only when set (3 or 6 digits)."""
    micros = f"(microsecond({expr}) % 1000000)"
    return (
        f"coalesce('\"' || strftime({expr}, '%Y-%m-%dT%H:%M:%S') || CASE WHEN {micros} = 0 THEN '' "
        f"WHEN {micros} % 1000 = 0 THEN '.' || lpad(({micros} // 1000)::VARCHAR, 3, '0') "
        f"ELSE '.' || lpad({micros}::VARCHAR, 6, '0') END || '+00:00\"', 'null')"
    )


def json_value(expr: str) -> str:
    """A string, date, integer or list as JSON (DuckDB's encoding; null as ``null``)."""
    return f"coalesce(to_json({expr})::VARCHAR, 'null')"


class Text(str):
    """Constant JSON text inside a document being assembled (merged with constant neighbours)."""


def json_object(members: dict[str, str | list[str]]) -> list[str]:
    """The parts of a JSON object, keys in the given order; a value is SQL giving JSON text, or the
    parts of a nested object."""
    parts: list[str] = [Text("{")]
    for i, (name, value) in enumerate(members.items()):
        parts.append(Text(("," if i else "") + json.dumps(name) + ":"))
        parts.extend(value if isinstance(value, list) else [value])
    parts.append(Text("}"))
    return parts


def json_document(parts: list[str]) -> str:
    """One variadic concat (a chain of ``||`` copies the growing text at every step); every part
    is non-null by construction."""
    merged: list[str] = []
    for part in parts:
        if isinstance(part, Text) and merged and isinstance(merged[-1], Text):
            merged[-1] = Text(merged[-1] + part)
        else:
            merged.append(part)
    return "concat(" + ", ".join(sql_literal(p) if isinstance(p, Text) else p for p in merged) + ")"


def lower_hex_escapes(expr: str) -> str:
    r"""DuckDB writes ``\u001F``, the canonical form is ``\u001f``: lower the hex of the control
    characters whose escape has letters (escaped backslashes are set aside first)."""
    out = f"replace({expr}, '\\\\', chr(1))"
    for code in (0x0B, 0x0E, 0x0F, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F):
        escape = f"\\u{code:04X}"
        out = f"replace({out}, '{escape}', '{escape.lower()}')"
    return f"CASE WHEN contains({expr}, '\\u00') THEN replace({out}, chr(1), '\\\\') ELSE {expr} END"
