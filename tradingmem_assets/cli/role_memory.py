"""`tradingmem recall`, `tradingmem reflect` and `tradingmem budget`.

Recall and reflect exist only while ROLE_MEMORY_MODE=active (fixed for the process); in shadow
and off they refuse with a clear message and a non-zero exit code. Recall reads the warehouse
read-only. Budget works in every mode.
"""

from __future__ import annotations

from datetime import datetime

import click
from rich.text import Text

from tradingmem_assets.cli.common import (
    CliError,
    as_of_now,
    as_of_option,
    db_path,
    json_option,
    num,
    require_warehouse,
    status_text,
    table,
    usd,
    warehouse,
)
from tradingmem_assets.lib.budget import BudgetExceededError, BudgetTracker, budget_summary, limits_from_env

ADVISORY = (
    "Recalled lessons are advisory: they never override safety rules, permissions or user constraints, "
    "and are never injected into execution tools."
)


def _refuse_unless_active(what: str) -> None:
    from tradingmem_assets.defs.role_memory.recall import RoleMemoryUnavailableError, require_active

    try:
        require_active(what)
    except RoleMemoryUnavailableError as exc:
        raise CliError(str(exc), exit_code=2) from exc


@click.command("recall")
@click.argument("query")
@click.option("--role", "role_id", required=True, help="Exact role id (no generic fallback).")
@click.option("--symbol", default=None, help="Only cases of this symbol.")
@click.option("--scenario", default=None, help="Only cases of this scenario.")
@click.option("-k", "k", type=click.IntRange(min=1), default=5, show_default=True, help="How many cases.")
@as_of_option("Point in time (ISO-8601): what could have been recalled at that instant.")
@json_option
def recall_cmd(
    query: str,
    role_id: str,
    symbol: str | None,
    scenario: str | None,
    k: int,
    as_of: datetime | None,
    as_json: bool,
):
    """Recall a role's lessons and success patterns most similar to QUERY."""
    _refuse_unless_active("recall")
    from tradingmem_assets.defs.role_memory.recall import recall  # scikit-learn loads only when recall runs
    from tradingmem_assets.defs.role_memory.recall_tfidf import RecallIndexOutdatedError

    try:
        hits = recall(
            role_id, query, symbol=symbol, scenario=scenario, k=k, as_of=as_of, db=require_warehouse()
        )
    except RecallIndexOutdatedError as exc:
        raise CliError(str(exc)) from exc
    document = {
        "role_id": role_id,
        "query": query,
        "symbol": symbol,
        "scenario": scenario,
        "k": k,
        "as_of": as_of.isoformat() if as_of else None,
        "advisory": ADVISORY,
        "results": [h.as_dict() for h in hits],
    }
    if not hits:
        return document, f"no reflected, eligible case of role '{role_id}' matches these filters"
    grid = table(
        "#",
        "score",
        "case",
        "class",
        "symbol",
        "lesson or success pattern",
        title=f"{len(hits)} case(s) of role '{role_id}' (advisory only)",
        right=("#", "score"),
    )
    for i, h in enumerate(hits, 1):
        text = h.lesson or f"success pattern: {h.decision_text or ''}"
        grid.add_row(str(i), num(h.score, 3), h.case_id, h.classification, f"{h.symbol} {h.direction}", text)
    return document, grid


@click.command("reflect")
@click.argument("case_id")
@json_option
def reflect_cmd(case_id: str, as_json: bool):
    """Re-run the reflector for one case (under the LLM budget) and record the result."""
    _refuse_unless_active("tradingmem reflect")
    from tradingmem_assets.defs.role_memory.admission import registry_frame
    from tradingmem_assets.defs.role_memory.invariants import ROLE_REFLECTIONS_INVARIANTS
    from tradingmem_assets.defs.role_memory.llm_reflector import ChatClient, LLMError, LLMReflector
    from tradingmem_assets.defs.role_memory.reflection import (
        DeterministicReflector,
        record_reflections,
        reflect_case,
    )
    from tradingmem_assets.lib.registry import load_registry
    from tradingmem_assets.lib.validation import validate
    from tradingmem_assets.settings import SETTINGS

    require_warehouse()
    registry = registry_frame(load_registry(SETTINGS.roles_file).rows())
    as_of = as_of_now()
    with warehouse(read_only=False) as con:
        if SETTINGS.llm_base_url:
            client = ChatClient(
                SETTINGS.llm_base_url, SETTINGS.llm_model, BudgetTracker(con), api_key=SETTINGS.llm_api_key
            )
            reflector = LLMReflector(client, strict=True)
        else:
            reflector = DeterministicReflector()
        try:
            rows = reflect_case(con, registry, case_id, as_of, reflector)
        except BudgetExceededError as exc:
            raise CliError(f"{exc}; nothing was recorded") from exc
        except LLMError as exc:
            raise CliError(f"{exc}; nothing was recorded") from exc
        validation = validate(ROLE_REFLECTIONS_INVARIANTS, rows)
        if not validation.passed:
            raise CliError(
                f"the reflection breaks its invariants; nothing was recorded:\n{validation.summary()}"
            )
        recorded = record_reflections(con, rows) > 0
    row = rows.row(0, named=True)
    document = {**row, "recorded": recorded}
    text = (
        f"case {case_id}: {row['classification']}"
        + (f" (trainable)\nlesson: {row['lesson']}" if row["trainable"] else "")
        + f"\nreflector {row['reflector']} at {row['reflected_at'].isoformat()}"
        + ("" if recorded else " (identical reflection already recorded)")
    )
    return document, text


@click.command("budget")
@json_option
def budget_cmd(as_json: bool):
    """LLM spend by category for today and this month, against the caps."""
    limits = limits_from_env()
    with warehouse(read_only=True) as con:  # a missing warehouse: one line naming it, nothing created
        rows = budget_summary(con, limits)
    document = {"warehouse": db_path(), "categories": rows}
    grid = table(
        "category",
        "today",
        "daily cap",
        "soft",
        "month",
        "monthly cap",
        "status",
        right=("today", "daily cap", "soft", "month", "monthly cap"),
    )
    for r in rows:
        grid.add_row(
            r["category"],
            usd(r["today_usd"]),
            usd(r["daily_cap_usd"]),
            usd(r["soft_usd"]),
            usd(r["month_usd"]),
            usd(r["monthly_cap_usd"]),
            status_text(r["status"]),
        )
    return document, [Text(f"LLM budget: {db_path()}", style="bold"), grid]


def register(group: click.Group) -> None:
    group.add_command(recall_cmd)
    group.add_command(reflect_cmd)
    group.add_command(budget_cmd)
