"""`tradingmem learnings top|recent|suggest|delete`: inspect, query and prune the learned tool sequences.

``delete`` writes a tombstone (``learning_deletions``) and removes the row; the learnings asset
honours tombstones, so the deletion sticks across re-materializations (the turns that formed the
learning are kept in ``learning_reviews`` as ``suppressed_deleted``).
"""

from __future__ import annotations

import json

import click
from rich.text import Text

from tradingmem_assets.cli.common import (
    CliError,
    as_of_now,
    json_option,
    num,
    require_warehouse,
    table,
    warehouse,
)
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import ensure_table, read_frame, table_exists, transaction

COLUMNS = (
    "learning_id, name, trigger, success_count, failure_count, ignored_count, weight, required_tier, "
    "created_at, last_used_at"
)


def _disabled_note() -> str | None:
    from tradingmem_assets.settings import SETTINGS

    return None if SETTINGS.learning_enabled else "learning is disabled (LEARNING_ENABLED=false)"


def _rows(sql: str, params: list) -> list[dict]:
    with warehouse(read_only=True) as con:
        if not table_exists(con, tables.LEARNINGS):
            raise CliError("table learnings does not exist yet: run trading_memory_job first")
        return read_frame(con, sql, params).to_dicts()


def _table(rows: list[dict], note: str | None = None, title: str | None = None, used: bool = False):
    """Learnings for people: counters, weight rounded, tier, name (and when last used)."""
    out: list = [Text(note, style="yellow")] if note else []
    if not rows:
        return [*out, Text("(no learnings)")]
    columns = ["learning_id", "ok", "fail", "ign", "weight", "tier", "name"] + (["last used"] if used else [])
    grid = table(*columns, title=title, right=("ok", "fail", "ign", "weight", "tier"))
    for r in rows:
        cells = [
            r["learning_id"],
            num(r["success_count"]),
            num(r["failure_count"]),
            num(r["ignored_count"]),
            num(r["weight"], 3),
            num(r["required_tier"]),
            r["name"],
        ]
        if used:
            last = r.get("last_used_at")
            cells.append(last.isoformat(timespec="seconds") if hasattr(last, "isoformat") else num(last))
        grid.add_row(*cells)
    return [*out, grid]


@click.group("learnings")
def learnings_group() -> None:
    """Learned tool sequences: the best, the recent, suggestions for a message, deletion."""


def _limit_option(default: int):
    return click.option("-n", "--limit", type=click.IntRange(1, 1000), default=default, show_default=True)


def _listing(where_and_order: str, limit: int, title: str, used: bool = False):
    """The first ``limit`` learnings in an order, as JSON and for people."""
    rows = _rows(f"SELECT {COLUMNS} FROM main.learnings {where_and_order} LIMIT ?", [limit])
    note = _disabled_note()
    return {"learnings": rows, "note": note}, _table(rows, note, title, used=used)


@learnings_group.command("top")
@_limit_option(20)
@json_option
def top(limit: int, as_json: bool):
    """Learnings by success_count - failure_count (then weight)."""
    order = "ORDER BY success_count - failure_count DESC, weight DESC, learning_id"
    return _listing(order, limit, f"top {limit} learnings")


@learnings_group.command("recent")
@_limit_option(10)
@json_option
def recent(limit: int, as_json: bool):
    """Learnings most recently used (a learned turn or an adopted suggestion)."""
    order = "WHERE last_used_at IS NOT NULL ORDER BY last_used_at DESC, learning_id"
    return _listing(order, limit, "learnings most recently used", used=True)


@learnings_group.command("suggest")
@click.argument("message")
@click.option("-k", "k", type=click.IntRange(1, 100), default=None, help="How many (default LEARNING_TOP_K).")
@click.option(
    "--max-tier", type=click.IntRange(1, 4), default=None, help="Highest tool tier the caller may use."
)
@click.option(
    "--as-of",
    "as_of",
    default=None,
    metavar="TS",
    help="Point in time (ISO-8601; naive = UTC): only learnings known by then, with the counters and "
    "weight their turns and feedback up to then give (default TRADINGMEM_AS_OF, else the stored ones).",
)
@json_option
def suggest_cmd(message: str, k: int | None, max_tier: int | None, as_of: str | None, as_json: bool):
    """Top-K learnings for MESSAGE, ranked by TF-IDF similarity x weight."""
    from tradingmem_assets.defs.learning.suggest import read_as_of, suggest
    from tradingmem_assets.settings import parse_as_of

    if as_of is not None:
        try:
            instant = parse_as_of(as_of)
        except ValueError:
            raise CliError(
                f"--as-of {as_of!r} is not an ISO-8601 instant (e.g. 2024-07-01T00:00:00Z)", exit_code=2
            ) from None
    else:
        instant = read_as_of(None)  # TRADINGMEM_AS_OF when set (its own error names it), else None
    note = _disabled_note()
    if note:
        return {"enabled": False, "suggestions": [], "note": note}, note
    rows = suggest(message, k=k, max_tier=max_tier, as_of=instant, database=require_warehouse())
    document = {
        "enabled": True,
        "message": message,
        "max_tier": max_tier,
        "as_of": instant.isoformat() if instant else None,
        "suggestions": rows,
    }
    when = f" as of {instant.isoformat()}" if instant else ""
    if not rows:
        return document, f"no learning matches this message{when}"
    grid = table(
        "#",
        "learning_id",
        "score",
        "similarity",
        "weight",
        "tier",
        "trigger and guidance",
        title=f"learnings{when}:" if when else "learnings for this message",
        right=("#", "score", "similarity", "weight", "tier"),
    )
    for i, r in enumerate(rows, start=1):
        grid.add_row(
            str(i),
            r["learning_id"],
            num(r["score"], 3),
            num(r["similarity"], 3),
            num(r["weight"], 3),
            num(r["required_tier"]),
            Text.assemble((r["trigger"], "bold"), "\n", r["guidance"]),
        )
    return document, grid


@learnings_group.command("delete")
@click.argument("learning_id")
@click.option("--reason", default="deleted by operator", show_default=True)
@json_option
def delete(learning_id: str, reason: str, as_json: bool):
    """Delete a learning for good: a tombstone the learnings asset honours on every later run."""
    import polars as pl

    from tradingmem_assets.defs.learning.learnings import LEARNING_DELETIONS_DTYPES

    deleted_at = as_of_now()
    with warehouse(read_only=False) as con:  # never creates a missing warehouse
        exists = table_exists(con, tables.LEARNINGS) and bool(
            con.execute(
                "SELECT count(*) FROM main.learnings WHERE learning_id = ?", [learning_id]
            ).fetchall()[0][0]
        )
        tombstoned = table_exists(con, tables.LEARNING_DELETIONS) and bool(
            con.execute(
                "SELECT count(*) FROM main.learning_deletions WHERE learning_id = ?", [learning_id]
            ).fetchall()[0][0]
        )
        if not exists and not tombstoned:
            raise CliError(f"no learning {learning_id!r} (see `tradingmem learnings top`)")
        with transaction(con):
            ensure_table(con, tables.LEARNING_DELETIONS, pl.DataFrame(schema=LEARNING_DELETIONS_DTYPES))
            if not tombstoned:
                con.execute(
                    "INSERT INTO main.learning_deletions (learning_id, deleted_at, reason) VALUES (?, ?, ?)",
                    [learning_id, deleted_at, reason],
                )
            if exists:
                con.execute("DELETE FROM main.learnings WHERE learning_id = ?", [learning_id])
    document = {
        "learning_id": learning_id,
        "deleted": exists,
        "already_tombstoned": tombstoned,
        "deleted_at": deleted_at,
        "reason": reason,
    }
    text = (
        f"deleted {learning_id}; it stays deleted on every later run (tombstone in learning_deletions)"
        if exists
        else f"{learning_id} was already deleted"
    )
    return json.loads(json.dumps(document, default=str)), text


def register(group: click.Group) -> None:
    group.add_command(learnings_group)
