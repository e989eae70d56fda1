"""The task family's analysis stage modules."""
