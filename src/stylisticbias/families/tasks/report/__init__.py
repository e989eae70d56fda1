"""The task family's report stage modules."""
