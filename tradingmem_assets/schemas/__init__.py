"""Pandera (polars) schemas: every invariant the spec names, one module per domain."""
