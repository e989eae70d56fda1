"""Analysis benchmark at paper scale: N simulated models x 500 faces x the full whitelist.

``python -m stylisticbias_dev.bench.analysis [--faces 500] [--models 6,20,100] [--add-one]
[--cores 2] [--workdir DIR]``

1. *Setup (not timed)*: 500 identities with the paper marginals
   (:func:`stylisticbias.sampling.sample_identities`), every whitelisted variation
   (274 x 31 + 226 x 32 = 15,726 images + 500 bases = 16,226), judged by max(N) (+1 with
   ``--add-one``) :class:`~stylisticbias.judge.engines.simulated.engine.SimulatedJudgeEngine`
   models (effect scale, noise and invalid rate cycled over six settings, a seed each) under 25
   scenarios x 4 orderings x 3 seeds: 4.87M responses per model, each model's
   ``judgments.parquet`` in a scratch directory (a kept ``--workdir`` reuses them).
2. *Timed, per size N*: fresh subprocesses pinned to ``--cores`` CPUs do what the pipeline
   does, from nothing: scores from the judgments (the scores stage's engine, written as Hive
   partitions) for every model, then :func:`stylisticbias.analysis.run.run_analysis` -- the
   streaming analysis (all metrics, tests, bootstrap, permutations, diagnostics from the raw
   judgments, table writing; ``analysis.workers`` forked worker processes). It reports its
   wall time and peak RSS: this process and its workers summed (psutil, sampled every 0.2 s),
   beside the main process's and the largest worker's ``ru_maxrss``, and the mean 1-minute load
   average during the run.
3. *Add one* (``--add-one``): the largest size's finished run gets model N+1: its scores, then
   the analysis, which takes the other N models' summaries from the cache.

Writes ``reports/bench/analysis.json``: one entry per size (``seconds``, ``scores_seconds``,
``analysis_seconds``, ``peak_rss_gb``, load averages), ``add_one_model``, the RSS ratio of the
largest to the smallest size, ``command``, ``machine``, ``date``. Targets: peak RSS <= 4 GB at
every size, the largest within 1.25x of the smallest, 100 models <= 600 s (analysis), 100
models <= 300 s judgments -> scores -> analysis (``seconds_scores_plus_analysis``) and one added
model <= 30 s. ``make bench-analysis`` runs it (6, 20 and 100 models, then add one).
"""

from __future__ import annotations

import argparse
import contextlib
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

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from stylisticbias.analysis.calibration import synthetic_dataset
from stylisticbias.benchmark import Benchmark, benchmark_from_params
from stylisticbias.config import compose, load_group_option, project_root
from stylisticbias.outputs import atomic_path, atomic_write_text
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)

#: six simulated "models": (effect_scale, noise_sd, invalid_rate)
MODEL_KNOBS = [
    (1.0, 0.05, 0.02),
    (0.4, 0.05, 0.05),
    (0.7, 0.1, 0.01),
    (1.3, 0.05, 0.03),
    (0.25, 0.02, 0.0),
    (0.9, 0.15, 0.08),
]


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
    from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine, image_attrs

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
        eng = SimulatedJudgeEngine(
            cfg, load_group_option("engine", "simulated"), params["judge"], benchmark
        )
        path = out / "judgments" / name / "judgments.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():  # a kept --workdir: same model, same seed, same rows
            total += pq.ParquetFile(path).metadata.num_rows
            continue
        writer = None
        t0 = time.perf_counter()
        with atomic_path(path) as tmp:
            for i in range(0, len(ids), chunk):
                sl = slice(i, i + chunk)
                df = eng.judge_records(ids[sl], fids[sl], attrs[sl])
                table = pa.Table.from_pandas(df, preserve_index=False)
                writer = writer or pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table)
                total += len(df)
            assert writer is not None
            writer.close()
        log.info("judged %s: %d images in %.0fs", name, len(ids), time.perf_counter() - t0)
    return total


def _load() -> tuple[float, float]:
    return os.getloadavg()[0], os.getloadavg()[1]


def _pin(cores: int) -> None:
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


class TreeRSS:
    """Peak resident memory of this process *and its children* together (the analysis forks
    worker processes): sampled every ``interval`` seconds in a thread, the sum over the tree."""

    def __init__(self, interval: float = 0.2) -> None:
        import threading

        self.interval = interval
        self.peak = 0
        self.loads: list[float] = []  # the 1-minute load average, once per sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for p in [me, *me.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):  # a worker that just exited
                    total += p.memory_info().rss
            self.peak = max(self.peak, total)
            self.loads.append(os.getloadavg()[0])
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_gb(self) -> float:
        """The sampled peak, GB (GiB)."""
        return self.peak / 1024**3


def _timing(root: Path) -> dict[str, Any]:
    f = root / "scores_timing.json"
    return json.loads(f.read_text()) if f.exists() else {}


def scores_worker(root: Path, n_models: int, cores: int) -> None:
    """The ``scores@MODEL`` stage for every model that has no partition yet in ``root/scores``
    (one at a time, as DVC runs them); each model's seconds go to ``root/scores_timing.json``.

    Several workers may share ``root`` (a model is claimed with an exclusive lock file and the
    timing file is merged under ``flock``); a worker waits for the models others are scoring.
    """
    _pin(cores)
    import fcntl

    from stylisticbias.score_store import write_model_scores
    from stylisticbias.scores import compute_scores, write_columnar_scores

    params = json.loads((root / "params.json").read_text())
    benchmark = benchmark_from_params(params)
    faces = pd.read_parquet(root / "faces.parquet")
    var = pd.read_parquet(root / "variations.parquet")
    timing_file = root / "scores_timing.json"
    claims = root / "claims"
    claims.mkdir(exist_ok=True)
    done = 0
    models = [f"sim-{i + 1}" for i in range(n_models)]
    for m in models:
        if m in _timing(root):
            continue
        try:
            (claims / m).open("x").close()
        except FileExistsError:
            continue  # another worker is scoring it
        t0, c0 = time.perf_counter(), time.process_time()
        jfile = root / "judgments" / m / "judgments.parquet"
        written = write_columnar_scores(  # the scores stage's engine
            m,
            jfile,
            root / "faces.parquet",
            root / "variations.parquet",
            root / "scores",
            benchmark,
            undecided_warn=float(params["judge"]["undecided_warn"]),
            undecided_max=float(params["judge"]["undecided_max"]),
        )
        if written is None:  # declined: the pandas engine, as the stage falls back
            j = pd.read_parquet(jfile, columns=SCORE_INPUTS)
            write_model_scores(compute_scores(j, faces, var, benchmark), root / "scores", m)
            del j
        entry = {
            "seconds": round(time.perf_counter() - t0, 2),
            "cpu_seconds": round(time.process_time() - c0, 2),
            "process_peak_rss_gb": round(_peak_gb(), 3),
            "load_avg_1m": round(os.getloadavg()[0], 2),
        }
        with open(root / ".timing.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            timing = _timing(root)
            timing[m] = entry
            atomic_write_text(timing_file, json.dumps(timing, indent=1) + "\n")
        (claims / m).unlink()
        done += 1
        log.info("scores %s: %s", m, entry)
    while any(m not in _timing(root) for m in models):  # claimed by another worker
        time.sleep(2)
    sys.stdout.write(json.dumps({"models_scored": done, "peak_rss_gb": _peak_gb()}) + "\n")


def worker(root: Path, run: Path, n_models: int, cores: int) -> None:
    """The timed part, in a fresh process: the streaming analysis of the first ``n_models``
    (scores from ``root/scores``, summaries cached in ``run/analysis``); prints one JSON line."""
    _pin(cores)
    from stylisticbias.analysis.run import run_analysis
    from stylisticbias.spec.parse import config_from_params

    t0 = time.perf_counter()
    params = json.loads((root / "params.json").read_text())
    names = [f"sim-{m + 1}" for m in range(n_models)]
    section = params["models"]["simulated-weak"]  # a complete model section
    params["models"] = {n: {**section, "name": n, "paper_name": None} for n in names}
    params["paths"].update(
        scores=str(root / "scores"),
        judgments=str(root / "judgments"),
        reports=str(run / "reports"),
        analysis_cache=str(run / "analysis"),
    )
    with TreeRSS() as tree:
        stats = run_analysis(config_from_params(params))
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    children = kids.ru_maxrss / 1024**2
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    sys.stdout.write(
        json.dumps(
            {
                "seconds": time.perf_counter() - t0,
                # user + system CPU of this process and its workers: under load, the wall time
                # stretches but this does not (idle wall on 2 cores ~ cpu / 2 for the per-model
                # part plus the serial cross-model step)
                "cpu_seconds": cpu,
                "models_analysed": len(stats.computed),
                "models_from_cache": len(stats.cached),
                # this process + its worker processes, summed (sampled every 0.2 s)
                "peak_rss_gb": max(tree.peak_gb, _peak_gb()),
                "peak_rss_gb_main_process": _peak_gb(),
                "peak_rss_gb_largest_worker": children,
                "workers": params["analysis"]["workers"],
                "load_avg_1m_mean": float(np.mean(tree.loads)) if tree.loads else None,
                "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            }
        )
        + "\n"
    )


#: judgment columns the scores stage reads
SCORE_INPUTS = [
    "image_id",
    "model",
    "scenario_id",
    "seed",
    "choice",
    "p_pos",
    "p_neg",
    "p_undecided",
    "simulated",
]


def _subprocess(args: list[str], cores: int) -> tuple[dict[str, Any], float]:
    cmd = [sys.executable, "-m", "stylisticbias_dev.bench.analysis", *args, "--cores", str(cores)]
    threads = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    env = {**os.environ, **{k: str(cores) for k in threads}}
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, cwd=project_root(), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{res.stderr[-4000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1]), wall


def _run_worker(root: Path, run: Path, n: int, cores: int) -> dict[str, Any]:
    before = _load()
    got, wall = _subprocess(["--worker", str(root), "--run", str(run), "--models", str(n)], cores)
    after = _load()
    return {
        "models": n,
        "analysis_seconds": round(got["seconds"], 1),
        "analysis_cpu_seconds": round(got["cpu_seconds"], 1),
        "subprocess_wall_seconds": round(wall, 1),
        "peak_rss_gb": round(got["peak_rss_gb"], 2),
        "peak_rss_gb_main_process": round(got["peak_rss_gb_main_process"], 2),
        "peak_rss_gb_largest_worker": round(got["peak_rss_gb_largest_worker"], 2),
        "workers": got["workers"],
        "models_analysed": got["models_analysed"],
        "models_from_cache": got["models_from_cache"],
        "cores": got["cores"],
        "tables_written": len(list((run / "reports" / "tables").glob("*.csv"))),
        "load_avg": {
            "1m_start": round(before[0], 2),
            "5m_start": round(before[1], 2),
            "1m_end": round(after[0], 2),
            "5m_end": round(after[1], 2),
            "1m_mean_during": round(float(got["load_avg_1m_mean"] or np.nan), 2),
        },
    }


def main(argv: list[str] | None = None) -> int:
    """Build the paper-scale input once, time the analysis at each size, write the JSON."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.analysis")
    ap.add_argument("--faces", type=int, default=500)
    ap.add_argument(
        "--models", default="6", help="comma-separated numbers of models, e.g. 6,20,100"
    )
    ap.add_argument(
        "--add-one",
        action="store_true",
        help="then add one model to the finished largest analysis and time that (incremental)",
    )
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--out", default="reports/bench/analysis.json")
    ap.add_argument(
        "--workdir",
        default=None,
        help="scratch dir (default: a temp dir, removed); judgments already there are reused",
    )
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--run", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--scores-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    sizes = [int(x) for x in str(args.models).split(",") if x.strip()]
    if args.worker:
        worker(Path(args.worker), Path(args.run), sizes[0], args.cores)
        return 0
    if args.scores_worker:
        scores_worker(Path(args.scores_worker), sizes[0], args.cores)
        return 0
    if not sizes or min(sizes) < 1:
        ap.error(f"--models: positive numbers, got {args.models!r}")
    params = compose()
    benchmark = benchmark_from_params(params)
    root = Path(args.workdir or tempfile.mkdtemp(prefix="sb-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    n_judged = max(sizes) + (1 if args.add_one else 0)
    try:
        faces, var = synthetic_dataset(benchmark, args.faces, seed=0)
        faces.to_parquet(root / "faces.parquet")
        var.to_parquet(root / "variations.parquet")
        rows = write_judgments(params, benchmark, faces, var, root, n_judged)
        (root / "params.json").write_text(json.dumps(params))
        scored = 0

        def score(n: int) -> list[float]:
            """Scores of the first n models (those missing); their per-model seconds."""
            nonlocal scored
            got, _ = _subprocess(["--scores-worker", str(root), "--models", str(n)], args.cores)
            scored += got["models_scored"]
            timing = json.loads((root / "scores_timing.json").read_text())
            return [timing[f"sim-{i + 1}"]["seconds"] for i in range(n)]

        def cpu_secs(n: int) -> list[float]:
            timing = json.loads((root / "scores_timing.json").read_text())
            return [timing[f"sim-{i + 1}"].get("cpu_seconds", np.nan) for i in range(n)]

        results = []
        for n in sizes:
            secs = score(n)
            run = root / f"run-{n}"
            shutil.rmtree(run, ignore_errors=True)
            r = _run_worker(root, run, n, args.cores)
            r["scores_seconds"] = round(float(np.sum(secs[:n])), 1)
            r["scores_cpu_seconds"] = round(float(np.sum(cpu_secs(n))), 1)
            r["seconds_scores_plus_analysis"] = round(
                r["scores_seconds"] + r["analysis_seconds"], 1
            )
            results.append(r)
            log.info("%d models: %s", n, r)
        add_one = None
        if args.add_one:
            n = max(sizes)
            secs = score(n + 1)
            add_one = _run_worker(root, root / f"run-{n}", n + 1, args.cores)
            add_one["added_to"] = n
            add_one["scores_seconds"] = secs[n]  # the new model's scores@MODEL stage
            add_one["scores_cpu_seconds"] = cpu_secs(n + 1)[n]
            add_one["seconds_scores_plus_analysis"] = round(
                add_one["scores_seconds"] + add_one["analysis_seconds"], 1
            )
            log.info("add one model to %d: %s", n, add_one)
        timing = json.loads((root / "scores_timing.json").read_text())
        tm = [timing[f"sim-{i + 1}"] for i in range(n_judged)]
        scores = {
            "models": n_judged,
            "seconds_per_model_median": round(float(np.median([t["seconds"] for t in tm])), 2),
            "seconds_total": round(float(np.sum([t["seconds"] for t in tm])), 1),
            "peak_rss_gb": round(max(t["process_peak_rss_gb"] for t in tm), 2),
            "load_avg_1m_median": round(float(np.median([t["load_avg_1m"] for t in tm])), 2),
            "models_scored_in_this_invocation": scored,
        }
        per_model = rows // n_judged
        first = results[0]
        report = {
            "rows_per_model": per_model,
            "score_rows_per_model": (len(faces) + len(var)) * len(benchmark.scenarios),
            "faces": len(faces),
            "images": len(faces) + len(var),
            "engine": "scores: the stage's columnar engine (pyarrow + numpy); analysis: pyarrow "
            "(score partitions, judgments), numpy/SciPy (statistics)",
            "scores_stage": scores,
            "sizes": [{**r, "rows": per_model * r["models"]} for r in results],
            "add_one_model": add_one,
            "peak_rss_ratio_largest_vs_smallest": round(
                results[-1]["peak_rss_gb"] / first["peak_rss_gb"], 3
            ),
            "n_resamples": params["analysis"]["bootstrap"]["n_resamples"],
            "n_permutations": params["analysis"]["n_permutations"],
            "targets": {
                "peak_rss_gb": 4,
                "peak_rss_ratio_largest_vs_smallest": 1.25,
                "seconds_100_models": 600,
                # judgments -> scores -> analysis (seconds_scores_plus_analysis)
                "seconds_100_models_end_to_end": 300,
                "seconds_add_one_model_end_to_end": 30,
            },
            "command": " ".join(
                ["python -m stylisticbias_dev.bench.analysis", *(argv or sys.argv[1:])]
            ),
            "machine": machine_info(),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "simulated": True,
        }
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        log.info("wrote %s", out)
    except RuntimeError as exc:
        log.error("%s", exc)
        return 1
    finally:
        if not args.workdir:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
