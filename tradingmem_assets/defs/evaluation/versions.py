"""Evaluation versions and primaries (SPEC sections 4 and 16), as SQL over the measured states.

They read the temp tables of ``scoring.evaluate`` (``_ev_measured``, ``_ev_pending``, ``_ev_exec``,
``_ev_profiles``, ``_ev_previous``, ``_ev_roles``) and build ``_ev_fresh`` (a view of the versions to
append, the only measured rows kept), ``_ev_primaries`` (every interval a run was primary) and
``_ev_all`` (every run with its primary flag as of the run).
"""

from tradingmem_assets.defs.evaluation.components import COMPONENTS

# What a run stores of its measurement (the columns of ``evaluation_runs`` after ``known_at``): the
# components' values and the flags their quality flags follow from (``components.COMPONENTS_VIEW_SQL``).
MEASURED_COLUMNS = (
    *COMPONENTS,
    "short_history",
    "benchmark_missing",
    "benchmark_absolute",
    "below_min_coverage",
)
_MEASURED = ", ".join(MEASURED_COLUMNS)
# an open window measures its volatility only
_PENDING_MEASURED = ", ".join(c if c in ("volatility", "short_history") else "NULL" for c in MEASURED_COLUMNS)


# A gid stands for one (decision, profile) of a run: the row of its chosen execution in ``_ev_exec``
# (``xid``) and its profile's number in ``_ev_profiles`` (``pidx``), packed in one BIGINT. The
# decision, execution and profile strings are looked up by those two parts where runs are written
# (per execution and per profile), never from a table of every gid's strings.
def gid_sql(xid: str, pidx: str) -> str:
    return f"(({xid}) << 32) + ({pidx})"


def gid_parts_sql(gid: str) -> str:
    """SQL joins that bring the execution (``_ev_exec`` as ``x``) and the profile (``_ev_profiles``
    as ``pr``) of the gid ``gid``."""
    return (
        f"JOIN _ev_exec x ON x.xid = (({gid}) >> 32) "
        f"JOIN _ev_profiles pr ON pr.pidx = (({gid}) & {0xFFFFFFFF})"
    )


# Version 0 once per (decision, profile); a settled state when no stored version has its hash,
# numbered after the stored versions in the order the states became knowable. Decided on narrow
# keys (the measured rows are wide: sorting them would carry every column): a gid (``gid_sql``)
# stands for (decision_id, profile_id). Only the gids with stored versions or more than one state
# (``_ev_numbered``: few, in a build from nothing) need the grouping and numbering: any other
# state is fresh, version 1 (``FRESH_TABLE_SQL``).
FRESH_SQL = f"""
CREATE OR REPLACE TEMP TABLE _ev_previous_by_gid AS
SELECT {gid_sql("x.xid", "pr.pidx")} AS gid, p.run_version, p.inputs_hash
FROM _ev_previous p JOIN _ev_exec x USING (decision_id) JOIN _ev_profiles pr USING (profile_id);
CREATE OR REPLACE TEMP TABLE _ev_numbered AS
SELECT gid FROM _ev_previous_by_gid
UNION
SELECT gid FROM _ev_measured GROUP BY gid HAVING count(*) > 1;
CREATE OR REPLACE TEMP TABLE _ev_fresh_keys AS
WITH latest AS (
    SELECT gid, max(run_version) AS latest_version FROM _ev_previous_by_gid GROUP BY gid
),
candidates AS (
    SELECT arg_min(m.rowid, m.known_at) AS rid, m.gid, m.inputs_hash, min(m.known_at) AS known_at
    FROM _ev_measured m SEMI JOIN _ev_numbered USING (gid)
    WHERE NOT EXISTS (SELECT 1 FROM _ev_previous_by_gid p
                      WHERE p.gid = m.gid AND p.inputs_hash = m.inputs_hash)
    GROUP BY m.gid, m.inputs_hash
)
SELECT c.rid,  -- narrow: the build side of the join below
       c.known_at,
       (coalesce(l.latest_version, 0)
           + row_number() OVER (PARTITION BY c.gid ORDER BY c.known_at, c.inputs_hash))::BIGINT AS run_version
FROM candidates c LEFT JOIN latest l USING (gid)
"""

# The versions to append, joined with their measured rows once (three later statements read
# them); then the measured rows are dropped, so what follows (at SF 30, 17 million runs) does not
# spill them. The settled and the open-window versions are kept apart (an open window has no
# measured price: its columns would be nulls taking room), and ``_ev_fresh`` shows them as one.
# Their strings are looked up by the gid where they are written. A state whose instant was
# already behind the previous learning run is knowable only now (``scoring``'s docstring).
FRESH_TABLE_SQL = f"""
CREATE OR REPLACE TEMP TABLE _ev_fresh_settled AS
WITH fresh AS (
    SELECT m.* REPLACE (coalesce(n.known_at, m.known_at) AS known_at),
           coalesce(n.run_version, 1) AS run_version
    FROM _ev_measured m
    LEFT JOIN _ev_numbered u USING (gid)
    LEFT JOIN _ev_fresh_keys n ON n.rid = m.rowid
    WHERE u.gid IS NULL OR n.rid IS NOT NULL
)
SELECT f.* REPLACE (
           CASE WHEN $prev_bound::TIMESTAMPTZ IS NOT NULL AND f.known_at <= $prev_bound::TIMESTAMPTZ
                    THEN $as_of::TIMESTAMPTZ
                ELSE f.known_at END AS known_at),
       'er_' || left(sha256(x.decision_id || '|' || pr.profile_id || '|' || f.run_version::VARCHAR), 16)
           AS run_id,
       $as_of::TIMESTAMPTZ AS created_at
FROM fresh f {gid_parts_sql("f.gid")};
CREATE OR REPLACE TEMP TABLE _ev_fresh_pending AS
SELECT p.*, 'er_' || left(sha256(x.decision_id || '|' || pr.profile_id || '|0'), 16) AS run_id,
       $as_of::TIMESTAMPTZ AS created_at
FROM _ev_pending p {gid_parts_sql("p.gid")}
WHERE NOT EXISTS (SELECT 1 FROM _ev_previous_by_gid q WHERE q.gid = p.gid AND q.run_version = 0);
DROP TABLE _ev_previous_by_gid;
DROP TABLE _ev_numbered;
DROP TABLE _ev_fresh_keys;
DROP TABLE _ev_measured;
DROP TABLE _ev_pending;
CREATE OR REPLACE TEMP VIEW _ev_fresh AS
SELECT gid, run_id, run_version, status, inputs_hash, known_at, created_at, {_MEASURED}
FROM _ev_fresh_settled
UNION ALL
SELECT gid, run_id, 0, 'pending', inputs_hash, NULL, created_at, {_PENDING_MEASURED}
FROM _ev_fresh_pending
"""

# Every interval a run was primary: the policy (version 0 from the execution, version 1 from its
# known_at, on the role's primary profile) and explicit promotions (from the later of promoted_at
# and the version's known_at), the latest explicit promotion winning over the policy.
# A decision no promotion names (all but a few) has at most two policy events, two distinct runs:
# its intervals follow from one ``lead`` (at one instant, version 1 wins: the empty interval of
# version 0 is dropped). Only the promoted decisions' events go through the ordering of policy
# and promotions, so the windows that sort by decision run over their few rows. The gids on their
# role's primary profile (``_ev_policy``) and the promotions visible at ``as_of`` with their gids
# (``_ev_promoted``; null for a decision this run does not evaluate) are tables of their own: the
# planner then knows the promotions are few and builds its joins on them.
PRIMARIES_SQL = f"""
CREATE OR REPLACE TEMP TABLE _ev_policy AS
SELECT {gid_sql("x.xid", "pr.pidx")} AS gid, x.decision_id, x.executed_at
FROM _ev_exec x JOIN _ev_roles ro ON ro.role_id = x.role_id
JOIN _ev_profiles pr ON pr.profile_id = ro.primary_profile;
CREATE OR REPLACE TEMP TABLE _ev_promoted AS
SELECT p.*, {gid_sql("x.xid", "pr.pidx")} AS gid
FROM raw.evaluation_promotions p
LEFT JOIN _ev_exec x USING (decision_id) LEFT JOIN _ev_profiles pr USING (profile_id)
WHERE p.promoted_at <= $as_of;
CREATE OR REPLACE TEMP TABLE _ev_primaries AS
WITH policy AS (  -- the stored versions by their decision, the fresh ones by their gid
    SELECT r.decision_id, r.run_id, r.run_version,
           CASE WHEN r.run_version = 0 THEN x.executed_at ELSE r.known_at END AS effective_at
    FROM _ev_previous r
    JOIN _ev_exec x USING (decision_id)
    JOIN _ev_roles ro ON ro.role_id = x.role_id AND ro.primary_profile = r.profile_id
    WHERE r.run_version IN (0, 1)
    UNION ALL
    SELECT k.decision_id, f.run_id, f.run_version,
           CASE WHEN f.run_version = 0 THEN k.executed_at ELSE f.known_at END AS effective_at
    FROM _ev_fresh f JOIN _ev_policy k USING (gid)
    WHERE f.run_version IN (0, 1)
),
explicit AS (  -- from the few promotions: the stored versions they name, then the fresh ones
    SELECT r.decision_id, r.run_id, greatest(p.promoted_at, coalesce(r.known_at, p.promoted_at)) AS effective_at,
           p.promoted_at, r.profile_id, r.run_version
    FROM _ev_promoted p JOIN _ev_previous r USING (decision_id, profile_id, run_version)
    UNION ALL
    SELECT p.decision_id, f.run_id, greatest(p.promoted_at, coalesce(f.known_at, p.promoted_at)),
           p.promoted_at, p.profile_id, f.run_version
    FROM _ev_promoted p JOIN _ev_fresh f ON f.gid = p.gid AND f.run_version = p.run_version
),
events AS (  -- of the promoted decisions only
    SELECT decision_id, effective_at, run_id AS policy_run, NULL::VARCHAR AS explicit_run,
           0 AS kind, NULL::TIMESTAMPTZ AS promoted_at, NULL::VARCHAR AS profile_id, NULL::BIGINT AS run_version
    FROM policy SEMI JOIN explicit USING (decision_id)
    UNION ALL
    SELECT decision_id, effective_at, NULL, run_id, 1, promoted_at, profile_id, run_version FROM explicit
),
points AS (
    SELECT decision_id, effective_at,
           coalesce(last_value(explicit_run IGNORE NULLS) OVER w, last_value(policy_run IGNORE NULLS) OVER w) AS run_id,
           row_number() OVER (PARTITION BY decision_id, effective_at ORDER BY kind DESC, promoted_at DESC,
                              profile_id DESC, run_version DESC) AS last_at_instant
    FROM events
    WINDOW w AS (PARTITION BY decision_id ORDER BY effective_at, kind, promoted_at, profile_id, run_version
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
changes AS (
    SELECT decision_id, effective_at, run_id FROM points WHERE last_at_instant = 1
    QUALIFY run_id IS DISTINCT FROM lag(run_id) OVER (PARTITION BY decision_id ORDER BY effective_at)
)
SELECT decision_id, run_id, effective_at AS primary_from,
       lead(effective_at) OVER (PARTITION BY decision_id ORDER BY effective_at) AS primary_until
FROM changes
UNION ALL
SELECT decision_id, run_id, effective_at AS primary_from,
       lead(effective_at) OVER (PARTITION BY decision_id ORDER BY effective_at, run_version) AS primary_until
FROM policy ANTI JOIN explicit USING (decision_id)
QUALIFY primary_until IS NULL OR primary_until > primary_from;
DROP TABLE _ev_policy;
DROP TABLE _ev_promoted
"""

# All runs with is_primary / promoted_at as of this run (the open primary interval): a view, so a
# full build writes the stored table straight from it (incremental.write_runs).
ALL_RUNS_SQL = f"""
CREATE OR REPLACE TEMP VIEW _ev_all AS
WITH runs AS (
    SELECT run_id, decision_id, execution_id, profile_id, run_version, inputs_hash, status, known_at,
           created_at, {_MEASURED}
    FROM _ev_previous
    UNION ALL
    SELECT f.run_id, x.decision_id, x.execution_id, pr.profile_id, f.run_version, f.inputs_hash, f.status,
           f.known_at, f.created_at, {", ".join(f"f.{c}" for c in MEASURED_COLUMNS)}
    FROM _ev_fresh f {gid_parts_sql("f.gid")}
)
SELECT r.run_id, r.decision_id, r.execution_id, r.profile_id, r.run_version, r.inputs_hash, r.status,
       p.run_id IS NOT NULL AS is_primary, p.primary_from AS promoted_at, r.created_at, r.known_at,
       {_MEASURED}
FROM runs r LEFT JOIN _ev_primaries p ON p.run_id = r.run_id AND p.primary_until IS NULL
"""
