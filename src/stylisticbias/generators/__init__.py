"""Image generators: base faces from a demographic spec, single-attribute edits of a base face."""
