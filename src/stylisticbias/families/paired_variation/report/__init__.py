"""The paired-variation family's report stage modules."""
