"""Every table any protocol writes has its own file name: the StylisticBias, paired-variation,
task and SODA tables never share a CSV name (one protocol's table cannot overwrite or be
mistaken for another's)."""

from __future__ import annotations

from collections import Counter

from stylisticbias.analysis.table_registry import PAIRED_TABLES, TABLES
from stylisticbias.families.tasks.analysis.tables import TASK_TABLES
from stylisticbias.soda.tables import SODA_TABLES


def test_no_two_tables_share_a_file() -> None:
    files = [t.file for t in (*TABLES, *PAIRED_TABLES, *TASK_TABLES)]
    files += [f"{name}.csv" for name in SODA_TABLES]
    clash = sorted(f for f, n in Counter(files).items() if n > 1)
    assert clash == []
