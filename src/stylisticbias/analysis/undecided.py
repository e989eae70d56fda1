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
    names, codes = _labels(scores["model"])
    return order_rows([_model_rows(scores, name, codes == i) for i, name in enumerate(names)])


def _labels(col: pd.Series) -> tuple[list[str], np.ndarray]:
    """A column's distinct values present, as sorted strings, and each row's index into them
    (-1 where null: a groupby drops those rows); categorical columns from their codes, without
    converting every row to a string."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        cc = col.cat.codes.to_numpy().astype(np.int64)
        cats = np.asarray(col.cat.categories.astype(str), dtype=object)
        strs, remap = np.unique(cats, return_inverse=True)
        codes = np.where(cc >= 0, remap[np.maximum(cc, 0)], -1)
        used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(strs)))
        back = np.full(len(strs) + 1, -1, dtype=np.int64)  # (the last entry: null rows)
        back[used] = np.arange(len(used))
        return [str(strs[i]) for i in used], back[codes]
    codes, uniq = pd.factorize(col.astype(str), sort=True)
    return [str(x) for x in uniq], codes.astype(np.int64)


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


_COLUMNS = [
    "model",
    "category",
    "undecided_mean",
    "undecided_max",
    "n_rows",
    "n_excluded",
    "sbs",
    "sbs_low",
    "sbs_high",
    "max_shift",
    "n",
]


def _model_rows(scores: pd.DataFrame, model: str, rows: np.ndarray) -> pd.DataFrame:
    """One model's rows (``rows``: its mask in ``scores``): all of them, then one per category
    of its variation rows (categories sorted as strings). Each statistic is the pandas reduction
    of the same values, in the same order, that a groupby over a copy of the rows gives."""

    def recorded(name: str) -> bool:  # present, and not null on every one of the model's rows
        return name in scores.columns and not scores[name].isna().to_numpy()[rows].all()

    n = len(scores)
    if recorded("undecided"):
        und = scores["undecided"].to_numpy()
        excl = scores["undecided_excluded"].astype(bool).to_numpy()
    else:
        und, excl = np.zeros(n), np.zeros(n, dtype=bool)
    delta = scores["delta"].to_numpy()
    low, high = (
        (scores["delta_low"].to_numpy(), scores["delta_high"].to_numpy())
        if recorded("delta_low")
        else (delta, delta)
    )
    is_var = ~scores["is_base"].astype(bool).to_numpy()
    has_delta = scores["delta"].notna().to_numpy()
    groups: list[tuple[str, np.ndarray]] = [("all", rows)] if rows.any() else []
    var = rows & is_var
    if var.any():
        names, codes = _labels(scores["category"])
        for i, name in enumerate(names):  # sorted
            g = var & (codes == i)
            if g.any():
                groups.append((name, g))
    out = []
    for cat, g in groups:
        d = g & is_var & has_delta
        nd = int(d.sum())
        sbs = float(pd.Series(delta[d]).mean()) if nd else np.nan
        lo = float(pd.Series(low[d]).mean()) if nd else np.nan
        hi = float(pd.Series(high[d]).mean()) if nd else np.nan
        ug = pd.Series(und[g])
        out.append(
            {
                "model": model,
                "category": cat,
                "undecided_mean": float(ug.mean()),
                "undecided_max": float(ug.max()),
                "n_rows": int(g.sum()),
                "n_excluded": int(excl[g].sum()),
                "sbs": sbs,
                "sbs_low": lo,
                "sbs_high": hi,
                "max_shift": float(np.nanmax([sbs - lo, hi - sbs])) if nd else np.nan,
                "n": nd,
            }
        )
    return pd.DataFrame(out, columns=_COLUMNS)
