"""Analysis benchmark at paper scale: six simulated models x 500 faces x the full whitelist.

``python -m stylisticbias.bench.analysis [--faces 500] [--models 6] [--cores 2]``

1. *Setup (not timed)*: 500 identities with the paper marginals
   (:func:`stylisticbias.sampling.sample_identities`), every whitelisted variation
   (274 x 31 + 226 x 32 = 15,726 images + 500 bases = 16,226), judged by six
   :class:`~stylisticbias.judge.simulated.SimulatedJudgeEngine` models (effect scale, noise and
   invalid rate varied) under 25 scenarios x 4 orderings x 3 seeds: 4.87M responses per model,
   29.2M in all, written as each model's ``judgments.parquet`` in a scratch directory.
2. *Timed*: a fresh subprocess pinned to ``--cores`` CPUs does the whole analysis as the
   pipeline would: scores from the judgments (``stylisticbias.scores.compute_scores``) for every
   model, then :func:`stylisticbias.analysis.run.run_analysis` (all metrics, tests, bootstrap,
   permutations, diagnostics from the raw judgments, table writing). It reports its own wall
   time and peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``).

Writes ``reports/bench/analysis.json`` (``rows``, ``seconds``, ``peak_rss_gb``, ``command``,
``machine``, ``date``, plus the split and settings). Targets: <= 180 s and <= 8 GB.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from stylisticbias.analysis.calibration import synthetic_dataset
from stylisticbias.bench.machine import machine_info
from stylisticbias.benchmark import Benchmark, benchmark_from_config
from stylisticbias.config import compose, project_root

log = logging.getLogger(__name__)

#: six simulated "models": (effect_scale, noise_sd, invalid_rate)
MODEL_KNOBS = [(1.0, 0.05, 0.02), (0.4, 0.05, 0.05), (0.7, 0.1, 0.01), (1.3, 0.05, 0.03),
               (0.25, 0.02, 0.0), (0.9, 0.15, 0.08)]  # fmt: skip


def write_judgments(
    params: dict[str, Any],
    benchmark: Benchmark,
    faces: pd.DataFrame,
    var: pd.DataFrame,
    out: Path,
    n_models: int,
    chunk: int = 1500,
) -> int:
    """Judge every image with ``n_models`` simulated models; returns the number of responses."""
    from stylisticbias.judge.simulated import SimulatedJudgeEngine, image_attrs

    img = image_attrs(faces, var)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].astype(object)
    attrs = attrs.where(attrs.notna(), None).to_dict("records")
    ids, fids = img["image_id"].tolist(), img["face_id"].tolist()
    total = 0
    for m in range(n_models):
        es, sd, inv = MODEL_KNOBS[m % len(MODEL_KNOBS)]
        name = f"sim-{m + 1}"
        cfg = {
            "name": name,
            "effect_scale": es,
            "noise_sd": sd,
            "invalid_rate": inv,
            "seed": 100 + m,
        }
        eng = SimulatedJudgeEngine(cfg, params["engine"], params["judge"], benchmark)
        path = out / "judgments" / name / "judgments.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        writer = None
        t0 = time.perf_counter()
        for i in range(0, len(ids), chunk):
            df = eng.judge_records(ids[i : i + chunk], fids[i : i + chunk], attrs[i : i + chunk])
            table = pa.Table.from_pandas(df, preserve_index=False)
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
            total += len(df)
        assert writer is not None
        writer.close()
        log.info("judged %s: %d images in %.0fs", name, len(ids), time.perf_counter() - t0)
    return total


def worker(root: Path, cores: int) -> None:
    """The timed part: scores from judgments + the whole analysis; prints a JSON line."""
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))
    from stylisticbias.analysis.run import run_analysis
    from stylisticbias.schemas import SCORES, write_table
    from stylisticbias.scores import compute_scores

    t0 = time.perf_counter()
    params = json.loads((root / "params.json").read_text())
    benchmark = benchmark_from_config(params["benchmark"])
    faces = pd.read_parquet(root / "faces.parquet")
    var = pd.read_parquet(root / "variations.parquet")
    for m in params["judge"]["models"]:
        j = pd.read_parquet(
            root / "judgments" / m / "judgments.parquet",
            columns=[
                "image_id",
                "model",
                "scenario_id",
                "seed",
                "choice",
                "p_pos",
                "p_neg",
                "p_undecided",
                "simulated",
            ],
        )
        sc = compute_scores(j, faces, var, benchmark)
        del j
        write_table(sc, root / "scores" / f"{m}.parquet", SCORES)
        del sc
    t_scores = time.perf_counter() - t0
    run_analysis(params)
    sys.stdout.write(
        json.dumps(
            {
                "seconds": time.perf_counter() - t0,
                "scores_seconds": t_scores,
                "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
                "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            }
        )
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Build the paper-scale input, time the analysis in a subprocess, write the JSON."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias.bench.analysis")
    ap.add_argument("--faces", type=int, default=500)
    ap.add_argument("--models", type=int, default=6)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--out", default="reports/bench/analysis.json")
    ap.add_argument("--workdir", default=None, help="scratch dir (default: a temp dir, removed)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.worker:
        worker(Path(args.worker), args.cores)
        return 0
    params = compose()
    benchmark = benchmark_from_config(params["benchmark"])
    root = Path(args.workdir or tempfile.mkdtemp(prefix="sb-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        faces, var = synthetic_dataset(benchmark, args.faces, seed=0)
        faces.to_parquet(root / "faces.parquet")
        var.to_parquet(root / "variations.parquet")
        rows = write_judgments(params, benchmark, faces, var, root, args.models)
        params["judge"]["models"] = [f"sim-{m + 1}" for m in range(args.models)]
        params["paths"].update(
            scores=str(root / "scores"),
            judgments=str(root / "judgments"),
            reports=str(root / "reports"),
        )
        (root / "params.json").write_text(json.dumps(params))
        cmd = [
            sys.executable,
            "-m",
            "stylisticbias.bench.analysis",
            "--worker",
            str(root),
            "--cores",
            str(args.cores),
        ]
        env = {
            **os.environ,
            **{
                k: str(args.cores)
                for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
            },
        }
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        res = subprocess.run(cmd, env=env, cwd=project_root(), capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if res.returncode != 0:
            log.error("analysis worker failed:\n%s", res.stderr[-4000:])
            return 1
        got = json.loads(res.stdout.strip().splitlines()[-1])
        n_tables = len(list((root / "reports" / "tables").glob("*.csv")))
        report = {
            "rows": rows,
            "rows_per_model": rows // args.models,
            "score_rows": (len(faces) + len(var)) * len(benchmark.scenarios) * args.models,
            "models": args.models,
            "faces": len(faces),
            "images": len(faces) + len(var),
            "seconds": round(got["seconds"], 1),
            "scores_seconds": round(got["scores_seconds"], 1),
            "analysis_seconds": round(got["seconds"] - got["scores_seconds"], 1),
            "subprocess_wall_seconds": round(wall, 1),
            "peak_rss_gb": round(got["peak_rss_gb"], 2),
            "cores": got["cores"],
            "n_resamples": params["analysis"]["bootstrap"]["n_resamples"],
            "n_permutations": params["analysis"]["n_permutations"],
            "tables_written": n_tables,
            "targets": {"seconds": 180, "peak_rss_gb": 8},
            "command": " ".join(
                ["python -m stylisticbias.bench.analysis", *(argv or sys.argv[1:])]
            ),
            "machine": machine_info(),
            "load_avg_1m": {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)},
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "simulated": True,
        }
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        log.info(
            "analysis of %d responses: %.1fs, peak RSS %.2f GB -> %s",
            rows,
            got["seconds"],
            got["peak_rss_gb"],
            out,
        )
    finally:
        if not args.workdir:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
