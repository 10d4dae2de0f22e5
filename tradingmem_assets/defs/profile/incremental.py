"""Incremental profiles: whether the past the last profile build saw is unchanged, and which
customers a later ``as_of`` can change.

A profile reads, as known at ``as_of``: the customer (opened by then, or without an opening
instant), their questionnaires, their transactions (the latest balance, and the trailing windows of
``fields.FREQUENCY_WINDOW`` and ``fields.BEHAVIOR_WINDOW``), and their promoted facts and held-back
units of the profile keys (``user_facts`` and ``memory_promotions``, which the memory assets
rebuild every run). Its *basis* (``lib.basis``, stored in ``profile_basis``) digests the raw rows
it could see; ``profile_fact_digests`` keeps, per customer, a digest of what it read of the two
derived tables.

While the basis holds, and the profile tables and the fact digests were as the basis's run left
them when this run started (no hand edit; the same code, settings and registry), a profile can
change only when, in ``(since, as_of]``, the customer opened, answered a questionnaire, made a
transaction or saw one leave a window, or when their fact digest differs now. Only those customers
are built again; ``tests/profile/test_incremental.py`` proves the tables equal to a full build's.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from tradingmem_assets.defs.profile.fields import BEHAVIOR_WINDOW, FACT_PREFIXES, FREQUENCY_WINDOW
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.basis import visible_rows
from tradingmem_assets.lib.sql_json import sql_literal
from tradingmem_assets.lib.warehouse import rows_digest_sql

PROFILE_VISIBLE = {
    "customers": visible_rows(tables.raw_table("customers"), "opened_at", null_visible=True),
    "questionnaire_results": visible_rows(tables.raw_table("questionnaire_results"), "assessed_at"),
    "customer_transactions": visible_rows(tables.raw_table("customer_transactions"), "ts"),
}
# what must be as the basis's run left them (read as of that run's end)
PROFILE_TABLES = (tables.FIN_CUSTOMER_PROFILE, tables.PROFILE_SNAPSHOTS, tables.PROFILE_FACT_DIGESTS)
TOUCHED_CUSTOMERS = "_pf_touched"
FACT_DIGESTS = "_pf_fact_digests"  # the digests of this run, written with its profiles

_KEYS = ", ".join(sql_literal(k) for k in FACT_PREFIXES)
# per customer: what create_profiles reads of the facts and the held-back units of the profile keys
FACT_DIGESTS_SQL = f"""
CREATE OR REPLACE TEMP TABLE {FACT_DIGESTS} AS
SELECT customer_id, {rows_digest_sql("h")} AS facts_digest
FROM (
    SELECT customer_id,
           hash(fact_key, fact_value, fact_id, source_unit_id, promoted_at, confidence, evidence_count) AS h
    FROM {tables.USER_FACTS} WHERE fact_key IN ({_KEYS})
    UNION ALL
    SELECT customer_id, hash(unit_id, fact_key, status) AS h
    FROM {tables.MEMORY_PROMOTIONS} WHERE fact_key IN ({_KEYS}) AND status <> 'promoted'
)
GROUP BY customer_id
"""

_LEFT_WINDOWS = " OR ".join(
    f"(ts > $since - INTERVAL {w.days} DAY AND ts <= $as_of - INTERVAL {w.days} DAY)"
    for w in sorted({FREQUENCY_WINDOW, BEHAVIOR_WINDOW})
)
TOUCHED_CUSTOMERS_SQL = f"""
CREATE OR REPLACE TEMP TABLE {TOUCHED_CUSTOMERS} AS
SELECT customer_id FROM raw.customers WHERE opened_at > $since AND opened_at <= $as_of
UNION
SELECT customer_id FROM raw.questionnaire_results WHERE assessed_at > $since AND assessed_at <= $as_of
UNION
SELECT customer_id FROM raw.customer_transactions
WHERE (ts > $since AND ts <= $as_of) OR {_LEFT_WINDOWS}
UNION
SELECT coalesce(n.customer_id, o.customer_id)
FROM {FACT_DIGESTS} n FULL OUTER JOIN {tables.PROFILE_FACT_DIGESTS} o USING (customer_id)
WHERE n.facts_digest IS DISTINCT FROM o.facts_digest
"""


def fact_digests(con: duckdb.DuckDBPyConnection) -> str:
    """Each customer's digest of what the profile reads of the derived fact tables, into temp
    table ``FACT_DIGESTS`` (call before building; store it with ``record_fact_digests``)."""
    con.execute(FACT_DIGESTS_SQL)
    return FACT_DIGESTS


def touch(con: duckdb.DuckDBPyConnection, since: datetime, as_of: datetime) -> str:
    """The customers an instant in ``(since, as_of]`` or a changed fact digest can change, into
    temp table ``TOUCHED_CUSTOMERS`` (after ``fact_digests``)."""
    con.execute(TOUCHED_CUSTOMERS_SQL, {"since": since, "as_of": as_of})
    return TOUCHED_CUSTOMERS


def record_fact_digests(con: duckdb.DuckDBPyConnection) -> None:
    """Store this run's fact digests (call in the transaction that writes the profiles)."""
    con.execute(
        f"CREATE OR REPLACE TABLE {tables.PROFILE_FACT_DIGESTS} AS "
        f"SELECT * FROM {FACT_DIGESTS} ORDER BY customer_id"
    )
