"""The knowledge base advisors and customers search: fixed public and internal documents (not scaled)."""

from __future__ import annotations

import polars as pl

from tradingmem_assets.demo.frames import _ids

# fmt: off
_KB = (  # title, visibility, body
    ("Understanding risk levels R1-R5", "public",
     "Every product carries a risk level from R1 (lowest) to R5 (highest). Your investor type, C1 to C5, "
     "decides which levels are suitable."),
    ("How money market funds work", "public",
     "Money market funds invest in short-term, high-quality debt; returns are modest, liquidity is daily."),
    ("Bond ladders explained", "public",
     "A ladder spreads maturities so that part of the portfolio matures every year, reducing reinvestment "
     "risk."),
    ("What is an index fund?", "public", "An index fund tracks a market index such as MKTIDX at low cost."),
    ("Crypto assets: what to know", "public",
     "Crypto assets are volatile, can lose most of their value and are only suitable for C4 and C5 "
     "investors."),
    ("Rebalancing your portfolio", "public",
     "Rebalancing sells what has grown and buys what has shrunk, keeping the mix you chose, e.g. \"60/40\"."),
    ("Fees and charges", "public",
     "Subscription, redemption and management fees are shown before every order."),
    ("Investment horizons", "public",
     "Short (< 1 year), medium (1-3 years), long (> 3 years): match products to when you need the money."),
    ("Questionnaire FAQ", "public",
     "The suitability questionnaire is valid for 12 months; retake it when your situation changes."),
    ("理财产品风险等级说明", "public", "产品风险等级分为R1至R5，请根据您的风险承受能力选择。"),
    ("基金定投入门", "public", "定期定额投资可以平滑成本，适合长期投资者。"),
    ("Protecting your account", "public", "We never ask for your password, one-time codes or seed phrase."),
    ("Tax on investment income", "public", "Interest, dividends and capital gains may be taxed differently."),
    ("Internal: advisor commission schedule", "internal",
     "Commission tiers by product family; not for customers."),
    ("Internal: suitability override procedure", "internal",
     "Overrides need a second approver and a recorded reason, within 24 hours."),
    ("Internal: complaint escalation", "internal", "Escalate within 2 business days; log the case id."),
    ("Internal: product shelf review Q2", "internal", "Products under review: prd_0017, prd_0042, prd_0133."),
    ("内部：客户分层运营手册", "internal", "高净值客户由资深顾问对接，每季度回访。"),
    ("Internal: crypto desk limits", "internal", "Desk limits per account: 5% of AUM, perps only for C5."),
    ("Internal: incident runbook", "internal",
     "If the advisor app is down, switch to the web portal and notify ops."),
)
# fmt: on


def _kb_documents() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "doc_id": _ids("kb_", len(_KB), 3),
            "title": [d[0] for d in _KB],
            "visibility": [d[1] for d in _KB],
            "body": [d[2] for d in _KB],
        }
    )
