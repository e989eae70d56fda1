"""Transcriptions of papers' published tables into the reference CSVs under ``conf/reference/``."""
