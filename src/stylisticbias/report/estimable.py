"""What the analysis could not estimate on this image set, and why (the report's section).

The ``analyze`` stage never fails on a small or lopsided design: a cell that needs more data is
left empty (NaN, ``-`` in a paper-layout table) and a table with nothing to estimate is written
as its header. This module reads those outputs back and names each gap with its reason, so the
report says what is missing instead of silently showing a shorter table:

* VS of a dimension with fewer than two groups among the base faces (``vs_by_model``: ``vs``
  empty; ``n_groups`` says how many there were);
* a long table with no row: a cross-model table (``written: two_models``) when one model was
  judged, otherwise nothing on this image set that the table needs (its registry description
  says what: a fashion style, the tattoo, a demographic split...);
* a paper-layout table with no row.

The report's section (:func:`stylisticbias.report.markdown.not_estimable_section`) is left out
when everything was estimable (the full-grid demo).
"""

from __future__ import annotations

import math

import pandas as pd

from stylisticbias.analysis import table_registry as registry
from stylisticbias.report.inputs import ReportInputs
from stylisticbias.report.tables import PAPER_TABLES


def _vs_gaps(vs: pd.DataFrame | None) -> list[tuple[str, str]]:
    if vs is None or vs.empty or "vs" not in vs.columns:
        return []
    out = []
    for r in vs[vs["vs"].isna()].itertuples(index=False):
        k = getattr(r, "n_groups", float("nan"))
        groups = "?" if k is None or (isinstance(k, float) and math.isnan(k)) else int(k)
        out.append(
            (
                f"VS {r.model} / {r.dimension}",
                f"{groups} group(s) among the base faces; VS (a spread of group means) needs "
                "at least 2",
            )
        )
    return out


def not_estimable(inputs: ReportInputs) -> list[tuple[str, str]]:
    """``(what, why)`` for every cell and table the analysis left empty on this image set."""
    out = _vs_gaps(inputs.table("vs_by_model"))
    n_models = len(inputs.settings.models)
    for name, df in sorted(inputs.tables.items()):
        if not df.empty:
            continue
        spec = registry.REGISTRY.get(name)
        about = spec.description if spec else name
        if spec is not None and spec.written == "two_models" and n_models < 2:
            why = f"needs two or more judged models (this run judged {n_models})"
        else:
            why = f"no row: this image set has nothing it needs ({about})"
        out.append((f"table `{name}`", why))
    for t in PAPER_TABLES:
        wide = inputs.wide.get(t.wide)
        if wide is not None and wide.empty:
            out.append((t.title, "no estimable cell on this image set (its long table is empty)"))
    return out
