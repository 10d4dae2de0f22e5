"""`tradingmem explain KIND ID`: the chain of tables behind a learned row.

Without ``--json`` it prints the document as a readable tree (one branch per table of the chain,
one per row, its columns as leaves); ``--json`` prints the same document as data.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import click
from rich.text import Text
from rich.tree import Tree

from tradingmem_assets.cli.common import CliError, json_option, warehouse
from tradingmem_assets.explain import KINDS, NotFound, explain

LONG = 160  # characters of a value shown in the tree (--json has all of it)


@click.command("explain")
@click.argument("kind", type=click.Choice(KINDS), metavar="KIND")
@click.argument("ident", metavar="ID")
@json_option
def explain_cmd(kind: str, ident: str, as_json: bool):
    """Walk a decision, case, lesson, run, methodology, learning or profile back to its evidence."""
    with warehouse(read_only=True) as con:
        try:
            document = explain(con, kind, ident)
        except NotFound as exc:
            raise CliError(str(exc)) from exc
    return document, tree(document)


def tree(document: dict[str, Any]) -> Tree:
    """The explain document as a tree: the subject at the root, then each table of its chain."""
    root = Tree(Text.assemble((f"{document['kind']} ", "bold"), (str(document["id"]), "bold cyan")))
    for key, value in document.items():
        if key in ("kind", "id"):
            continue
        _branch(root, key, value)
    return root


def _branch(parent: Tree, name: str, value: Any) -> None:
    if isinstance(value, dict):
        node = parent.add(Text(name, style="bold"))
        _fields(node, value)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        node = parent.add(Text.assemble((name, "bold"), (f" ({len(value)})", "dim")))
        for row in value:
            # a row is labelled by its first column (its own id in every table of the chain)
            first, *rest = row.items()
            label = Text.assemble((f"{first[0]} ", "dim"), (_scalar(first[1]), "cyan"))
            _fields(node.add(label), dict(rest))
    elif isinstance(value, list) and not value:
        parent.add(Text.assemble((name, "bold"), (" (none)", "dim")))
    elif value is None:
        parent.add(Text.assemble((name, "bold"), (": not found", "dim")))
    else:
        parent.add(Text.assemble((f"{name}: ", "bold"), _scalar(value)))


def _fields(node: Tree, row: dict[str, Any]) -> None:
    for key, value in row.items():
        if isinstance(value, dict) or (isinstance(value, list) and value and isinstance(value[0], dict)):
            _branch(node, key, value)
        else:
            node.add(Text.assemble((f"{key}: ", "dim"), _scalar(value)))


def _scalar(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float | Decimal):
        return f"{float(value):.6g}"
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        text = json.dumps(list(value), default=str, ensure_ascii=False)
    else:
        text = " ".join(str(value).split())
    return text if len(text) <= LONG else text[: LONG - 1] + "…"


def register(group: click.Group) -> None:
    group.add_command(explain_cmd)
