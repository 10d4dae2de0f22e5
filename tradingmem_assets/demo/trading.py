"""The trading chain: decisions, previews, consumptions, executions, fills, positions, market events and
evaluation promotions, one seeded stream, laid out so each DECISION_KINDS case is present.

Decisions are dated on bar days (13:00-20:45 UTC, before the 21:00 close) and ordered by time, so ids
increase with decided_at. Fills sit near the last close at or before the execution; positions close
after the role's horizon unless open or liquidated. macro_rates learns from its lessons: from
September 2017 most of its decisions wait for a clear rate view (efficacy.py), so its lessons help;
the other roles decide as they always did.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tradingmem_assets.demo.clock import _AS_OF, _DAY, _HOUR, _epoch_day, _t
from tradingmem_assets.demo.decision_kinds import _K, DECISION_KINDS, KIND_REASONS, _kind_counts
from tradingmem_assets.demo.decision_text import _decision_text
from tradingmem_assets.demo.efficacy import learned_decisions
from tradingmem_assets.demo.frames import (
    _choice,
    _cumcount,
    _dt,
    _group_cumsum,
    _ids,
    _null_where,
    _pick,
    _rng,
)
from tradingmem_assets.demo.market_events import _market_events
from tradingmem_assets.demo.prices import SYMBOLS, _Book, _price_bars
from tradingmem_assets.demo.roles import (
    _ROLE_P,
    _ROLES,
    _SKILLS,
    _UNKNOWN_ROLES,
    EVIDENCE_KINDS,
    PROFILES,
    _evidence_json_table,
)
from tradingmem_assets.demo.tables import DEMO_SEED, _count

_MARKETS = ("spot", "perp", "option")
_SOURCES = (
    "manual_agent",
    "manual_external",
    "autopilot",
    "strategy_studio",
    "xstrategy",
    "workflow",
    "unknown",
    None,
)
_SCENARIOS = ("earnings_season", "rate_decision", "breakout", "range_bound", "high_volatility", None)
_SCENARIO_P = (0.15, 0.12, 0.15, 0.15, 0.13, 0.30)
_DECISION_RANGE = {"GOOG": ((2011, 1, 3), (2013, 1, 15)), "EURUSD": ((2017, 6, 1), (2018, 1, 5))}
_SYNTH_RANGE = ((2023, 1, 2), (2024, 5, 15))
_RECENT_RANGE = ((2024, 6, 24), (2024, 6, 28))  # even 7-day windows end after DEMO_AS_OF
_GAP_EXECUTIONS = {
    "gap_partial": ((2024, 2, 3, 14), (2024, 2, 4, 16)),
    "gap_insufficient": ((2024, 3, 9, 15), (2024, 3, 10, 13)),
}


def _order(sym: np.ndarray, direction: np.ndarray, account: np.ndarray, market: np.ndarray) -> dict:
    """The order columns a decision names and its execution carries out (the chain compares them)."""
    return {
        "symbol": _pick(SYMBOLS, sym),
        "direction": _pick(("long", "short"), direction),
        "account_id": "acct_" + pl.Series(account).cast(pl.String).str.zfill(3),
        "market": _pick(_MARKETS, market),
    }


def _trading(scale: float, seed: int, book: _Book) -> dict[str, pl.DataFrame]:
    rng = _rng(seed, "trading")
    n = _count("trading_decisions", scale)
    kind = rng.permutation(np.repeat(np.arange(len(DECISION_KINDS)), _kind_counts(n)))

    def is_(*names: str) -> np.ndarray:
        return np.isin(kind, [_K[x] for x in names])

    # roles, symbols, markets
    role = _choice(rng, n, _ROLE_P)
    crypto_only = is_("mismatch_symbol", "perp_source_null", "perp_source_unknown", "liquidated")
    role[crypto_only] = rng.choice([2, 3], size=int(crypto_only.sum()))
    recent = is_("recent")
    role[recent] = rng.choice([0, 1, 2, 3], size=int(recent.sum()))
    gap = is_("gap_partial", "gap_insufficient")
    role[gap] = 2
    sym = np.zeros(n, dtype=np.int64)
    market = np.zeros(n, dtype=np.int64)
    for r, spec in enumerate(_ROLES):
        m = role == r
        sidx = np.array([SYMBOLS.index(s) for s in spec.symbols])
        sym[m] = sidx[_choice(rng, int(m.sum()), spec.symbol_p)]
        midx = np.array([_MARKETS.index(x) for x in spec.markets])
        market[m] = midx[_choice(rng, int(m.sum()), spec.market_p)]
    goog_recent = recent & (sym == SYMBOLS.index("GOOG"))
    sym[goog_recent] = rng.choice(
        [SYMBOLS.index("AAPLX"), SYMBOLS.index("MSFTX")], size=int(goog_recent.sum())
    )
    sym[gap] = SYMBOLS.index("SOLUSD")
    market[gap] = 0
    market[is_("perp_source_null", "perp_source_unknown", "liquidated")] = 1
    direction = (rng.random(n) < 0.4).astype(np.int64)  # 0 long, 1 short
    account = rng.integers(1, 51, n)
    scenario = _choice(rng, n, _SCENARIO_P)

    # timing: a bar day, then a time of day before the 21:00 close
    day = np.zeros(n, dtype=np.int64)
    for i, s in enumerate(SYMBOLS):
        for sel, (lo, hi) in (
            (~recent & ~gap, _DECISION_RANGE.get(s, _SYNTH_RANGE)),
            (recent, _RECENT_RANGE),
        ):
            m = (sym == i) & sel
            if m.any():
                days = book.safe_days(s, _epoch_day(*lo), _epoch_day(*hi))
                day[m] = days[rng.integers(0, len(days), int(m.sum()))]
    # the role whose lessons help (SPEC section 17): its later decisions wait for a clear rate view
    last_day = {s: _epoch_day(*_DECISION_RANGE.get(s, _SYNTH_RANGE)[1]) for s in SYMBOLS}
    day, direction = learned_decisions(seed, book, role, sym, day, direction, ~recent & ~gap, last_day)
    decided = day * _DAY + rng.integers(13 * _HOUR, 20 * _HOUR + 45 * 60, n)
    delay = rng.integers(120, 4 * _HOUR, n)
    for name, stamps in _GAP_EXECUTIONS.items():
        where = np.flatnonzero(kind == _K[name])
        for j, w in enumerate(where):
            executed = _t(*stamps[j % len(stamps)])
            delay[w] = 1800
            decided[w] = executed - 1800

    # order by time so ids increase with decided_at
    order = np.lexsort((np.arange(n), decided))
    kind, role, sym, market, direction, account, scenario, decided, delay = (
        a[order] for a in (kind, role, sym, market, direction, account, scenario, decided, delay)
    )
    decision_id = _ids("d_", n, 7)
    has_preview = ~is_("no_preview_exec", "no_preview_none")
    preview_id = _null_where(_ids("p_", n, 7), ~has_preview)

    role_id = _pick(
        [r.role_id for r in _ROLES] + list(_UNKNOWN_ROLES) + [None],
        np.where(is_("unknown_role"), 5 + rng.integers(0, 2, n), np.where(is_("no_role"), 7, role)),
    )
    skill = np.array([_SKILLS.index(_ROLES[r].skill_id) for r in range(len(_ROLES))])[role]
    wrong = is_("wrong_skill")
    skill[wrong] = (skill[wrong] + rng.integers(1, 3, int(wrong.sum()))) % 3

    # evidence: the role's required kinds plus plausible extras; some decisions miss one required kind
    bit = {k: 1 << i for i, k in enumerate(EVIDENCE_KINDS)}
    mask = np.zeros(n, dtype=np.int64)
    missing_evidence = rng.random(n) < 0.12
    drop_which = rng.integers(0, 2, n)
    for r, spec in enumerate(_ROLES):
        m = role == r
        for j, k in enumerate(spec.required_evidence):
            mask[m & ~(missing_evidence & (drop_which == j))] |= bit[k]
        for k in spec.extras:
            mask[m & (rng.random(n) < 0.2)] |= bit[k]
    evidence = _pick(_evidence_json_table(), mask)

    text = _decision_text(rng, role, direction, sym)

    decisions = pl.DataFrame(
        {
            "decision_id": decision_id,
            "role_id": role_id,
            "skill_id": _pick(_SKILLS, skill),
            **_order(sym, direction, account, market),
            "scenario": _pick(_SCENARIOS, scenario),
            "decision_text": text,
            "evidence": evidence,
            "preview_id": preview_id,
            "decided_at": _dt(decided),
        }
    )
    previews = pl.DataFrame(
        {
            "preview_id": _ids("p_", n, 7),
            "decision_id": decision_id,
            "created_at": _dt(decided + rng.integers(5, 90, n)),
        }
    ).filter(pl.Series(has_preview))

    # executions: none for unexecuted kinds, two for a preview consumed twice
    n_exec = np.where(
        is_("no_preview_none", "preview_not_consumed"), 0, np.where(is_("preview_consumed_multiple"), 2, 1)
    )
    ed = np.repeat(np.arange(n), n_exec)
    ne = len(ed)
    ek = kind[ed]
    rank = _cumcount(n_exec)
    executed = decided[ed] + delay[ed] + rank * rng.integers(60, 1800, ne)
    e_sym, e_dir, e_acct, e_mkt = sym[ed].copy(), direction[ed].copy(), account[ed].copy(), market[ed].copy()
    m = ek == _K["mismatch_symbol"]
    crypto = np.array([SYMBOLS.index(s) for s in ("BTCUSD", "ETHUSD", "SOLUSD")])
    e_sym[m] = crypto[(np.searchsorted(crypto, e_sym[m]) + 1) % 3]
    m = ek == _K["mismatch_direction"]
    e_dir[m] = 1 - e_dir[m]
    m = ek == _K["mismatch_account_id"]
    e_acct[m] = e_acct[m] % 50 + 1
    m = ek == _K["mismatch_market"]
    e_mkt[m] = np.where(np.isin(role[ed][m], [2, 3]), 1 - np.minimum(e_mkt[m], 1), 2)
    exec_decision = decision_id.gather(ed)
    mm = ek == _K["mismatch_decision_id"]
    exec_decision = pl.select(
        pl.when(pl.lit(pl.Series(mm))).then(pl.lit(exec_decision) + "_stale").otherwise(pl.lit(exec_decision))
    ).to_series()
    src = np.zeros(ne, dtype=np.int64)
    for name, code in (
        ("external_unverified", 1),
        ("external_verified", 1),
        ("autopilot", 2),
        ("strategy_studio", 3),
        ("xstrategy", 4),
        ("workflow", 5),
        ("perp_source_unknown", 6),
        ("perp_source_null", 7),
    ):
        src[ek == _K[name]] = code
    verified = ~np.isin(ek, [_K["external_unverified"], _K["perp_source_null"], _K["perp_source_unknown"]])
    automated = np.isin(
        ek,
        [_K[x] for x in ("autopilot", "strategy_studio", "xstrategy", "workflow", "automation_flag_manual")],
    )
    e_has_preview = has_preview[ed]
    execution_id = _ids("x_", ne, 7)
    executions = pl.DataFrame(
        {
            "execution_id": execution_id,
            "decision_id": exec_decision,
            "preview_id": _null_where(_ids("p_", n, 7).gather(ed), ~e_has_preview),
            **_order(e_sym, e_dir, e_acct, e_mkt),
            "source": _pick(_SOURCES, src),
            "source_verified": verified,
            "automation_flag": automated,
            "executed_at": _dt(executed),
        }
    )
    consumptions = pl.DataFrame(
        {
            "consumption_id": _ids("pc_", int(e_has_preview.sum()), 7),
            "preview_id": executions["preview_id"].filter(pl.Series(e_has_preview)),
            "execution_id": execution_id.filter(pl.Series(e_has_preview)),
            "consumed_at": _dt(executed[e_has_preview]),
        }
    )

    # fills near the last close at or before the execution
    ref = book.close_at(e_sym, executed)
    notional = np.exp(rng.normal(np.log(10_000.0), 0.8, ne))
    n_fill = 1 + _choice(rng, ne, (0.5, 0.3, 0.2))
    fe = np.repeat(np.arange(ne), n_fill)
    w = rng.uniform(0.2, 1.0, len(fe))
    qty = np.round((notional / ref)[fe] * w / np.bincount(fe, w)[fe], 6)
    price = np.round(ref[fe] * (1 + rng.normal(0.0, 0.0015, len(fe))), 6)
    fee = np.round(np.maximum(qty * price * rng.uniform(0.0002, 0.001, len(fe)), 0.01), 6)
    filled = executed[fe] + _group_cumsum(rng.integers(0, 90, len(fe)).astype(float), n_fill).astype(np.int64)
    fills = pl.DataFrame(
        {
            "fill_id": _ids("f_", len(fe), 8),
            "execution_id": execution_id.gather(fe),
            "qty": qty,
            "price": price,
            "fee": fee,
            "filled_at": _dt(filled),
        }
    )

    # one position per execution, closed after the role's horizon unless open or liquidated
    qty_tot = np.bincount(fe, qty, minlength=ne)
    vwap = np.bincount(fe, qty * price, minlength=ne) / qty_tot
    fee_tot = np.bincount(fe, fee, minlength=ne)
    horizon = np.array([r.maturity_days for r in _ROLES])[role[ed]]
    closed = executed + horizon * _DAY + rng.integers(_HOUR, 72 * _HOUR, ne)
    liq = ek == _K["liquidated"]
    closed[liq] = executed[liq] + rng.integers(_DAY, (horizon[liq] - 1) * _DAY)
    status = np.where(liq, 2, 1)  # 0 open, 1 closed, 2 liquidated
    is_open = (ek == _K["open_position"]) | (closed > _AS_OF)
    status[is_open] = 0
    sign = np.where(e_dir == 0, 1.0, -1.0)
    pnl = sign * (book.close_at(e_sym, closed) - vwap) * qty_tot - fee_tot
    pnl[liq] = -notional[liq] * rng.uniform(0.2, 0.6, int(liq.sum())) - fee_tot[liq]
    positions = pl.DataFrame(
        {
            "position_id": _ids("pos_", ne, 7),
            "execution_id": execution_id,
            "status": _pick(("open", "closed", "liquidated"), status),
            "opened_at": _dt(executed),
            "closed_at": _dt(closed, null=is_open),
            "realized_pnl": _null_where(pl.Series("", np.round(pnl, 2)), is_open),
        }
    )

    # market events: exogenous shocks inside some clean decisions' windows, scheduled earnings/rate events
    first_exec = np.full(n, -1)
    first_exec[ed[rank == 0]] = np.flatnonzero(rank == 0)
    clean_idx = np.flatnonzero(kind == _K["clean"])
    horizon_of = np.array([r.maturity_days for r in _ROLES])[role]
    events, exo_window = _market_events(
        rng, clean_idx, executed[first_exec], horizon_of, sym, first_exec >= 0
    )

    # promotions: version 1 of a non-primary profile for a few settled clean decisions
    profile_ids = [p[0] for p in PROFILES]
    old_clean = clean_idx[executed[first_exec[clean_idx]] + 40 * _DAY < _AS_OF]
    n_promo = min(len(old_clean), max(4, round(scale * 200)))
    promo_dec = np.sort(rng.choice(old_clean, size=n_promo, replace=False))
    primary = np.array([profile_ids.index(_ROLES[r].primary_profile) for r in role[promo_dec]])
    promo_profile = (primary + rng.integers(1, 3, n_promo)) % 3
    promotions = pl.DataFrame(
        {
            "decision_id": decision_id.gather(promo_dec),
            "profile_id": _pick(profile_ids, promo_profile),
            "run_version": np.ones(n_promo, dtype=np.int64),
            "promoted_at": _dt(executed[first_exec[promo_dec]] + 35 * _DAY),
            "promoted_by": ["risk_ops"] * n_promo,
        }
    )

    kinds_frame = pl.DataFrame(
        {
            "decision_id": decision_id,
            "kind": _pick(list(DECISION_KINDS), kind),
            "expected_reasons": pl.Series(
                "", [list(KIND_REASONS[k]) for k in DECISION_KINDS], dtype=pl.List(pl.String)
            ).gather(kind),
            "missing_evidence": missing_evidence,
            "exogenous_event": exo_window,
            "promoted_profile": _null_where(
                _pick(profile_ids, np.zeros(n, dtype=np.int64)), np.ones(n, dtype=bool)
            ),
        }
    )
    if n_promo:
        promoted = np.full(n, -1)
        promoted[promo_dec] = promo_profile
        kinds_frame = kinds_frame.with_columns(
            _null_where(_pick(profile_ids, np.maximum(promoted, 0)), promoted < 0).alias("promoted_profile")
        )

    return {
        "trading_decisions": decisions,
        "trade_previews": previews,
        "preview_consumptions": consumptions,
        "trade_executions": executions,
        "trade_fills": fills,
        "position_lifecycles": positions,
        "market_events": events,
        "evaluation_promotions": promotions,
        "_decision_kinds": kinds_frame,
    }


def demo_decision_kinds(scale: float = 0.01, seed: int = DEMO_SEED) -> pl.DataFrame:
    """Every demo decision's kind, the SPEC §5 reasons it is built to produce and reflection flags.

    Columns: decision_id, kind, expected_reasons (list), missing_evidence (a required evidence kind
    was dropped), exogenous_event (an exogenous market event lies inside its window),
    promoted_profile (profile promoted through evaluation_promotions, else null).
    """
    return _trading(scale, seed, _Book(_price_bars(seed)))["_decision_kinds"]
