"""The released code's absolute-preference screen of the base faces and the |Delta| tail rates."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Absolute-preference screen thresholds and the |Delta| tail cut-offs (the released code's).
SCREEN_Z = 3.29
SCREEN_MIN_GAP = 0.20
SCREEN_MIN_N = 50
TAILS = (0.5, 0.75)


def base_preference(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model x scenario over the base faces: mean phi, its SD (ddof 1), n, z and the flag
    (z >= 3.29, |mean - 0.5| >= 0.20, n >= 50)."""
    base = scores[scores["is_base"].to_numpy(dtype=bool) & scores["phi"].notna().to_numpy()]
    g = base.groupby([base["model"].astype(str), base["scenario_id"].astype(int)], sort=True)
    out = (
        g["phi"]
        .agg(
            mean_phi="mean",
            phi_sd=lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else np.nan,
            n="size",
        )
        .reset_index()
    )
    gap = (out["mean_phi"] - 0.5).abs()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["z"] = gap / (out["phi_sd"] / np.sqrt(out["n"]))
    out["flagged"] = (
        (out["z"] >= SCREEN_Z) & (gap >= SCREEN_MIN_GAP) & (out["n"] >= SCREEN_MIN_N)
    ).astype(bool)
    return out


def shift_tails(delta: pd.DataFrame) -> pd.DataFrame:
    """Per model: delta rows and how many reach |Delta| >= 0.5 and >= 0.75 (counts)."""
    a = delta["delta"].abs().to_numpy(np.float64)
    m = delta["model"].astype(str).to_numpy()
    rows = []
    for model in sorted(set(m)):
        x = a[m == model]
        rows.append(
            {
                "model": model,
                "n": int(x.size),
                **{f"n_tail_{int(t * 100)}": int((x >= t - 1e-12).sum()) for t in TAILS},
            }
        )
    return pd.DataFrame(rows)


def preference_summary(cells: pd.DataFrame, tails: pd.DataFrame, pooled: str) -> pd.DataFrame:
    """Per model (and pooled): screened cells, flagged cells, bias rate, tail rates."""
    rows = []
    for model, c in cells.groupby("model", sort=True):
        rows.append((model, len(c), int(c["flagged"].sum())))
    scr = pd.DataFrame(rows, columns=["model", "n_cells", "n_flagged"])
    t = tails.copy()
    tot = t.drop(columns="model").sum().to_frame().T
    tot.insert(0, "model", pooled)
    scr_tot = pd.DataFrame(
        [(pooled, int(scr["n_cells"].sum()), int(scr["n_flagged"].sum()))], columns=scr.columns
    )
    out = pd.concat([t, tot], ignore_index=True).merge(
        pd.concat([scr, scr_tot], ignore_index=True), on="model", how="left"
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        out["bias_rate"] = out["n_flagged"].astype(float) / out["n_cells"].astype(float)
        for tl in TAILS:
            tail = out[f"n_tail_{int(tl * 100)}"].astype(float)
            out[f"tail_rate_{int(tl * 100)}"] = tail / out["n"].astype(float)
    return out[["model", "n_cells", "n_flagged", "bias_rate", "tail_rate_50", "tail_rate_75", "n"]]
