"""Short-term memory (SPEC section 10): the context of every session active at as_of.

No Dagster here. Session contexts are set-based Polars over plain frames;
``ACTIVE_SESSION_MESSAGES_SQL`` is a read pushdown that selects a superset of the messages the rules
need (``session_contexts`` re-applies them).

Rules this module commits to (also in docs/profile.md):
- A session is active at ``as_of`` when its newest message is at most 30 minutes before ``as_of``
  and its oldest message at most 24 hours before it (both inclusive); messages after ``as_of`` do
  not exist yet. A session whose messages name more than one customer is never given a context
  (it would show one customer's words to another); it is reported instead.
- Token estimate of a text: every CJK character (Han, kana, Hangul, CJK and full-width
  punctuation) counts 1 token, the remaining characters count ceil(n / 4).
- A context holds the newest messages whose running estimate (newest first) stays within 4096
  tokens. When the newest message alone is over the budget it is kept, cut to the longest prefix
  that fits, and marked ``truncated``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.dtypes import as_utc

SESSION_IDLE = timedelta(minutes=30)
SESSION_MAX_AGE = timedelta(hours=24)
SESSION_TOKEN_BUDGET = 4096

# Han (incl. extension A and compatibility), kana, Hangul, CJK and full-width punctuation. Literal
# characters, so Python's ``re`` and Polars' Rust regex read the same class.
CJK_CLASS = (
    "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\u31f0-\u31ff"
    "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af\u3000-\u303f\uff00-\uffef]"
)


SESSION_CONTEXTS_DTYPES = table_dtypes(tables.SESSION_CONTEXTS)


def token_estimate_expr(column: str | pl.Expr) -> pl.Expr:
    """Estimated tokens of a text column: CJK characters count 1, other characters ceil(n / 4)."""
    text = (pl.col(column) if isinstance(column, str) else column).fill_null("")
    cjk = text.str.count_matches(CJK_CLASS).cast(pl.Int64)
    other = text.str.len_chars().cast(pl.Int64) - cjk
    return cjk + (other + 3) // 4


def estimate_tokens(text: str | None) -> int:
    """The same estimate for one Python string (used to cut an oversized message)."""
    if not text:
        return 0
    frame = pl.DataFrame({"t": [text]})
    return int(frame.select(token_estimate_expr("t")).item())


def truncate_to_budget(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose estimate is within ``budget`` tokens."""
    cjk = re.compile(CJK_CLASS)
    n_cjk = n_other = 0
    for i, ch in enumerate(text):
        if cjk.match(ch):
            n_cjk += 1
        else:
            n_other += 1
        if n_cjk + (n_other + 3) // 4 > budget:
            return text[:i]
    return text


@dataclass(frozen=True)
class SessionContexts:
    contexts: pl.DataFrame
    mixed_customer_sessions: pl.DataFrame  # session_id, customer_ids: active sessions refused a context
    active_sessions: int


def _json_list(column: str) -> pl.Expr:
    """A list-of-struct column as a JSON array (Polars encodes structs; unwrap the outer object)."""
    prefix = '{"' + column + '":'
    return pl.struct(pl.col(column)).struct.json_encode().str.strip_prefix(prefix).str.strip_suffix("}")


def session_contexts(
    messages: pl.DataFrame,
    as_of: datetime,
    *,
    idle: timedelta = SESSION_IDLE,
    max_age: timedelta = SESSION_MAX_AGE,
    budget: int = SESSION_TOKEN_BUDGET,
) -> SessionContexts:
    """Per session active at ``as_of``: its newest messages within the token budget.

    ``messages``: message_id, session_id, customer_id, role, content, created_at.
    """
    visible = as_utc(messages).filter(pl.col("created_at") <= as_of)
    sessions = visible.group_by("session_id").agg(
        pl.col("created_at").min().alias("started_at"),
        pl.col("created_at").max().alias("last_message_at"),
        pl.col("customer_id").n_unique().alias("n_customers"),
        pl.col("customer_id").unique().sort().alias("customer_ids"),
    )
    active = sessions.filter(
        (pl.col("last_message_at") >= as_of - idle) & (pl.col("started_at") >= as_of - max_age)
    )
    mixed = active.filter(pl.col("n_customers") > 1).select("session_id", "customer_ids").sort("session_id")
    usable = active.filter(pl.col("n_customers") == 1).select("session_id", "started_at", "last_message_at")

    newest_first = (
        visible.join(usable.select("session_id"), on="session_id", how="semi")
        .with_columns(token_estimate_expr("content").alias("tokens"))
        .sort(["session_id", "created_at", "message_id"], descending=[False, True, True])
        .with_columns(
            pl.col("tokens").cum_sum().over("session_id").alias("running"),
            pl.int_range(pl.len()).over("session_id").alias("rank"),
        )
    )
    kept = newest_first.filter((pl.col("running") <= budget) | (pl.col("rank") == 0)).with_columns(
        (pl.col("tokens") > budget).alias("truncated")
    )
    oversized = kept.filter(pl.col("truncated"))
    if oversized.height:  # rare: only a newest message larger than the whole budget
        cut = oversized.select(
            "message_id",
            pl.Series("cut", [truncate_to_budget(t or "", budget) for t in oversized.get_column("content")]),
        )
        kept = (
            kept.join(cut, on="message_id", how="left")
            .with_columns(pl.coalesce("cut", "content").alias("content"))
            .drop("cut")
            .with_columns(
                pl.when(pl.col("truncated"))
                .then(token_estimate_expr("content"))
                .otherwise("tokens")
                .alias("tokens")
            )
        )
    contexts = (
        kept.sort(["session_id", "created_at", "message_id"])
        .group_by("session_id", maintain_order=True)
        .agg(
            pl.col("customer_id").first(),
            pl.struct(
                "message_id",
                "role",
                "content",
                pl.col("created_at"),
                pl.col("tokens").alias("token_estimate"),
                "truncated",
            ).alias("messages"),
            pl.col("tokens").sum().alias("token_estimate"),
            pl.len().alias("message_count"),
        )
        .with_columns(_json_list("messages").alias("messages"))
        .join(usable, on="session_id", how="left")
        .select(SESSION_CONTEXTS_DTYPES.names())
        .cast(SESSION_CONTEXTS_DTYPES)  # type: ignore[arg-type]
        .sort("session_id")
    )
    return SessionContexts(contexts=contexts, mixed_customer_sessions=mixed, active_sessions=active.height)


# Only the messages of sessions that can be active at $1 (the same rule, pushed into the read so a
# warehouse of millions of messages is never loaded whole); ``session_contexts`` re-applies it.
ACTIVE_SESSION_MESSAGES_SQL = f"""
WITH active AS (
    SELECT session_id FROM raw.conversation_message WHERE created_at <= $1
    GROUP BY session_id
    HAVING max(created_at) >= $1 - INTERVAL {int(SESSION_IDLE.total_seconds())} SECOND
       AND min(created_at) >= $1 - INTERVAL {int(SESSION_MAX_AGE.total_seconds())} SECOND
)
SELECT m.message_id, m.session_id, m.customer_id, m.role, m.content, m.created_at
FROM raw.conversation_message m SEMI JOIN active USING (session_id)
WHERE m.created_at <= $1
"""
