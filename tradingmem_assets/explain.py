"""Walk a learned row back to the facts that justify it (SPEC section 0: every learned row is explainable).

``explain(con, kind, id)`` returns a plain document: the row itself and, table by table, the
chain behind it: a lesson/case → decision → execution → fills → position → evaluation run and
components; a methodology → lifecycle events → outcomes → institution runs and outputs; a
customer profile → its generation basis and current snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import table_exists

KINDS = ("decision", "case", "lesson", "run", "methodology", "learning", "profile")


class NotFound(LookupError):
    pass


def _rows(con: duckdb.DuckDBPyConnection, table: str, sql: str, params: Sequence) -> list[dict]:
    """Rows as dicts, or [] when the table has not been materialized yet."""
    if not table_exists(con, table):
        return []
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _one(con, table: str, key: str, value: str) -> dict | None:
    found = _rows(con, table, f"SELECT * FROM {table} WHERE {key} = ?", [value])
    return found[0] if found else None


def _trade_chain(con: duckdb.DuckDBPyConnection, decision_id: str, execution_id: str | None) -> dict:
    chain: dict = {"decision": _one(con, tables.raw_table("trading_decisions"), "decision_id", decision_id)}
    if execution_id:
        chain["execution"] = _one(con, tables.raw_table("trade_executions"), "execution_id", execution_id)
        chain["fills"] = _rows(
            con,
            tables.raw_table("trade_fills"),
            "SELECT * FROM raw.trade_fills WHERE execution_id = ? ORDER BY filled_at, fill_id",
            [execution_id],
        )
        chain["positions"] = _rows(
            con,
            tables.raw_table("position_lifecycles"),
            "SELECT * FROM raw.position_lifecycles WHERE execution_id = ?",
            [execution_id],
        )
    chain["preview_consumptions"] = _rows(
        con,
        tables.raw_table("preview_consumptions"),
        "SELECT c.* FROM raw.preview_consumptions c JOIN raw.trading_decisions d ON d.preview_id = c.preview_id "
        "WHERE d.decision_id = ? ORDER BY c.consumed_at",
        [decision_id],
    )
    runs = _rows(
        con,
        tables.EVALUATION_RUNS,
        "SELECT * FROM main.evaluation_runs WHERE decision_id = ? ORDER BY profile_id, run_version",
        [decision_id],
    )
    for run in runs:
        run["components"] = _rows(
            con,
            tables.EVALUATION_COMPONENTS,
            "SELECT component, value, quality_flag FROM main.evaluation_components WHERE run_id = ? ORDER BY component",
            [run["run_id"]],
        )
    chain["evaluation_runs"] = runs
    return chain


def explain(con: duckdb.DuckDBPyConnection, kind: str, ident: str) -> dict:
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    if kind == "run":
        run = _one(con, tables.EVALUATION_RUNS, "run_id", ident)
        if run is None:
            raise NotFound(f"no evaluation run {ident}")
        return {
            "kind": kind,
            "id": ident,
            "run": run,
            **_trade_chain(con, run["decision_id"], run["execution_id"]),
        }
    if kind in ("case", "lesson", "decision"):
        key = "decision_id" if kind == "decision" else "case_id"
        case = _one(con, tables.ROLE_CASES, key, ident)
        if case is None and kind == "decision":
            if _one(con, tables.raw_table("trading_decisions"), "decision_id", ident) is None:
                raise NotFound(f"no decision {ident}")
            return {"kind": kind, "id": ident, **_trade_chain(con, ident, None)}
        if case is None:
            raise NotFound(f"no role case {ident}")
        reflections = _rows(
            con,
            tables.ROLE_REFLECTIONS,
            "SELECT * FROM main.role_reflections WHERE case_id = ? ORDER BY reflected_at",
            [case["case_id"]],
        )
        if kind == "lesson" and not reflections:
            raise NotFound(f"case {ident} has no reflection (lesson) yet")
        return {
            "kind": kind,
            "id": ident,
            "reflections": reflections,
            "case": case,
            **_trade_chain(con, case["decision_id"], case["execution_id"]),
        }
    if kind == "methodology":
        methodology = _one(con, tables.METHODOLOGIES, "methodology_id", ident)
        if methodology is None:
            raise NotFound(f"no methodology {ident}")
        cases = _rows(
            con,
            tables.METHODOLOGY_CASES,
            "SELECT * FROM main.methodology_cases WHERE methodology_id = ? ORDER BY recorded_at",
            [ident],
        )
        run_ids = sorted({c["run_id"] for c in cases})
        return {
            "kind": kind,
            "id": ident,
            "methodology": methodology,
            "lifecycle_events": _rows(
                con,
                tables.METHODOLOGY_LIFECYCLE_EVENTS,
                "SELECT * FROM main.methodology_lifecycle_events WHERE methodology_id = ? ORDER BY ts, event_id",
                [ident],
            ),
            "outcomes": cases,
            "institution_reflections": _rows(
                con,
                tables.INSTITUTION_REFLECTIONS,
                'SELECT * FROM main.institution_reflections WHERE list_contains(?, run_id) ORDER BY run_id, "window"',
                [run_ids],
            ),
            "institution_runs": _rows(
                con,
                tables.raw_table("institution_runs"),
                "SELECT * FROM raw.institution_runs WHERE list_contains(?, run_id) ORDER BY started_at",
                [run_ids],
            ),
            "injections": _rows(
                con,
                tables.METHODOLOGY_CASE_HINTS,
                "SELECT * FROM main.methodology_case_hints WHERE methodology_id = ?",
                [ident],
            ),
        }
    if kind == "learning":
        learning = _one(con, tables.LEARNINGS, "learning_id", ident)
        if learning is None:
            raise NotFound(f"no learning {ident}")
        return {
            "kind": kind,
            "id": ident,
            "learning": learning,
            "feedback": _rows(
                con,
                tables.raw_table("learning_feedback"),
                "SELECT * FROM raw.learning_feedback WHERE learning_id = ? ORDER BY ts",
                [ident],
            ),
        }
    profile = _one(con, tables.FIN_CUSTOMER_PROFILE, "customer_id", ident)
    if profile is None:
        raise NotFound(f"no customer profile {ident}")
    return {
        "kind": kind,
        "id": ident,
        "profile": profile,
        "snapshots": _rows(
            con,
            tables.PROFILE_SNAPSHOTS,
            "SELECT snapshot_id, version, snapshot_hash, is_current, created_at FROM main.profile_snapshots "
            "WHERE customer_id = ? ORDER BY version",
            [ident],
        ),
    }
