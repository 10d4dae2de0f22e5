"""Column descriptions of the efficacy tables: the data dictionary (docs/tables.md) and the column
schemas the assets declare, so the UI shows them before the first materialization."""

from tradingmem_assets.defs.efficacy.verdicts import COLUMN_DESCRIPTIONS
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import TableDoc

EFFICACY_TABLE_DOCS = (
    TableDoc(
        tables.main_table("memory_efficacy"),
        "Win rates before vs after each lesson, graduation and injection, with Wilson intervals.",
        (
            ("subject_kind", "VARCHAR", COLUMN_DESCRIPTIONS["subject_kind"]),
            ("subject_id", "VARCHAR", COLUMN_DESCRIPTIONS["subject_id"]),
            ("role_id", "VARCHAR", COLUMN_DESCRIPTIONS["role_id"]),
            ("scope", "VARCHAR", COLUMN_DESCRIPTIONS["scope"]),
            ("before_n", "BIGINT", COLUMN_DESCRIPTIONS["before_n"]),
            ("before_wins", "BIGINT", COLUMN_DESCRIPTIONS["before_wins"]),
            ("before_win_rate", "DOUBLE", COLUMN_DESCRIPTIONS["before_win_rate"]),
            ("before_low", "DOUBLE", COLUMN_DESCRIPTIONS["before_low"]),
            ("before_high", "DOUBLE", COLUMN_DESCRIPTIONS["before_high"]),
            ("after_n", "BIGINT", COLUMN_DESCRIPTIONS["after_n"]),
            ("after_wins", "BIGINT", COLUMN_DESCRIPTIONS["after_wins"]),
            ("after_win_rate", "DOUBLE", COLUMN_DESCRIPTIONS["after_win_rate"]),
            ("after_low", "DOUBLE", COLUMN_DESCRIPTIONS["after_low"]),
            ("after_high", "DOUBLE", COLUMN_DESCRIPTIONS["after_high"]),
            ("mean_excess_before", "DOUBLE", COLUMN_DESCRIPTIONS["mean_excess_before"]),
            ("mean_excess_after", "DOUBLE", COLUMN_DESCRIPTIONS["mean_excess_after"]),
            ("verdict", "VARCHAR", COLUMN_DESCRIPTIONS["verdict"]),
            ("as_of", "TIMESTAMP WITH TIME ZONE", COLUMN_DESCRIPTIONS["as_of"]),
        ),
    ),
)
