"""Calibration of a paired-variation protocol over many replicates.

Written into ``reports/bench/calibration.json``, section ``protocols.<protocol>``.

The ``calibrate`` stage checks one run against the truth of its own images; this benchmark
repeats the whole estimation ``--replicates`` times for a protocol with ``statistics.suite:
paired_variation`` (default ``beauty-and-the-bias``, experiment ``beauty-demo``'s judges):
each replicate draws **new faces** (``--faces`` identities, uniform over the demographic grid,
seed ``r``), their variation images, and **new judge seeds** (the simulated judge's seed +
1000 (r + 1)); the simulated judges answer every prompt, the answers are scored as the
``scores`` stage does, and
:func:`stylisticbias.families.paired_variation.analysis.calibration.calibrate_scores` compares
the tables' estimates with the truth.

**Truth** is the population value: the mean over ``--population`` faces (seed 10_000) of the
exact expected phi (``planted_truth`` of the simulated engine's ``ground_truth``), since the face
bootstrap is an interval for the population quantity. Reported per model and pooled:
``halo.coverage`` (the shift of mean phi, variation minus base, over the halo scenarios; target
[0.93, 0.97]), its bias and RMSE, the detected halo rate, the coverage of the gender gap, the
power on planted scenarios and the false-positive rate of the variation test on scenarios
planted exactly 0 (target <= alpha), and the coverage per replicate (the replicate is the
independent unit: its cells share faces).

``python -m stylisticbias_dev.bench.paired_calibration --replicates 24 --faces 108
--population 5000`` merges its result into ``reports/bench/calibration.json`` (the StylisticBias
plants in the same file are kept as they are).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark, benchmark_from_params
from stylisticbias.config import compose
from stylisticbias.families.paired_variation.analysis import calibration as pc
from stylisticbias.families.paired_variation.analysis.counts import Bootstrap
from stylisticbias.judge.engines.simulated.planted import planted_source
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)


def paired_dataset(
    benchmark: Benchmark, n_faces: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Faces (uniform over the grid) and their one contrasted variation, as the stages list them."""
    from stylisticbias.sampling import sample_identities

    v = benchmark.variation(*_contrast(benchmark))
    ids = sample_identities(benchmark, n_faces, seed=seed, sampler="uniform")
    faces = ids[["face_id", *DEMOGRAPHIC_AXES]].copy()
    faces["image_id"] = faces["face_id"] + "--base"
    var = faces.drop(columns="image_id").assign(
        image_id=faces["face_id"] + f"--{v.slug}",
        category=v.category,
        attribute=v.attribute,
        value=v.value,
    )
    return faces, var[["image_id", "face_id", "category", "attribute", "value", *DEMOGRAPHIC_AXES]]


def _contrast(benchmark: Benchmark) -> tuple[str, str]:
    c = benchmark.statistics.variation
    if c is None:
        raise SystemExit(f"{benchmark.source}: not a paired-variation protocol")
    return c.attribute, c.value


def _judge(params: dict[str, Any], benchmark: Benchmark, cfg: dict[str, Any], faces, var):
    """Scores of one simulated judge on a dataset (as the judge + scores stages would)."""
    from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine, image_attrs
    from stylisticbias.scores import compute_scores

    img = image_attrs(faces, var)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].astype(object)
    attrs = attrs.where(attrs.notna(), None).to_dict("records")
    eng = SimulatedJudgeEngine(cfg, cfg["engine"], params["judge"], benchmark)
    j = eng.judge_records(img["image_id"].tolist(), img["face_id"].tolist(), attrs)
    return compute_scores(j, faces, var, benchmark)


def _truth(params, benchmark: Benchmark, cfg: dict[str, Any], faces, var) -> pd.DataFrame:
    from stylisticbias.judge.engines.simulated.ground_truth import planted_truth

    orderings = benchmark.selected_orderings(params["judge"].get("orderings"))
    planted = planted_source(cfg, cfg.get("engine"))
    return planted_truth(benchmark, faces, var, cfg, planted=planted, orderings=orderings)


def run(experiment: str, replicates: int, n_faces: int, population: int) -> dict[str, Any]:
    """Every replicate of every simulated model of ``experiment``; the protocol's section."""
    params = compose([f"experiment={experiment}"])
    benchmark = benchmark_from_params(params)
    s = AnalysisSettings.from_config(params.get("analysis"))
    boot = Bootstrap(s.n_resamples, s.ci, s.seed)
    models = [
        m
        for m, c in (params.get("models") or {}).items()
        if (c.get("engine") or {}).get("name") == "simulated"
    ]
    pop_faces, pop_var = paired_dataset(benchmark, population, seed=10_000)
    cells_by_model: dict[str, list[pd.DataFrame]] = {m: [] for m in models}
    t0 = time.perf_counter()
    for m in models:
        cfg = dict(params["models"][m])
        truth = pc.true_effects(_truth(params, benchmark, cfg, pop_faces, pop_var), benchmark)
        for r in range(replicates):
            faces, var = paired_dataset(benchmark, n_faces, seed=r)
            c = {**cfg, "seed": int(cfg.get("seed", 0)) + 1000 * (r + 1)}
            scores = _judge(params, benchmark, c, faces, var)
            cells = pc.calibrate_scores(scores, truth, benchmark, boot)
            cells_by_model[m].append(cells.assign(replicate=r, model=m))
            log.info("%s: replicate %d/%d (%.0fs)", m, r + 1, replicates, time.perf_counter() - t0)
    frames = {m: pd.concat(c, ignore_index=True) for m, c in cells_by_model.items()}
    pooled = pd.concat(list(frames.values()), ignore_index=True)
    out = pc.summarise(pooled, by_replicate="replicate")
    halo = pooled[pooled["halo"]]
    k, n = int(halo["covered"].sum()), len(halo)
    lo, hi = proportion_confint(k, n, alpha=0.05, method="beta")
    out["halo"]["coverage_ci95"] = [round(float(lo), 4), round(float(hi), 4)]
    per_rep = halo.groupby(["model", "replicate"])["covered"].mean()
    out["halo"]["coverage_ci95_by_replicate"] = [
        round(float(x), 4)
        for x in np.percentile(
            [per_rep.sample(frac=1, replace=True, random_state=i).mean() for i in range(2000)],
            [2.5, 97.5],
        )
    ]
    out["models"] = {m: pc.summarise(f, by_replicate="replicate") for m, f in frames.items()}
    out["settings"] = {
        "experiment": experiment,
        "protocol": benchmark.name,
        "models": models,
        "replicates": replicates,
        "faces_per_replicate": n_faces,
        "population_faces": population,
        "ci": s.ci,
        "n_resamples": s.n_resamples,
        "alpha": benchmark.statistics.alpha,
        "seeds": params["judge"].get("seeds"),
        "targets": {
            "halo.coverage": [0.93, 0.97],
            "variation_shift_all_scenarios.false_positive_rate_null": "<= alpha",
        },
    }
    return out


def merge_into(path: Path, protocol: str, section: dict[str, Any]) -> None:
    """Write ``section`` as ``protocols.<protocol>`` of the bench file, keeping the rest (and
    the protocol's ``valid_inference``, written by :mod:`.paired_valid_inference`)."""
    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    old = doc.setdefault("protocols", {}).get(protocol) or {}
    if "valid_inference" in old:
        section = {**section, "valid_inference": old["valid_inference"]}
    doc["protocols"][protocol] = section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """CLI: merge the protocol's calibration into reports/bench/calibration.json."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.paired_calibration")
    ap.add_argument("--experiment", default="beauty-demo")
    ap.add_argument("--replicates", type=int, default=24)
    ap.add_argument("--faces", type=int, default=108, help="faces per replicate")
    ap.add_argument("--population", type=int, default=5000, help="faces of the truth population")
    ap.add_argument("--out", default="reports/bench/calibration.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for name in ("stylisticbias.scores", "stylisticbias.analysis"):
        logging.getLogger(name).setLevel(logging.ERROR)
    t0 = time.perf_counter()
    section = run(args.experiment, args.replicates, args.faces, args.population)
    section["command"] = "python -m stylisticbias_dev.bench.paired_calibration " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    section["machine"] = machine_info()
    section["date"] = datetime.now(UTC).strftime("%Y-%m-%d")
    section["seconds"] = round(time.perf_counter() - t0, 1)
    merge_into(Path(args.out), section["settings"]["protocol"], section)
    log.info(
        "halo coverage %.4f over %d cells; wrote %s",
        section["halo"]["coverage"],
        section["halo"]["n_cells"],
        args.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
