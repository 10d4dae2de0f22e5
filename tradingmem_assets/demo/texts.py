"""The demo world's fixed texts, read once from ``texts.toml`` next to this module: decision
phrasings, conversation replies, legacy role memory, the knowledge base, methodology templates and
what the roles of roles.yaml trade in the demo."""

from __future__ import annotations

import tomllib
from importlib import resources

TEXTS: dict = tomllib.loads(resources.files(__package__).joinpath("texts.toml").read_text(encoding="utf-8"))
