"""The annotation table (``data/annotations/<annotator>/annotations.parquet``), pandera-checked.

The schema lives with the other tables' in :mod:`stylisticbias.schemas` (the QA stage reads it).
"""

from __future__ import annotations

from stylisticbias.schemas import ANNOTATIONS

__all__ = ["ANNOTATIONS", "COLUMNS"]

COLUMNS = list(ANNOTATIONS.columns)
