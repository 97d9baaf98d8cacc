"""Evaluation, benchmarks and batch replay (not collected by pytest)."""
