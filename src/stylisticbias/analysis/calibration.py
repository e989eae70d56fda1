"""Calibration: does the analysis recover what the simulated judge planted?

For each simulated model, the simulated judge answers every evaluated image of a synthetic
dataset (identities with the paper marginals, the whole whitelist); the answers are scored as the
``scores`` stage does and analysed with :func:`stylisticbias.analysis.metrics.sbs` per
``model x category x scenario category`` cell. The truth of a cell is the mean of
:func:`stylisticbias.judge.engines.simulated.engine.planted_truth`'s ``delta_true`` over the
same rows (the exact expected shift of those images, noise draw included). Reported:

- ``coverage``: share of cells whose 95% face-bootstrap CI contains the truth (target >= 0.95);
- ``null_false_positive_rate``: share of *null* cells (``delta_planted`` exactly 0 on every row:
  the planted-zero categories) declared significant after the correction (target <= alpha);
- ``false_discovery_proportion``: null discoveries / all discoveries.

``python -m stylisticbias.analysis.calibration [--synthetic N]`` writes
``reports/calibration.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.analysis.metrics import sbs
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark, load_benchmark
from stylisticbias.config import load_config, load_group_option
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import family_of
from stylisticbias.outputs import atomic_write_text, round_floats
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

CELLS = ["model", "category", "scenario_category"]


def synthetic_dataset(
    benchmark: Benchmark, n_faces: int, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Faces (paper marginals) and their whitelisted variations, as the dataset stages list them."""
    from stylisticbias.sampling import sample_identities

    ids = sample_identities(benchmark, n_faces, seed=seed)
    faces = ids[["face_id", *DEMOGRAPHIC_AXES]].copy()
    faces["image_id"] = faces["face_id"] + "--base"
    rows = []
    for r in faces.itertuples(index=False):
        for v in benchmark.variations_for(r.gender, evaluated_only=True):
            rows.append(
                (
                    f"{r.face_id}--{v.slug}",
                    r.face_id,
                    v.category,
                    v.attribute,
                    v.value,
                    r.age,
                    r.gender,
                    r.ethnicity,
                    r.body_type,
                )
            )
    var = pd.DataFrame(
        rows, columns=["image_id", "face_id", "category", "attribute", "value", *DEMOGRAPHIC_AXES]
    )
    return faces, var


def model_cfg(config: Config | None, model: str) -> dict[str, Any]:
    """A model's section: the judged model's (as composed) when ``config`` judges it, else
    ``conf/model/<model>.yaml``."""
    if config is not None and model in config.models:
        return asdict(config.models[model])
    return load_group_option("model", model)


def is_simulated(model: str, config: Config | None = None) -> bool:
    """Whether the model is a simulated judge (runs on the simulated engine)."""
    cfg = model_cfg(config, model)
    return (cfg.get("engine") or {}).get("name") == "simulated"


def pipeline_dataset(config: Config) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The dataset the pipeline built (``data/faces``, ``data/variations``), judged images only."""
    from stylisticbias import schemas

    faces = schemas.read_table(Path(config.paths.faces) / "faces.parquet", schemas.FACES)
    var = schemas.read_table(
        Path(config.paths.variations) / "variations.parquet", schemas.VARIATIONS
    )
    faces = faces[faces["status"] == "ok"]
    var = var[var["status"] == "ok"]
    if config.judge.images == "evaluated":
        var = var[var["evaluated"]]
    return faces.reset_index(drop=True), var.reset_index(drop=True)


def calibrate(
    config: Config,
    *,
    n_faces: int = 100,
    models: Sequence[str] | None = None,
    seed: int = 0,
    dataset: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    scores: dict[str, pd.DataFrame] | None = None,
) -> dict[str, Any]:
    """Run the calibration; returns the ``reports/calibration.json`` content.

    ``dataset`` = (faces, variations) manifests to calibrate on (default: a synthetic dataset of
    ``n_faces`` identities); ``scores`` = already computed score tables per model (default: the
    simulated judge is run here on ``dataset``).
    """
    from stylisticbias.judge.engines.simulated.engine import (
        SimulatedJudgeEngine,
        image_attrs,
        planted_truth,
    )
    from stylisticbias.scores import compute_scores

    t0 = time.perf_counter()
    s = AnalysisSettings.from_config(asdict(config.analysis))
    benchmark = load_benchmark(config.protocol)
    judge = asdict(config.judge)
    names = [m for m in (models or config.model_names) if is_simulated(m, config)]
    if not names:
        return {
            "coverage": None,
            "n_cells": 0,
            "note": "no simulated judge among the models: calibration needs planted effects",
            "settings": {"models": list(models or config.model_names)},
            "simulated": False,
        }
    faces, var = dataset if dataset is not None else synthetic_dataset(benchmark, n_faces, seed)
    n_faces = int(faces["face_id"].nunique())
    img = image_attrs(faces, var)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].astype(object)
    attrs = attrs.where(attrs.notna(), None).to_dict("records")
    scored, truths = [], []
    for name in names:
        cfg = model_cfg(config, name)
        if (cfg.get("engine") or {}).get("name") != "simulated":
            raise StylisticBiasError(f"calibration: model {name!r} is not a simulated judge")
        if scores is not None and name in scores:
            scored.append(scores[name])
        else:
            eng = SimulatedJudgeEngine(cfg, cfg["engine"], judge, benchmark)
            j = eng.judge_records(img["image_id"].tolist(), img["face_id"].tolist(), attrs)
            scored.append(compute_scores(j, faces, var, benchmark))
        orderings = benchmark.selected_orderings(judge["orderings"])
        tr = planted_truth(benchmark, faces, var, cfg, orderings=orderings)
        truths.append(tr[["model", "image_id", "scenario_id", "delta_true", "delta_planted"]])
    sc = pd.concat(scored, ignore_index=True)
    tr = pd.concat(truths, ignore_index=True)
    d = sc[sc["delta"].notna()].merge(tr, on=["model", "image_id", "scenario_id"], how="left")
    est = sbs(
        d,
        CELLS,
        **s.sbs_kwargs(),
    )
    truth = (
        d.groupby(CELLS, observed=True)
        .agg(truth=("delta_true", "mean"), null=("delta_planted", lambda x: bool((x == 0).all())))
        .reset_index()
    )
    cells = est.merge(truth, on=CELLS, how="left")
    cells["covered"] = (cells["ci_low"] <= cells["truth"]) & (cells["truth"] <= cells["ci_high"])
    cells["significant"] = cells["pval_corr"] < s.alpha
    null = cells[cells["null"]]
    disc = cells["significant"].sum()
    out = {
        "coverage": float(cells["covered"].mean()),
        "n_cells": len(cells),
        "null_false_positive_rate": float(null["significant"].mean()) if len(null) else None,
        "n_null_cells": len(null),
        "false_discovery_proportion": float(null["significant"].sum() / disc) if disc else 0.0,
        "power_non_null": float(cells.loc[~cells["null"], "significant"].mean()),
        "max_abs_error": float((cells["effect"] - cells["truth"]).abs().max()),
        "settings": {
            "cells": CELLS,
            "faces": n_faces,
            "models": names,
            "ci": s.ci,
            "n_resamples": s.n_resamples,
            "alpha": s.alpha,
            "correction": s.correction,
            "orderings": benchmark.selected_orderings(judge["orderings"]),
            "seeds": judge["seeds"],
        },
        "simulated": True,
    }
    log.info(  # the time goes to the log only: reports/calibration.json is committed
        "calibration: coverage %.3f over %d cells; null FPR %s over %d null cells (%.1f s)",
        out["coverage"],
        out["n_cells"],
        out["null_false_positive_rate"],
        out["n_null_cells"],
        time.perf_counter() - t0,
    )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: write ``<paths.reports>/calibration.json`` (``--protocol``: that protocol's job)."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias.analysis.calibration")
    ap.add_argument(
        "--synthetic",
        type=int,
        default=None,
        metavar="N",
        help="calibrate on a synthetic N-face manifest, not the pipeline's dataset and scores",
    )
    ap.add_argument("--out", default=None)
    ap.add_argument("--protocol", default=None, help="the protocol's job (check stage) to run")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.protocol:
            from stylisticbias.protocols import use_job

            use_job(args.protocol)
        config = load_config()
        bench = load_benchmark(config.protocol)
        res = family_of(bench).hook("calibrate")(config, args.synthetic)  # its family's truth
    except StylisticBiasError as exc:
        log.error("error: %s", exc)
        return 2
    out = Path(args.out or Path(config.paths.reports) / "calibration.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(round_floats(res), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
