"""`tradingmem methodologies list [--injectable] [--as-of TS]`: the methodologies as known at an instant."""

from __future__ import annotations

from datetime import datetime

import click

from tradingmem_assets.cli.common import (
    as_of_now,
    as_of_option,
    json_option,
    num,
    status_text,
    table,
    warehouse,
)


@click.group("methodologies")
def methodologies() -> None:
    """Methodologies learned from institution runs (graduated ones are injectable)."""


@methodologies.command("list")
@click.option("--injectable", is_flag=True, help="Only methodologies graduated at that instant.")
@as_of_option("Point in time (ISO-8601): the methodologies and their state as known then.")
@json_option
def list_cmd(injectable: bool, as_of: datetime | None, as_json: bool):
    """List methodologies with their Wilson confidence, as of now (TRADINGMEM_AS_OF) or --as-of."""
    from tradingmem_assets.defs.learning.queries import methodologies_as_of

    instant = as_of or as_of_now()
    with warehouse() as con:
        frame = methodologies_as_of(con, instant, injectable=injectable)
    rows = frame.to_dicts()
    document = {"as_of": instant.isoformat(), "injectable_only": injectable, "methodologies": rows}
    if not rows:
        which = "graduated" if injectable else "known"
        return document, f"no methodology {which} at {instant.isoformat()}"
    grid = table(
        "methodology_id",
        "state",
        "confidence",
        "used",
        "correct",
        "name",
        title=f"{len(rows)} methodolog{'y' if len(rows) == 1 else 'ies'} as of {instant.isoformat()}",
        right=("confidence", "used", "correct"),
    )
    for r in rows:
        injectable = r["quarantine"] == 0
        grid.add_row(
            r["methodology_id"],
            status_text("ok" if injectable else "watch", "injectable" if injectable else "quarantined"),
            num(r["confidence"], 3),
            num(r["times_used"]),
            num(r["times_correct"]),
            r["name"],
        )
    return document, grid


def register(group: click.Group) -> None:
    group.add_command(methodologies)
