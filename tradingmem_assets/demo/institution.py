"""Institution runs, their six role outputs each, and methodology injections.

Institution: 30 METHODOLOGY_TEMPLATES are all proposed by the first runs (three per run, popular
ones first) before any run cites them; later analyst/bull/bear outputs re-propose them with
paraphrased descriptions (exact dedup-key merges), re-propose a template's exact description under
another timeframe (a TF-IDF merge of the same direction), and carry a few invalid proposals
(primary_signal "astrology", timeframe "15m", a depends_on naming a later phase, a missing phase, a
cycle) and prompt-injection proposals. "Buy BTC at support" and "Sell BTC at support" share their
wording but not their direction. Scheduled runs mostly cite a popular template of their asset class
(_POPULAR); the portfolio manager's action is right in hindsight (1/7/30-day ladder) with the
template's _P_CORRECT, so BTC trend ride, Alt breakout and Quality value can graduate, Funding
squeeze long cannot, and Index trend filter turns bad in 2024 (demotion). Some runs cite
BOGUS_METHODOLOGY_IDS, never proposed. A few risk/trader outputs have confidence 1.7 or action
"yolo": landing accepts them, the methodology stage must reject them.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tradingmem_assets.defs.learning.role_outputs import ROLE_OUTPUT_SCHEMA_NAMES
from tradingmem_assets.demo.clock import _AS_OF, _DAY, _epoch_day, _t
from tradingmem_assets.demo.frames import _cat, _choice, _dt, _ids, _null_where, _pick, _rng
from tradingmem_assets.demo.methodologies import (
    BOGUS_METHODOLOGY_IDS,
    JUNE_TEMPLATE,
    METHODOLOGY_TEMPLATES,
    _proposal_table,
    _special_proposals,
    june_proposal_index,
    special_proposal_index,
)
from tradingmem_assets.demo.prices import SYMBOLS, _Book
from tradingmem_assets.demo.schedule import SCHEDULE_POPULAR, SCHEDULE_SPECIALS, schedule_runs
from tradingmem_assets.demo.tables import _count
from tradingmem_assets.lib.vocabulary import INSTITUTION_ACTIONS, INSTITUTION_RUN_KINDS

# popular templates by asset class: (template index, share of that class's runs citing it first)
_POPULAR = {
    "crypto_major": ((0, 0.6), (3, 0.2)),
    "crypto_alt": ((5, 0.7),),
    "equity": ((10, 0.65),),
    "index": ((15, 0.7),),
}
# how often the portfolio manager gets it right when a run leans on the template (default 0.5)
_P_CORRECT = {0: 0.97, 3: 0.3, 5: 0.95, 10: 0.97, len(METHODOLOGY_TEMPLATES): 0.97}  # last: JUNE_TEMPLATE
_DECAY_TEMPLATE, _DECAY_AT = 15, _t(2024, 1, 1)  # graduates in 2023, then turns bad (demotion)
_PROPOSAL_ORDER = (0, 3, 5, 10, 15) + tuple(i for i in range(30) if i not in (0, 3, 5, 10, 15))
_INJECT_FROM = _t(2023, 10, 1)  # popular templates are injected once they had time to graduate
_RUN_SYMBOLS = ("BTCUSD", "ETHUSD", "SOLUSD", "AAPLX", "MSFTX", "MKTIDX")
_RUN_SYMBOL_P = (0.25, 0.2, 0.15, 0.15, 0.15, 0.1)
_RUN_ASSET_CLASS = ("crypto_major", "crypto_major", "crypto_alt", "equity", "equity", "index")
_OUTPUT_ROLES = tuple(ROLE_OUTPUT_SCHEMA_NAMES)  # each role's output has its declared schema
_N_SPECIAL = len(_special_proposals())


def _institution(scale: float, seed: int, book: _Book) -> dict[str, pl.DataFrame]:
    """The 18-month history (scale-sized), then the last month's daily schedule (fixed size, so the
    first audit at the anchor has its window full at every scale; demo/schedule.py), merged in time."""
    rng = _rng(seed, "institution")
    n = _count("institution_runs", scale)
    kind = _choice(rng, n, (0.8, 0.12, 0.08))
    rsym = _choice(rng, n, _RUN_SYMBOL_P)
    day = rng.integers(_epoch_day(2023, 1, 1), _epoch_day(2024, 6, 20) + 1, n)
    started = day * _DAY + np.where(kind == 0, 300 + rng.integers(0, 300, n), rng.integers(0, _DAY, n))
    order = np.lexsort((np.arange(n), started))
    history = _runs(
        rng,
        book,
        kind[order],
        rsym[order],
        started[order],
        early=min(n, -(-len(METHODOLOGY_TEMPLATES) // 3)),
        invalid_outputs=max(2, round(scale * 10)),
        specials=np.arange(max(2, round(scale * 20)) * _N_SPECIAL) % _N_SPECIAL,
        odd_injections=4,
    )
    return _merge(history, _daily_schedule(seed, book))


def _daily_schedule(seed: int, book: _Book) -> dict[str, pl.DataFrame]:
    rng = _rng(seed, "institution_schedule")
    kind, rsym, started = schedule_runs(rng)
    return _runs(
        rng,
        book,
        kind,
        rsym,
        started,
        early=0,
        invalid_outputs=0,
        specials=np.array(SCHEDULE_SPECIALS),
        odd_injections=0,
        popular=SCHEDULE_POPULAR,
        june_from=int(started[0]) + _DAY,
    )


def _merge(*blocks: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Blocks merged in time; run, output and injection ids renumbered so they stay ordered by time."""
    runs = pl.concat(
        [b["institution_runs"].with_columns(pl.lit(i).alias("_block")) for i, b in enumerate(blocks)]
    ).with_row_index("_i")
    runs = runs.sort(["started_at", "_i"]).with_columns(_ids("ir_", runs.height, 7).alias("_new"))
    key = runs.select("_block", pl.col("run_id").alias("_old"), "_new")

    def renamed(table: str) -> pl.DataFrame:
        frame = pl.concat(
            [b[table].with_columns(pl.lit(i).alias("_block")) for i, b in enumerate(blocks)]
        ).with_row_index("_i")
        return frame.join(
            key, left_on=["_block", "run_id"], right_on=["_block", "_old"], how="left"
        ).with_columns(pl.col("_new").alias("run_id"))

    outputs = renamed("institution_role_outputs").sort(["_new", "_i"])
    outputs = outputs.with_columns(_ids("o_", outputs.height, 8).alias("output_id"))
    injections = renamed("methodology_injections").sort(["injected_at", "_i"])
    injections = injections.with_columns(_ids("inj_", injections.height, 7).alias("injection_id"))
    return {
        "institution_runs": runs.with_columns(pl.col("_new").alias("run_id")).select(
            blocks[0]["institution_runs"].columns
        ),
        "institution_role_outputs": outputs.select(blocks[0]["institution_role_outputs"].columns),
        "methodology_injections": injections.select(blocks[0]["methodology_injections"].columns),
    }


def _runs(
    rng: np.random.Generator,
    book: _Book,
    kind: np.ndarray,
    rsym: np.ndarray,
    started: np.ndarray,
    *,
    early: int,
    invalid_outputs: int,
    specials: np.ndarray,
    odd_injections: int,
    popular: dict = _POPULAR,
    june_from: int | None = None,
) -> dict[str, pl.DataFrame]:
    """Runs in time order with their six outputs and injections (provisional ids, see _merge).

    ``early`` first runs propose every template; ``specials`` are the special proposals (indices of
    _special_proposals) spread over the candidate outputs; JUNE_TEMPLATE (template index
    len(METHODOLOGY_TEMPLATES)) is cited only by runs started at or after ``june_from``.
    """
    n = len(started)
    nt = len(METHODOLOGY_TEMPLATES)
    run_id = _ids("ir_", n, 7)
    ac = np.array(_RUN_ASSET_CLASS)[rsym]

    # the best action in hindsight over the 1/7/30-day ladder, from the demo's own closes
    sidx = np.array([SYMBOLS.index(s) for s in _RUN_SYMBOLS])[rsym]
    p0 = book.close_at(sidx, started)
    votes = np.zeros((n, 3))
    for w in (1, 7, 30):
        r = book.close_at(sidx, np.minimum(started + w * _DAY, _AS_OF)) / p0 - 1
        votes += np.stack([r > 0.005, r < -0.005, np.abs(r) <= 0.005], axis=1)
    best = np.argmax(votes, axis=1)

    prim = rng.integers(0, nt, n)
    u = rng.random(n)
    for cls, pops in popular.items():
        acc = 0.0
        for tidx, share in pops:
            prim[(ac == cls) & (u >= acc) & (u < acc + share)] = tidx
            acc += share
    if june_from is not None:
        # JUNE_TEMPLATE fires only on a clear setup (right at every ladder window), once proposed
        clear_now = votes.max(axis=1) == 3
        prim[(ac == "equity") & clear_now & (started >= june_from)] = nt
    second = rng.integers(0, nt, n)
    has2 = rng.random(n) < 0.3
    # the first runs propose every template (popular ones first, three per run) and cite only those
    for i in range(early):
        proposed = _PROPOSAL_ORDER[: 3 * (i + 1)]
        if prim[i] not in proposed:
            prim[i] = _PROPOSAL_ORDER[3 * i]
        has2[i] &= second[i] in proposed
    has2 &= second != prim
    p_correct = np.full(n, 0.5)
    for tidx, p in _P_CORRECT.items():
        p_correct[prim == tidx] = p
    p_correct[prim == _DECAY_TEMPLATE] = np.where(started[prim == _DECAY_TEMPLATE] < _DECAY_AT, 0.97, 0.1)
    pm_action = np.where(rng.random(n) < p_correct, best, rng.integers(0, 3, n))
    bogus = rng.integers(0, len(BOGUS_METHODOLOGY_IDS), n)
    hasb = rng.random(n) < 0.05
    tids = [t.methodology_id for t in (*METHODOLOGY_TEMPLATES, JUNE_TEMPLATE)]
    cited = _cat(
        '["',
        _pick(tids, prim),
        '"',
        pl.select(
            pl.when(pl.lit(pl.Series(has2)))
            .then(pl.lit(',"') + pl.lit(_pick(tids, second)) + '"')
            .otherwise(pl.lit(""))
        ).to_series(),
        pl.select(
            pl.when(pl.lit(pl.Series(hasb)))
            .then(pl.lit(',"') + pl.lit(_pick(BOGUS_METHODOLOGY_IDS, bogus)) + '"')
            .otherwise(pl.lit(""))
        ).to_series(),
        "]",
    )
    runs = pl.DataFrame(
        {
            "run_id": run_id,
            "started_at": _dt(started),
            "symbol": _pick(_RUN_SYMBOLS, rsym),
            "asset_class": _pick(_RUN_ASSET_CLASS, rsym),
            "kind": _pick(INSTITUTION_RUN_KINDS, kind),
        }
    )

    # six outputs per run; analyst, trader and portfolio manager cite the run's methodologies
    no = n * 6
    ri = np.repeat(np.arange(n), 6)
    role = np.tile(np.arange(6), n)
    pm = pm_action[ri]
    rand = rng.integers(0, 3, no)
    agree = rng.random(no)
    action = np.select(
        [role == 5, role == 4, role == 1, role == 2],
        [
            pm,
            np.where(agree < 0.85, pm, rand),
            np.where(agree < 0.7, 0, rand),
            np.where(agree < 0.7, 1, rand),
        ],
        np.where(agree < 0.6, pm, rand),
    )
    # a few risk/trader outputs break their schema (the methodology stage rejects them, landing keeps them)
    confidence = np.round(rng.uniform(0.35, 0.95, no), 2)
    if invalid_outputs:
        broken = rng.choice(
            np.flatnonzero(np.isin(role, [3, 4]) & (ri >= early)), size=2 * invalid_outputs, replace=False
        )
        confidence[broken[:invalid_outputs]] = 1.7
        action[broken[invalid_outputs:]] = len(INSTITUTION_ACTIONS)  # "yolo"
    cites = np.isin(role, [0, 4, 5])
    cited_col = pl.select(
        pl.when(pl.lit(pl.Series(cites))).then(pl.lit(cited.gather(ri))).otherwise(pl.lit("[]"))
    ).to_series()

    table = _proposal_table()
    variant0 = 4 * nt
    prop = np.full(no, -1)
    first = (np.arange(nt) // 3) * 6 + np.arange(nt) % 3  # analyst, bull, bear of the first runs
    prop[first[first < no]] = np.array(_PROPOSAL_ORDER)[first < no] * 4
    cand = np.isin(role, [0, 1, 2]) & (ri >= early)
    u = rng.random(no)
    weights = np.ones(nt)
    weights[list(_PROPOSAL_ORDER[:5])] = 3.0
    tmpl = _choice(rng, no, weights)
    take = cand & (u < 0.06)
    prop[take] = (tmpl * 4 + rng.integers(0, 4, no))[take]
    take = cand & (u >= 0.06) & (u < 0.068)
    prop[take] = (variant0 + tmpl)[take]
    free = np.flatnonzero(cand & (prop < 0))
    slots = np.sort(rng.choice(free, size=min(len(free), len(specials)), replace=False))
    prop[slots] = special_proposal_index(0) + specials[: len(slots)]
    if june_from is not None:  # the schedule's first run's analyst proposes JUNE_TEMPLATE
        prop[0] = june_proposal_index(0)
    outputs = pl.DataFrame(
        {
            "output_id": _ids("o_", no, 8),
            "run_id": run_id.gather(ri),
            "role": _pick(_OUTPUT_ROLES, role),
            "schema": _pick(tuple(ROLE_OUTPUT_SCHEMA_NAMES.values()), role),
            "action": _pick(INSTITUTION_ACTIONS + ("yolo",), action),
            "confidence": confidence,
            "cited_methodology_ids": cited_col,
            "proposed_methodology": _null_where(_pick(table, np.maximum(prop, 0)), prop < 0),
        }
    )

    # injections: graduated-looking popular templates in later scheduled runs whose setup was clear
    # (the best action was right at every ladder window), plus a few dubious ones
    popular = np.isin(prim, _PROPOSAL_ORDER[:5])
    clear = votes.max(axis=1) == 3
    inj = np.flatnonzero((kind == 0) & (started >= _INJECT_FROM) & popular & clear)
    sched = np.flatnonzero(kind == 0)
    odd = np.sort(rng.choice(sched, size=min(len(sched), odd_injections), replace=False))
    inj_run = np.r_[inj, odd]
    odd_ids = [BOGUS_METHODOLOGY_IDS[0], BOGUS_METHODOLOGY_IDS[1], tids[8], tids[22]][: len(odd)]
    inj_mid = pl.concat([_pick(tids, prim[inj]), pl.Series("", odd_ids, pl.String)])
    inj_at = started[inj_run] + rng.integers(1, 30, len(inj_run))
    io_ = np.lexsort((np.arange(len(inj_run)), inj_at))
    injections = pl.DataFrame(
        {
            "injection_id": _ids("inj_", len(inj_run), 7),
            "run_id": run_id.gather(inj_run[io_]),
            "methodology_id": inj_mid.gather(io_),
            "injected_at": _dt(inj_at[io_]),
        }
    )
    return {
        "institution_runs": runs,
        "institution_role_outputs": outputs,
        "methodology_injections": injections,
    }
