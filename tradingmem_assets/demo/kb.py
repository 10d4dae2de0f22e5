"""The knowledge base advisors and customers search: fixed public and internal documents (not scaled)."""

from __future__ import annotations

import polars as pl

from tradingmem_assets.demo.frames import _ids
from tradingmem_assets.demo.texts import TEXTS

_KB = tuple((d["title"], d["visibility"], d["body"]) for d in TEXTS["kb_documents"])


def _kb_documents() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "doc_id": _ids("kb_", len(_KB), 3),
            "title": [d[0] for d in _KB],
            "visibility": [d[1] for d in _KB],
            "body": [d[2] for d in _KB],
        }
    )
