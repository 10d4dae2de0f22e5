"""Column descriptions of the operations tables: the data dictionary (docs/tables.md) and the column
schemas the assets declare, so the UI shows them before the first materialization."""

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import TableDoc

OPERATIONS_TABLE_DOCS = (
    TableDoc(
        tables.main_table("warehouse_runs"),
        "Runs that wrote the warehouse, with their as_of (learning runs move forward).",
        (
            ("run_id", "VARCHAR", "The Dagster run."),
            ("job_name", "VARCHAR", "The job."),
            ("kind", "VARCHAR", "learning or other."),
            ("as_of", "TIMESTAMP WITH TIME ZONE", "The run's time anchor."),
            ("started_at", "TIMESTAMP WITH TIME ZONE", "Wall clock at start."),
            ("finished_at", "TIMESTAMP WITH TIME ZONE", "Wall clock at end."),
            ("status", "VARCHAR", "ok or failed."),
        ),
    ),
)
