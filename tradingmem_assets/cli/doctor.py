"""`tradingmem doctor`: what in the warehouse needs an operator (exit code 1 when something does).

Reads the warehouse read-only and aggregates in SQL; the judgement lives in ``core/doctor.py``.
A table that does not exist yet is reported as not materialized, never a crash.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

import click
import duckdb
import polars as pl
from rich.text import Text

from tradingmem_assets.cli.common import as_of_now, db_path, json_option, status_text, table, warehouse
from tradingmem_assets.defs.audit.queries import read_heartbeats
from tradingmem_assets.defs.efficacy.queries import stored_efficacy
from tradingmem_assets.defs.operations import doctor as rules
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.registry import load_registry
from tradingmem_assets.lib.warehouse import read_frame, table_exists
from tradingmem_assets.settings import SETTINGS

ROLE_CASES = tables.ROLE_CASES
DECISIONS = tables.raw_table("trading_decisions")
EVALUATION_RUNS = tables.EVALUATION_RUNS
MEMORY_UNITS = tables.raw_table("memory_unit")
LLM_USAGE = tables.LLM_USAGE
AUDIT_REPORTS = tables.METHODOLOGY_AUDIT_REPORTS
HEARTBEATS = tables.METHODOLOGY_CRON_RUNS
REJECTS = tables.RAW_REJECTS

CHECK_TABLES = {
    "overdue_pending_cases": (ROLE_CASES,),
    "evaluation_runs": (EVALUATION_RUNS,),
    "quarantined_cases": (ROLE_CASES,),
    "memory_units_awaiting_adjudication": (MEMORY_UNITS,),
    "llm_budget": (LLM_USAGE,),
    "last_audit": (AUDIT_REPORTS,),
    "learning_heartbeat": (HEARTBEATS,),
    "landing_rejects": (REJECTS,),
    "memory_that_hurts": (tables.MEMORY_EFFICACY,),
}


def _first_row(con: duckdb.DuckDBPyConnection, sql: str) -> dict | None:
    frame = read_frame(con, sql)
    return frame.row(0, named=True) if frame.height else None


def _pending_cases(con: duckdb.DuckDBPyConnection, as_of: datetime) -> rules.DoctorCheck:
    maturity = {r.role_id: r.maturity_days for r in load_registry(SETTINGS.roles_file).roles.values()}
    if table_exists(con, DECISIONS):
        since, join = "coalesce(d.decided_at, c.created_at)", f"LEFT JOIN {DECISIONS} d USING (decision_id)"
    else:
        since, join = "c.created_at", ""
    pending = read_frame(
        con,
        f"SELECT c.case_id, c.role_id, CAST({since} AS TIMESTAMPTZ) AS since "
        f"FROM {ROLE_CASES} c {join} WHERE c.status = 'pending'",
    )
    return rules.overdue_pending_cases(pending, maturity, as_of)


def _budget(con: duckdb.DuckDBPyConnection) -> rules.DoctorCheck:
    from tradingmem_assets.lib.budget import budget_summary

    return rules.budget_status(budget_summary(con))


# the checks that judge one query of one table: name -> (table, query, rule)
FRAME_CHECKS: dict[str, tuple[str, str, Callable[[pl.DataFrame], rules.DoctorCheck]]] = {
    "quarantined_cases": (
        ROLE_CASES,
        f"SELECT case_id, reasons FROM {ROLE_CASES} "
        "WHERE status = 'quarantined' OR coalesce(CAST(quarantined AS BOOLEAN), false)",
        rules.quarantined_by_reason,
    ),
    "evaluation_runs": (
        EVALUATION_RUNS,
        f"SELECT status, coalesce(is_primary, false) AS is_primary, count(*) AS n "
        f"FROM {EVALUATION_RUNS} GROUP BY ALL",
        rules.evaluation_status,
    ),
    "memory_units_awaiting_adjudication": (
        MEMORY_UNITS,
        f"SELECT unit_id, customer_id, fact_key, conflict_count FROM {MEMORY_UNITS} WHERE conflict_count > 0",
        rules.adjudication_backlog,
    ),
    "landing_rejects": (
        REJECTS,
        f"SELECT table_name, count(*) AS n, mode(reason) AS top_reason FROM {REJECTS} GROUP BY table_name",
        rules.landing_rejects,
    ),
}


def _checks(con: duckdb.DuckDBPyConnection | None, as_of: datetime) -> list[rules.DoctorCheck]:
    def exists(table: str) -> bool:
        return con is not None and table_exists(con, table)

    gathered: dict[str, rules.DoctorCheck] = {}
    if exists(ROLE_CASES):
        gathered["overdue_pending_cases"] = _pending_cases(con, as_of)
    for name, (source, sql, rule) in FRAME_CHECKS.items():
        if exists(source):
            gathered[name] = rule(read_frame(con, sql))
    if exists(LLM_USAGE):
        gathered["llm_budget"] = _budget(con)
    if exists(AUDIT_REPORTS):
        latest = _first_row(
            con,
            f"SELECT pass_id, ran_at, tier, composite, isolation_ok FROM {AUDIT_REPORTS} "
            "ORDER BY ran_at DESC, pass_id DESC LIMIT 1",
        )
        violations = read_frame(con, f"SELECT count(*) AS n FROM {AUDIT_REPORTS} WHERE NOT isolation_ok")
        gathered["last_audit"] = rules.last_audit(latest, int(violations.item()))
    if exists(HEARTBEATS):
        beats = read_heartbeats(con, as_of)  # timed by their run's as_of, like the doctor's own "now"
        latest = beats.row(-1, named=True) if beats.height else None
        gathered["learning_heartbeat"] = rules.heartbeat_staleness(latest, as_of)
    if exists(tables.MEMORY_EFFICACY):
        efficacy = stored_efficacy(con)
        gathered["memory_that_hurts"] = rules.harmful_memory(efficacy.filter(pl.col("verdict") == "hurts"))
    return [
        gathered.get(name) or rules.not_materialized(name, *tables) for name, tables in CHECK_TABLES.items()
    ]


def diagnose(as_of: datetime) -> dict:
    """The doctor's report for the warehouse at TRADINGMEM_DB (which must exist)."""
    with warehouse(read_only=True) as con:  # a missing warehouse: one line naming it
        document = rules.report(_checks(con, as_of), as_of)
    return {"warehouse": db_path(), **document}


MARKS = {"ok": "ok", "info": "info", "action": "ACT", "not_materialized": "--"}


def render(document: dict) -> list:
    """The report for people: one row per check, what needs action last."""
    head = Text(f"tradingmem doctor: {document['warehouse']} (as of {document['as_of']})", style="bold")
    grid = table("", "check", "summary")
    for check in document["checks"]:
        grid.add_row(
            status_text(check["status"], MARKS.get(check["status"], check["status"])),
            check["name"],
            _rounded(check["summary"]),
        )
    actions = ", ".join(document["actions"]) if document["needs_action"] else "nothing"
    return [
        head,
        grid,
        Text(f"needs action: {actions}", style="bold red" if document["needs_action"] else "green"),
    ]


def _rounded(summary: str) -> str:
    """Long decimals in a check's summary rounded to one place (79.84848… -> 79.8); cents stay."""
    return re.sub(r"\d+\.\d{3,}", lambda m: f"{float(m.group()):.1f}", summary)


@click.command("doctor")
@json_option
def doctor_cmd(as_json: bool):
    """Report what needs an operator: overdue cases, evaluation gaps, quarantine, backlog, budget, audit."""
    document = diagnose(as_of_now())
    return document, render(document), 1 if document["needs_action"] else 0


def register(group: click.Group) -> None:
    group.add_command(doctor_cmd)
