"""Which columnar engine reads the score partitions and judgments for the streaming analysis?

``python -m stylisticbias_dev.bench.scan_engines --workdir DIR [--models 20] [--repeats 3]``

``DIR`` is a kept workdir of :mod:`stylisticbias_dev.bench.analysis` (``judgments/sim-*/``,
``scores/model=sim-*/``). Each engine x task runs in a fresh subprocess (its own peak RSS);
the median of ``--repeats`` runs is reported:

- ``scores_one_model``: one model's score partition -> the pandas frame the per-model step reads
  (all analysis columns), out of a hive dataset of ``--models`` partitions;
- ``judgments_one_model``: one model's judgments -> the diagnostics columns as pandas
  (categorical strings);
- ``all_models_query``: mean delta per model over every partition (the docs/storage.md query).

Engines: pyarrow (``parquet.read_table`` / ``dataset`` with hive partitioning), DuckDB
(``read_parquet(..., hive_partitioning=true)``), Polars (``scan_parquet``, lazy) -- those
installed. Writes ``reports/bench/scan_engines.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stylisticbias.config import project_root
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)

SCORE_COLS = [
    "face_id",
    "is_base",
    "category",
    "attribute",
    "value",
    "age",
    "gender",
    "ethnicity",
    "body_type",
    "scenario_id",
    "scenario_category",
    "phi",
    "delta",
    "simulated",
]
JUDG_COLS = [
    "face_id",
    "scenario_id",
    "ordering",
    "seed",
    "choice",
    "p_pos",
    "p_neg",
    "p_invalid",
    "p_undecided",
]
ENGINES = ("pyarrow", "pyarrow_dataset", "duckdb", "polars")
TASKS = ("scores_one_model", "judgments_one_model", "all_models_query")
#: (engine, task) pairs whose code is another pair's (judgments: one file; query: a dataset)
SAME_CODE = {("pyarrow_dataset", "judgments_one_model"), ("pyarrow", "all_models_query")}


def _task(engine: str, task: str, root: Path, model: str) -> Any:
    scores = root / "scores"
    glob = str(scores / "*" / "*.parquet")
    jfile = root / "judgments" / model / "judgments.parquet"
    cols = ", ".join(SCORE_COLS)
    if engine in ("pyarrow", "pyarrow_dataset"):
        import pyarrow.compute as pc
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        if task == "scores_one_model":
            if engine == "pyarrow":
                t = pq.read_table(scores / f"model={model}" / "part-0.parquet", columns=SCORE_COLS)
            else:
                d = ds.dataset(scores, format="parquet", partitioning="hive")
                t = d.to_table(columns=SCORE_COLS, filter=pc.field("model") == model)
            return t.to_pandas()
        if task == "judgments_one_model":
            t = pq.read_table(jfile, columns=JUDG_COLS, read_dictionary=["face_id", "choice"])
            return t.to_pandas()
        d = ds.dataset(scores, format="parquet", partitioning="hive")
        t = d.to_table(columns=["model", "delta"])
        return t.group_by("model").aggregate([("delta", "mean")]).to_pandas()
    if engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute(f"SET threads TO {len(os.sched_getaffinity(0))}")
        if task == "scores_one_model":
            q = f"SELECT {cols} FROM read_parquet(?, hive_partitioning=true) WHERE model = ?"
            return con.execute(q, [glob, model]).to_arrow_table().to_pandas()
        if task == "judgments_one_model":
            q = f"SELECT {', '.join(JUDG_COLS)} FROM read_parquet(?)"
            return con.execute(q, [str(jfile)]).to_arrow_table().to_pandas()
        q = (
            "SELECT model, avg(delta) FROM read_parquet(?, hive_partitioning=true) "
            "GROUP BY model ORDER BY model"
        )
        return con.execute(q, [glob]).df()
    if engine == "polars":
        import polars as pl

        if task == "scores_one_model":
            lf = pl.scan_parquet(glob, hive_partitioning=True)
            return lf.filter(pl.col("model") == model).select(SCORE_COLS).collect().to_pandas()
        if task == "judgments_one_model":
            return pl.scan_parquet(jfile).select(JUDG_COLS).collect().to_pandas()
        lf = pl.scan_parquet(glob, hive_partitioning=True)
        return lf.group_by("model").agg(pl.col("delta").mean()).sort("model").collect()
    raise ValueError(engine)


def worker(engine: str, task: str, root: Path, model: str, repeats: int) -> None:
    """Run one engine x task ``repeats`` times; print the median seconds and peak RSS."""
    secs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = _task(engine, task, root, model)
        secs.append(time.perf_counter() - t0)
        n = len(out)
        del out
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    sys.stdout.write(json.dumps({"seconds": statistics.median(secs), "rows": n, "rss": peak}))


def _installed(engine: str) -> bool:
    mod = {"pyarrow_dataset": "pyarrow"}.get(engine, engine)
    try:
        __import__(mod)
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Measure every installed engine on every task; write the JSON."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.scan_engines")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--models", type=int, default=20, help="partitions in the dataset scanned")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--out", default="reports/bench/scan_engines.json")
    ap.add_argument("--worker", nargs=2, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    src = Path(args.workdir)
    if args.worker:
        worker(args.worker[0], args.worker[1], src, "sim-1", args.repeats)
        return 0
    # a dataset of exactly --models partitions (links to the workdir's files)
    root = src / f"scan-{args.models}"
    for m in range(1, args.models + 1):
        d = root / "scores" / f"model=sim-{m}"
        d.mkdir(parents=True, exist_ok=True)
        link = d / "part-0.parquet"
        if not link.exists():
            link.symlink_to(src / "scores" / f"model=sim-{m}" / "part-0.parquet")
    (root / "judgments").mkdir(exist_ok=True)
    if not (root / "judgments" / "sim-1").exists():
        (root / "judgments" / "sim-1").symlink_to(src / "judgments" / "sim-1")
    threads = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS")
    env = {**os.environ, **{k: str(args.cores) for k in threads}}
    results: dict[str, dict[str, Any]] = {}
    for task in TASKS:
        results[task] = {}
        for engine in ENGINES:
            if not _installed(engine) or (engine, task) in SAME_CODE:
                continue
            cmd = [
                sys.executable,
                "-m",
                "stylisticbias_dev.bench.scan_engines",
                "--workdir",
                str(root),
                "--repeats",
                str(args.repeats),
                "--worker",
                engine,
                task,
            ]
            load = os.getloadavg()[0]
            res = subprocess.run(cmd, env=env, cwd=project_root(), capture_output=True, text=True)
            if res.returncode != 0:
                log.error("%s %s failed: %s", engine, task, res.stderr[-2000:])
                return 1
            got = json.loads(res.stdout)
            results[task][engine] = {
                "seconds_median": round(got["seconds"], 3),
                "peak_rss_gb": round(got["rss"], 3),
                "rows": got["rows"],
                "load_avg_1m": round(load, 2),
            }
            log.info("%s %s: %s", task, engine, results[task][engine])
    report = {
        "partitions": args.models,
        "repeats": args.repeats,
        "results": results,
        "command": " ".join(
            ["python -m stylisticbias_dev.bench.scan_engines", *(argv or sys.argv[1:])]
        ),
        "machine": machine_info(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    log.info("wrote %s", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
