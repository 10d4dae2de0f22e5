"""`tradingmem recall`, `tradingmem reflect` and `tradingmem budget`.

Recall and reflect exist only while ROLE_MEMORY_MODE=active (fixed for the process); in shadow
and off they refuse with a clear message and a non-zero exit code. Recall reads the warehouse
read-only. Budget works in every mode.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from tradingmem_assets.cli.common import CliError, as_of_now, as_of_option, db_path, json_option, warehouse
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

    hits = recall(role_id, query, symbol=symbol, scenario=scenario, k=k, as_of=as_of, db=db_path())
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
    lines = [f"{len(hits)} case(s) of role '{role_id}' (advisory only):"]
    for i, h in enumerate(hits, 1):
        text = h.lesson or f"success pattern: {h.decision_text or ''}"
        lines.append(
            f"{i}. [{h.classification}] {h.symbol} {h.direction} score={h.score:.3f} case={h.case_id}"
        )
        lines.append(f"   {text}")
    return document, "\n".join(lines)


@click.command("reflect")
@click.argument("case_id")
@json_option
def reflect_cmd(case_id: str, as_json: bool):
    """Re-run the reflector for one case (under the LLM budget) and record the result."""
    _refuse_unless_active("tradingmem reflect")
    from tradingmem_assets.defs.role_memory.admission import registry_frame
    from tradingmem_assets.defs.role_memory.invariants import ROLE_REFLECTIONS_SCHEMA
    from tradingmem_assets.defs.role_memory.llm_reflector import ChatClient, LLMError, LLMReflector
    from tradingmem_assets.defs.role_memory.reflection import (
        DeterministicReflector,
        record_reflections,
        reflect_case,
    )
    from tradingmem_assets.lib.registry import load_registry
    from tradingmem_assets.lib.validation import validate
    from tradingmem_assets.settings import SETTINGS

    if not Path(db_path()).exists():
        raise CliError(f"warehouse {db_path()} does not exist yet: run trading_memory_job first")
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
        validation = validate(ROLE_REFLECTIONS_SCHEMA, rows)
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
    if Path(db_path()).exists():
        with warehouse(read_only=True) as con:
            rows = budget_summary(con, limits)
    else:
        import duckdb

        rows = budget_summary(duckdb.connect(":memory:"), limits)
    document = {"warehouse": db_path(), "categories": rows}
    lines = [
        f"{'category':<12} {'today':>10} {'daily cap':>10} {'soft':>8} "
        f"{'month':>10} {'monthly cap':>12}  status"
    ]
    for r in rows:
        lines.append(
            f"{r['category']:<12} {r['today_usd']:>10.4f} {r['daily_cap_usd']:>10.2f} {r['soft_usd']:>8.2f} "
            f"{r['month_usd']:>10.4f} {r['monthly_cap_usd']:>12.2f}  {r['status']}"
        )
    return document, "\n".join(lines)


def register(group: click.Group) -> None:
    group.add_command(recall_cmd)
    group.add_command(reflect_cmd)
    group.add_command(budget_cmd)
