"""`tradingmem efficacy [--as-of TS] [--json]`: does the learning help? (SPEC section 17)

Without ``--as-of`` it prints ``memory_efficacy`` as the last run wrote it; with ``--as-of`` it
computes the same rows as of that instant from the stored tables (only rows known then count).
"""

from __future__ import annotations

from datetime import datetime

import click

from tradingmem_assets.cli.common import CliError, as_of_option, json_option, warehouse

_HEADER = (
    f"{'kind':<11} {'subject':<18} {'role':<17} {'scope':<24} "
    f"{'before':>7} {'rate [95% interval]':<22} {'after':>7} {'rate [95% interval]':<22} verdict"
)


def _side(row: dict, side: str) -> tuple[str, str]:
    rate = row[f"{side}_win_rate"]
    shown = "-" if rate is None else f"{rate:.2f}"
    interval = f"{shown} [{row[f'{side}_low']:.2f}, {row[f'{side}_high']:.2f}]"
    return f"{row[f'{side}_wins']}/{row[f'{side}_n']}", interval


def human(rows: list[dict], as_of: datetime | None) -> str:
    """The rows as a table with their intervals, rounded for people."""
    when = f" as of {as_of.isoformat()}" if as_of is not None else ""
    if not rows:
        return f"no efficacy subject{when}"
    counts: dict[str, int] = {}
    lines = [f"memory efficacy{when}: {len(rows)} subjects", _HEADER]
    for r in rows:
        before, before_rate = _side(r, "before")
        after, after_rate = _side(r, "after")
        lines.append(
            f"{r['subject_kind']:<11} {r['subject_id']:<18} {r['role_id'] or '-':<17} {r['scope']:<24} "
            f"{before:>7} {before_rate:<22} {after:>7} {after_rate:<22} {r['verdict']}"
        )
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    lines.append("verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())))
    return "\n".join(lines)


@click.command("efficacy")
@as_of_option("Point in time (ISO-8601): compute the table from the rows known then.")
@json_option
def efficacy(as_of: datetime | None, as_json: bool):
    """Win rates before vs after each lesson, methodology graduation and injection (Wilson 95 %)."""
    from tradingmem_assets.defs.efficacy.queries import (
        EfficacyInputsMissing,
        memory_efficacy,
        stored_efficacy,
    )
    from tradingmem_assets.defs.role_memory.admission import registry_frame
    from tradingmem_assets.lib.registry import load_registry
    from tradingmem_assets.settings import SETTINGS

    with warehouse() as con:
        try:
            if as_of is None:
                frame = stored_efficacy(con)
            else:
                registry = registry_frame(load_registry(SETTINGS.roles_file).rows())
                frame = memory_efficacy(con, registry, as_of)
        except EfficacyInputsMissing as exc:
            raise CliError(str(exc)) from exc
    rows = frame.to_dicts()
    shown = as_of if as_of is not None else (rows[0]["as_of"] if rows else None)
    return rows, human(rows, shown)


def register(group: click.Group) -> None:
    group.add_command(efficacy)
