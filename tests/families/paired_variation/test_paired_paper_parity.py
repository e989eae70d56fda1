"""With the paper's definitions (``analysis.definitions: official``) the paired-variation tables
are the numbers the family computed before its tests moved to one value per person.

``data/pooled_tables_10c4f93.json`` holds every table of :func:`model_tables` as computed by
the code of commit 10c4f93 (the paper's pooled Kruskal-Wallis tests were then the only ones) on
:func:`person_scores`; it was written by running this module as a script with that commit's
``src`` on ``PYTHONPATH``: ``PYTHONPATH=<old>/src python tests/families/paired_variation/
test_paired_paper_parity.py``. The test compares every column of every old table exactly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.families.paired_variation.analysis.run import model_tables

GOLDEN = Path(__file__).parent / "data" / "pooled_tables_10c4f93.json"
SETTINGS = {"n_resamples": 200, "seed": 5}


def person_scores(beauty: Benchmark, n_faces: int = 60, seed: int = 11) -> pd.DataFrame:
    """Score rows of one model: people with a random appeal (shared by their two images),
    unequal group sizes, a planted halo and gender gap, a few missing phi."""
    rng = np.random.default_rng(seed)
    axes = beauty.demographics
    scen = beauty.scenarios
    gender = rng.choice(axes["gender"], n_faces, p=[0.65, 0.35])
    age = rng.choice(axes["age"], n_faces, p=[0.5, 0.3, 0.2])
    eth = rng.choice(axes["ethnicity"], n_faces, p=[0.1, 0.3, 0.05, 0.15, 0.05, 0.35])
    mu = rng.normal(0.0, 0.7, len(scen))
    appeal = rng.normal(0.0, 1.0, (n_faces, 1)) + rng.normal(0.0, 0.6, (n_faces, len(scen)))
    halo = np.array(["halo" in s.tags for s in scen])
    rows = []
    for f in range(n_faces):
        for base in (True, False):
            eta = mu + appeal[f] + rng.normal(0.0, 0.3, len(scen))
            eta = eta + (0.0 if base else 0.5 * halo) + 0.4 * (gender[f] == "male")
            phi = rng.binomial(12, 1.0 / (1.0 + np.exp(-eta))) / 12
            phi[rng.random(len(scen)) < 0.02] = np.nan
            for s, value in zip(scen, phi, strict=True):
                rows.append(
                    {
                        "model": "m1",
                        "image_id": f"f{f:03d}-{'o' if base else 'b'}",
                        "face_id": f"f{f:03d}",
                        "is_base": base,
                        "attribute": None if base else "Beauty filter",
                        "value": None if base else "Beautified",
                        "gender": gender[f],
                        "age": age[f],
                        "ethnicity": eth[f],
                        "body_type": axes["body_type"][0],
                        "scenario_id": s.id,
                        "phi": value,
                        "simulated": True,
                    }
                )
    return pd.DataFrame(rows)


def _tables(definitions: str) -> dict[str, pd.DataFrame]:
    beauty = load_benchmark("beauty-and-the-bias")
    settings = AnalysisSettings.from_config({"definitions": definitions, "bootstrap": SETTINGS})
    return model_tables(person_scores(beauty), beauty, settings)


def _as_json(tables: dict[str, pd.DataFrame]) -> dict[str, dict[str, list]]:
    return {
        name: {c: [None if pd.isna(v) else v for v in df[c].tolist()] for c in df.columns}
        for name, df in tables.items()
    }


@pytest.fixture(scope="module")
def golden() -> dict[str, dict[str, list]]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("definitions", ["official", "paper"])
def test_paper_definitions_reproduce_the_old_tables(golden, definitions: str) -> None:
    """``official``: every column of every old table is equal (floats exactly); ``paper`` (the
    default, one value per person): the tests differ where the old code pooled, so this also
    shows that the comparison can fail."""
    new = _as_json(_tables(definitions))
    assert set(golden) <= set(new)
    differ = []
    for name, cols in golden.items():
        for col, old in cols.items():
            assert col in new[name], f"{name}.{col} missing"
            if new[name][col] != old:
                differ.append(f"{name}.{col}")
    if definitions == "official":
        assert differ == []
    else:
        changed = {
            "paired_variation_bias.pval",
            "paired_group_tests.pval",
            "paired_stereotype_groups.pval",
            "paired_halo.n_significant",
        }
        assert changed <= set(differ)


if __name__ == "__main__":  # write the golden file (with the old commit's src on the path)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(_as_json(_tables("paper"))) + "\n", encoding="utf-8")
    sys.exit(0)
