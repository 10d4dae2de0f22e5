"""The learning loop's Dagster wiring: learnings, methodologies, the reflection ladder, heartbeats."""

from tradingmem_assets.defs.learning.constants import LEARNING_ASSET_KEYS, LEARNING_GROUP, LEARNING_JOB_NAMES

__all__ = ["LEARNING_ASSET_KEYS", "LEARNING_GROUP", "LEARNING_JOB_NAMES"]
