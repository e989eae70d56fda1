"""Synthetic score tables with known effects for the analysis tests (no judge, no images)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pytest

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark


def make_scores(
    benchmark: Benchmark,
    n_faces: int = 40,
    models: tuple[str, ...] = ("m1", "m2"),
    effects: Mapping[str, float] | None = None,
    noise: float = 0.05,
    seed: int = 0,
    n: int = 12,
) -> pd.DataFrame:
    """SCORES-shaped rows: phi = 0.5 + demographic offset + category effect + noise (binned by n).

    ``effects`` maps Table 3 categories to planted SBS (default 0 for the others).
    """
    rng = np.random.default_rng(seed)
    effects = dict(effects or {})
    demo = {a: rng.choice(benchmark.demographics[a], size=n_faces) for a in DEMOGRAPHIC_AXES}
    demo["gender"][:2] = ["male", "female"]
    rows = []
    scen = benchmark.scenarios
    for m_i, model in enumerate(models):
        for f in range(n_faces):
            fid = f"f{f:04d}"
            d = {a: demo[a][f] for a in DEMOGRAPHIC_AXES}
            offset = 0.04 * benchmark.demographics["age"].index(d["age"]) + 0.01 * m_i
            base_phi = np.clip(0.5 + offset + rng.normal(0, noise, len(scen)), 0, 1)
            base_phi = np.round(base_phi * n) / n
            for si, s in enumerate(scen):
                rows.append(
                    (
                        model,
                        f"{fid}--base",
                        fid,
                        True,
                        None,
                        None,
                        None,
                        *d.values(),
                        s.id,
                        s.category,
                        base_phi[si],
                        None,
                    )
                )
            for v in benchmark.variations_for(d["gender"], evaluated_only=True):
                phi = np.clip(
                    base_phi + effects.get(v.category, 0.0) + rng.normal(0, noise, len(scen)), 0, 1
                )
                phi = np.round(phi * n) / n
                for si, s in enumerate(scen):
                    rows.append(
                        (
                            model,
                            f"{fid}--{v.slug}",
                            fid,
                            False,
                            v.category,
                            v.attribute,
                            v.value,
                            *d.values(),
                            s.id,
                            s.category,
                            phi[si],
                            phi[si] - base_phi[si],
                        )
                    )
    df = pd.DataFrame(
        rows,
        columns=[
            "model",
            "image_id",
            "face_id",
            "is_base",
            "category",
            "attribute",
            "value",
            *DEMOGRAPHIC_AXES,
            "scenario_id",
            "scenario_category",
            "phi",
            "delta",
        ],
    )
    df["n_valid"] = float(n)
    df["n"] = n
    df["simulated"] = True
    df["delta"] = df["delta"].astype(float)
    return df


@pytest.fixture(scope="session")
def synth(benchmark: Benchmark) -> pd.DataFrame:
    """40 faces x 2 models; Fashion +0.1, Skin irreg. -0.05, the rest 0."""
    return make_scores(benchmark, effects={"Fashion": 0.1, "Skin irreg.": -0.05})
