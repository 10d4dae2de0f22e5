"""tradingmem: learned, auditable memory for an AI trading agent and a wealth advisor, as Dagster assets."""
