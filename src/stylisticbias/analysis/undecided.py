"""Undecided (pruned) mass: how much there is, what was excluded, and how far it can move SBS.

``exact``/``sampled`` decoding leave *undecided* mass (answers pruned before the parser decided)
out of phi. The scores stage records it per row (``undecided``), nulls rows above
``judge.undecided_max`` (``undecided_excluded``) and gives each delta the range it could take had
the undecided mass of both images gone either way (``delta_low``/``delta_high``). This module turns
that into ``undecided_mass.csv``: per model (``category`` = ``all``) and per model x category,
the mean and max undecided mass, the rows excluded, and the SBS with the interval
``[sbs_low, sbs_high]`` that the undecided mass cannot push it out of (mean of the per-row
ranges over the same rows the SBS uses); ``max_shift`` = the larger distance of a bound from the
SBS.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

UNDECIDED_COLUMNS = ("undecided", "undecided_excluded", "delta_low", "delta_high")


def undecided_table(scores: pd.DataFrame) -> pd.DataFrame:
    """``undecided_mass.csv`` from score rows (tables without the columns: zero undecided mass).

    Computed model by model (a model whose table lacks the columns -- all null after a concat
    with newer tables -- reads as zero undecided mass), then ordered by :func:`order_rows`; so
    the rows of a set of models equal the ordered concatenation of each model's own rows (what
    the streaming analysis, :mod:`stylisticbias.analysis.per_model`, builds).
    """
    models = scores["model"].astype(str)
    return order_rows([_model_rows(g) for _, g in scores.groupby(models, sort=True, observed=True)])


def order_rows(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate per-model ``undecided_mass`` rows in the table's order: every model's
    ``category == "all"`` row (by model), then the model x category rows (by model, category)."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=_COLUMNS)
    df = pd.concat(frames, ignore_index=True)
    df["_cat"] = (df["category"] != "all").astype(int)
    df = df.sort_values(["_cat", "model", "category"], kind="mergesort")
    return df.drop(columns="_cat").reset_index(drop=True)


_COLUMNS = ["model", "category", "undecided_mean", "undecided_max", "n_rows", "n_excluded",
            "sbs", "sbs_low", "sbs_high", "max_shift", "n"]  # fmt: skip


def _model_rows(scores: pd.DataFrame) -> pd.DataFrame:
    df = scores.copy()
    if "undecided" not in df.columns or df["undecided"].isna().all():
        df["undecided"] = 0.0
        df["undecided_excluded"] = False
    if "delta_low" not in df.columns or df["delta_low"].isna().all():
        df["delta_low"] = df["delta"]
        df["delta_high"] = df["delta"]
    df["model"] = df["model"].astype(str)
    var = df[~df["is_base"].astype(bool)]
    rows = []
    for (model, cat), g in [
        *(((m, "all"), g) for m, g in df.groupby("model", sort=True)),
        *(((m, str(c)), g) for (m, c), g in var.groupby(["model", var["category"].astype(str)],
                                                         sort=True)),
    ]:  # fmt: skip
        d = g[~g["is_base"].astype(bool) & g["delta"].notna()]
        sbs = float(d["delta"].mean()) if len(d) else np.nan
        lo = float(d["delta_low"].mean()) if len(d) else np.nan
        hi = float(d["delta_high"].mean()) if len(d) else np.nan
        rows.append(
            {
                "model": model,
                "category": cat,
                "undecided_mean": float(g["undecided"].mean()),
                "undecided_max": float(g["undecided"].max()),
                "n_rows": len(g),
                "n_excluded": int(g["undecided_excluded"].astype(bool).sum()),
                "sbs": sbs,
                "sbs_low": lo,
                "sbs_high": hi,
                "max_shift": float(np.nanmax([sbs - lo, hi - sbs])) if len(d) else np.nan,
                "n": len(d),
            }
        )
    return pd.DataFrame(rows, columns=_COLUMNS)
