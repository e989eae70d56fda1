"""Benchmarks that write machine-readable results to reports/bench/."""
