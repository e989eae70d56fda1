"""Grouping the judgments by cell through one integer key (the scores' columnar engine).

:class:`Groups` numbers the (model, image, scenario) cells of a judgments table and reduces
columns per cell. The key columns become integer codes (a categorical's codes as read from
Parquet, or one factorisation) combined into one int64 key: no per-row string hashing. When
every cell is one run of rows (the judge stage writes its table sorted), reductions are
``np.add.reduceat`` over the runs -- what pandas' grouped ``sum``/``mean`` do for sorted groups;
otherwise the key is factorised once and pandas' grouped kernels run over it. Either way the
results equal ``groupby(KEYS, sort=False)`` to the last bit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: one score row per (model, image, scenario)
KEYS = ["model", "image_id", "scenario_id"]


class Groups:
    """Rows of a judgments table grouped by (model, image, scenario) through one integer key.

    The three key columns become integer codes (a categorical's codes as read from Parquet, or
    one factorisation) combined into one int64 key. When every group is one run of rows (the
    judge stage writes its table sorted), reductions are ``np.add.reduceat`` over the runs --
    what pandas' grouped ``sum``/``mean`` do for sorted groups; otherwise the key is factorised
    once and pandas' grouped kernels run over it. Either way the sums and means are those of
    ``groupby(["model", "image_id", "scenario_id"], sort=False)`` to the last bit, at a
    fraction of the cost. Groups are numbered in order of first appearance.
    """

    def __init__(self, rows: pd.DataFrame) -> None:
        n = len(rows)
        key = np.zeros(n, dtype=np.int64)
        for k in KEYS:  # the code ranges are small (models x images x scenarios)
            c = codes(rows[k])
            key = key * (int(c.max(initial=-1)) + 2) + (c + 1)
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if n else np.zeros(0, np.intp)
        self.labels: np.ndarray | None = None
        if len(np.unique(key[starts])) == len(starts):  # every group is one run
            self.starts = starts
            first = starts
            self.lengths = np.diff(starts, append=n)
        else:
            self.labels, uniques = pd.factorize(key, sort=False)
            first = np.full(len(uniques), n, dtype=np.int64)
            np.minimum.at(first, self.labels, np.arange(n, dtype=np.int64))
            self.lengths = np.bincount(self.labels, minlength=len(uniques))
        keys = rows[KEYS].iloc[first].reset_index(drop=True)
        for c in KEYS:  # categorical keys (read_judgments) leave as the strings they encode
            if isinstance(keys[c].dtype, pd.CategoricalDtype):
                keys[c] = keys[c].astype(keys[c].cat.categories.dtype)
        self.keys = keys

    def _runs(self, v: np.ndarray, how: str) -> np.ndarray | None:
        """pandas' reduction of sorted groups (``_reduceat_aggregate``); None where it would not
        take that path (NaN values)."""
        if v.dtype.kind == "f" and np.isnan(v).any():
            return None
        if how == "any":
            return np.logical_or.reduceat(v.astype(bool), self.starts)
        if how == "mean":
            return np.add.reduceat(v.astype(np.float64), self.starts) / self.lengths
        return np.add.reduceat(v.astype(np.int64) if v.dtype.kind in "ib" else v, self.starts)

    def reduce(self, **columns: tuple[pd.Series | np.ndarray, str]) -> dict[str, np.ndarray]:
        """Per-group reductions ``name=(values, "sum" | "mean" | "any")``; element i of each
        result is group i."""
        out: dict[str, np.ndarray] = {}
        rest: dict[str, tuple[np.ndarray, str]] = {}
        for name, (values, how) in columns.items():
            v = np.asarray(values)
            got = self._runs(v, how) if self.labels is None and len(v) else None
            if got is None:
                rest[name] = (v, how)
            else:
                out[name] = got
        if rest:
            labels = self.labels
            if labels is None:
                labels = np.repeat(np.arange(len(self.lengths)), self.lengths)
            frame = pd.DataFrame({name: v for name, (v, _) in rest.items()})
            agg = frame.groupby(labels, sort=False).agg({n: h for n, (_, h) in rest.items()})
            out.update({name: agg[name].to_numpy() for name in rest})
        return out


def codes(col: pd.Series) -> np.ndarray:
    """Integer codes of a key column (categorical codes when it is one; no string hashing)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return np.asarray(col.cat.codes, dtype=np.int64)
    if col.dtype.kind in "iu":
        return col.to_numpy(dtype=np.int64) - int(col.min()) if len(col) else np.zeros(0, np.int64)
    return pd.factorize(col, sort=False)[0].astype(np.int64)
