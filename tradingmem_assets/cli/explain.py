"""`tradingmem explain KIND ID`: the chain of tables behind a learned row."""

from __future__ import annotations

import click

from tradingmem_assets.cli.common import CliError, json_option, to_json, warehouse
from tradingmem_assets.explain import KINDS, NotFound, explain


@click.command("explain")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("ident", metavar="ID")
@json_option
def explain_cmd(kind: str, ident: str, as_json: bool):
    """Walk a decision, case, lesson, run, methodology, learning or profile back to its evidence."""
    with warehouse(read_only=True) as con:
        try:
            document = explain(con, kind, ident)
        except NotFound as exc:
            raise CliError(str(exc)) from exc
    return document, to_json(document)


def register(group: click.Group) -> None:
    group.add_command(explain_cmd)
