"""The analysis stage: scores -> the paper's tables, tests, bootstrap CIs and metrics."""
