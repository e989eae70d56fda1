"""Simulated paired-variation scores for the report and tracking tests: each person's base and
beautified image per scenario, phi drawn from 12 answers, a planted halo on the tagged
scenarios."""

from __future__ import annotations

import numpy as np
import pandas as pd


def simulated_scores(bench, model: str, halo: float, seed: int, faces: int = 36) -> pd.DataFrame:
    """``faces`` persons (2 genders x 3 ages x 6 ethnicities, cycled) of ``model``: phi of the
    base and the beautified image per scenario, ``halo`` added on the ``halo``-tagged ones."""
    rng = np.random.default_rng(seed)
    rows = []
    for f in range(faces):
        demo = {
            "gender": bench.demographics["gender"][f % 2],
            "age": bench.demographics["age"][(f // 2) % 3],
            "ethnicity": bench.demographics["ethnicity"][(f // 6) % 6],
            "body_type": "not labelled",
        }
        for base in (True, False):
            for s in bench.scenarios:
                p = 0.45 + (halo if not base and "halo" in s.tags else 0.0)
                rows.append(
                    {
                        "model": model,
                        "face_id": f"f{f:02d}",
                        "is_base": base,
                        "attribute": None if base else "Beauty filter",
                        "value": None if base else "Beautified",
                        **demo,
                        "scenario_id": s.id,
                        "phi": rng.binomial(12, p) / 12,
                        "simulated": True,
                    }
                )
    return pd.DataFrame(rows)
