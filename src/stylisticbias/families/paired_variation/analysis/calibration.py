"""Calibration of the paired-variation statistics: do the tables recover the planted halo?

For a simulated judge the truth is known (``planted_truth`` of
:mod:`stylisticbias.judge.engines.simulated.ground_truth`: the exact expected phi of every image
under the planted effects). Per model:

- **halo**: for every scenario tagged ``statistics.halo_tag``, the shift of mean phi from the
  base to the variation images (:func:`~.paired_variation.variation.variation_bias`'s
  ``shift`` with its face-bootstrap CI) against the true shift; ``coverage`` = share of CIs
  holding the truth;
- **gender**: the same for the gap between the groups of the first ``group_tests`` axis (mean
  phi of the second group minus the first, every scenario);
- **detection**: the halo rate, its power over the scenarios with a planted shift and the
  false-positive rate of the variation-bias test over the scenarios planted exactly 0.

:func:`calibrate_scores` scores one dataset against a truth (the ``calibrate`` stage: the
pipeline's own faces and scores, the truth of those images); the many-replicate study with a
population truth is ``python -m stylisticbias_dev.bench.paired_calibration`` (its results go to
``reports/bench/calibration.json``, section ``protocols``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.paired_variation.analysis.counts import Bootstrap, paired_data
from stylisticbias.families.paired_variation.analysis.groups import group_gap
from stylisticbias.families.paired_variation.analysis.variation import variation_bias


def true_effects(truth: pd.DataFrame, benchmark: Benchmark) -> pd.DataFrame:
    """Per scenario: the true variation shift and the true gap of the first group-test axis.

    ``truth`` holds ``planted_truth`` rows (``phi_true``, ``phi_planted``, ``is_base``,
    ``attribute``, ``value``, demographics) for the images of one model; the shift is the mean
    over those images (a sample truth) or over a large population (a population truth).
    ``null`` marks scenarios whose planted shift is exactly 0.
    """
    spec = benchmark.statistics
    if spec.variation is None:
        raise StylisticBiasError(f"{benchmark.source}: statistics.variation is not set")
    v = spec.variation
    is_var = (truth["attribute"].astype(str) == v.attribute) & (
        truth["value"].astype(str) == v.value
    )
    base, var = truth[truth["is_base"].astype(bool)], truth[is_var]
    mb = base.groupby("scenario_id")[["phi_true", "phi_planted"]].mean()
    mv = var.groupby("scenario_id")[["phi_true", "phi_planted"]].mean()
    out = pd.DataFrame(
        {
            "shift_true": mv["phi_true"] - mb["phi_true"],
            "null": (mv["phi_planted"] - mb["phi_planted"]).abs() < 1e-12,
        }
    )
    if spec.group_tests:
        col = spec.column(spec.group_tests[0])
        groups = list(benchmark.demographics[col])[:2]
        both = pd.concat([base, var])
        g = both.groupby(["scenario_id", col])["phi_true"].mean().unstack(col)
        out["gap_true"] = g[groups[1]] - g[groups[0]]
    return out.reset_index()


def calibrate_scores(
    scores: pd.DataFrame,
    effects: pd.DataFrame,
    benchmark: Benchmark,
    boot: Bootstrap,
    paper_tests: bool = False,
) -> pd.DataFrame:
    """One dataset's per-scenario cells: estimate, CI, truth, covered, significant, null.

    ``effects`` is :func:`true_effects` of the truth: of the same images (a sample truth) or of
    a large population (a population truth); ``paper_tests`` as in :func:`variation_bias`."""
    spec = benchmark.statistics
    data = paired_data(scores, benchmark, spec)
    bias = variation_bias(data, benchmark, spec, boot, paper_tests)
    cells = bias[["scenario_id", "halo", "shift", "shift_low", "shift_high", "significant_alpha"]]
    cells = cells.merge(effects, on="scenario_id", how="left")
    cells["covered"] = (cells["shift_low"] <= cells["shift_true"]) & (
        cells["shift_true"] <= cells["shift_high"]
    )
    if spec.group_tests:
        col = spec.column(spec.group_tests[0])
        groups = list(benchmark.demographics[col])[:2]
        gap, lo, hi = group_gap(data, col, groups[0], groups[1], boot)
        cells["gap"], cells["gap_low"], cells["gap_high"] = gap, lo, hi
        cells["gap_covered"] = (lo <= cells["gap_true"]) & (cells["gap_true"] <= hi)
    return cells


def _share(x: pd.Series) -> float | None:
    return float(x.mean()) if len(x) else None


def summarise(cells: pd.DataFrame, by_replicate: str | None = None) -> dict[str, Any]:
    """Coverage, bias and detection rates of calibration cells (one or many replicates)."""
    halo = cells[cells["halo"]]
    planted = cells[~cells["null"]]
    null = cells[cells["null"]]
    out: dict[str, Any] = {
        "halo": {
            "coverage": _share(halo["covered"]),
            "n_cells": len(halo),
            "bias": float((halo["shift"] - halo["shift_true"]).mean()) if len(halo) else None,
            "rmse": float(np.sqrt(((halo["shift"] - halo["shift_true"]) ** 2).mean()))
            if len(halo)
            else None,
            "halo_rate": _share(halo["significant_alpha"] & (halo["shift"] > 0)),
            "power_planted": _share(halo.loc[~halo["null"], "significant_alpha"]),
        },
        "variation_shift_all_scenarios": {
            "coverage": _share(cells["covered"]),
            "n_cells": len(cells),
            "power_planted": _share(planted["significant_alpha"]),
            "false_positive_rate_null": _share(null["significant_alpha"]),
            "n_null_cells": len(null),
        },
    }
    if "gap_covered" in cells:
        out["gender_gap"] = {
            "coverage": _share(cells["gap_covered"]),
            "n_cells": len(cells),
            "bias": float((cells["gap"] - cells["gap_true"]).mean()),
        }
    if by_replicate and by_replicate in cells:
        per = cells[cells["halo"]].groupby(by_replicate)["covered"].mean()
        out["halo"]["coverage_by_replicate_sd"] = float(per.std(ddof=1)) if len(per) > 1 else None
        out["halo"]["n_replicates"] = int(per.size)
    return out


def calibration_report(
    cells_by_model: Mapping[str, pd.DataFrame], settings: Mapping[str, Any]
) -> dict[str, Any]:
    """``reports/calibration.json`` of a paired-variation run (pooled and per model)."""
    pooled = pd.concat(list(cells_by_model.values()), ignore_index=True)
    return {
        **summarise(pooled),
        "models": {m: summarise(c) for m, c in cells_by_model.items()},
        "settings": dict(settings),
        "simulated": True,
    }
