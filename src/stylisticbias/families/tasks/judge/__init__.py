"""The task family's judge stage modules."""
