"""Building the face dataset: identity sampling -> base faces -> single-attribute variations."""
