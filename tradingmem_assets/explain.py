"""Walk a learned row back to the facts that justify it (SPEC section 0: every learned row is explainable).

``explain(con, kind, id)`` returns a plain document: the row itself and, table by table, the
chain behind it: a lesson/case → decision → execution → fills → position → evaluation run and
components; a methodology → lifecycle events → outcomes → institution runs and outputs; a
customer profile → its generation basis and current snapshot. The reads live in the domains'
``queries`` modules; this module only chains them.
"""

from __future__ import annotations

import duckdb

from tradingmem_assets.defs.efficacy import queries as efficacy
from tradingmem_assets.defs.evaluation import queries as evaluation
from tradingmem_assets.defs.landing import queries as landing
from tradingmem_assets.defs.learning import queries as learning
from tradingmem_assets.defs.profile import queries as profile
from tradingmem_assets.defs.role_memory import queries as role_memory

KINDS = ("decision", "case", "lesson", "run", "methodology", "learning", "profile")


class NotFound(LookupError):
    pass


def _trade_chain(con: duckdb.DuckDBPyConnection, decision_id: str, execution_id: str | None) -> dict:
    chain: dict = {"decision": landing.decision(con, decision_id)}
    if execution_id:
        chain["execution"] = landing.execution(con, execution_id)
        chain["fills"] = landing.execution_fills(con, execution_id)
        chain["positions"] = landing.execution_positions(con, execution_id)
    chain["preview_consumptions"] = landing.decision_preview_consumptions(con, decision_id)
    chain["evaluation_runs"] = evaluation.decision_runs(con, decision_id)
    return chain


def explain(con: duckdb.DuckDBPyConnection, kind: str, ident: str) -> dict:
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    head = {"kind": kind, "id": ident}
    if kind == "run":
        run = evaluation.evaluation_run(con, ident)
        if run is None:
            raise NotFound(f"no evaluation run {ident}")
        return {**head, "run": run, **_trade_chain(con, run["decision_id"], run["execution_id"])}
    if kind in ("case", "lesson", "decision"):
        if kind == "decision":
            case = role_memory.role_case(con, decision_id=ident)
        else:
            case = role_memory.role_case(con, case_id=ident)
        if case is None and kind == "decision":
            if landing.decision(con, ident) is None:
                raise NotFound(f"no decision {ident}")
            return {**head, **_trade_chain(con, ident, None)}
        if case is None:
            raise NotFound(f"no role case {ident}")
        reflections = role_memory.case_reflections(con, case["case_id"])
        if kind == "lesson" and not reflections:
            raise NotFound(f"case {ident} has no reflection (lesson) yet")
        document = {
            **head,
            "reflections": reflections,
            "case": case,
            **_trade_chain(con, case["decision_id"], case["execution_id"]),
        }
        if kind == "lesson":  # did the role's lessons change its later results? (SPEC 17)
            classes = {r.get("classification") for r in reflections}
            document["efficacy"] = [
                row
                for row in efficacy.efficacy_rows(con, role_id=case["role_id"])
                if row["subject_kind"] == "lesson" and row["subject_id"] in classes
            ]
        return document
    if kind == "methodology":
        chain = learning.methodology_evidence(con, ident)
        if chain is None:
            raise NotFound(f"no methodology {ident}")
        return {**head, **chain, "efficacy": efficacy.efficacy_rows(con, subject_id=ident)}
    if kind == "learning":
        chain = learning.learning_evidence(con, ident)
        if chain is None:
            raise NotFound(f"no learning {ident}")
        return {**head, **chain}
    found = profile.customer_profile(con, ident)
    if found is None:
        raise NotFound(f"no customer profile {ident}")
    return {**head, "profile": found, "snapshots": profile.profile_snapshots(con, ident)}
