"""Pure domain logic: no Dagster import here, so every rule is fast to test and easy to read."""
