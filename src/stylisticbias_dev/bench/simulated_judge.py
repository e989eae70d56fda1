"""Speed of the simulated judge: seconds to judge ``--images`` images x every prompt.

``python -m stylisticbias_dev.bench.simulated_judge --images 2000 --repeats 3``

Judges ``--images`` synthetic items (a third of them base images, the others one evaluated
variation each) with the ``simulated-strong`` judge under the default protocol's scenarios,
orderings and seeds (300 prompts per image), ``--repeats`` times, and records the seconds of
each run. Target: the paper's scale (16,226 images) in ~10 s, i.e. 2,000 images well under
10 s. A test asserts the records, not the seconds (a loaded machine is slow, not broken).
Writes ``reports/bench/simulated_judge.json`` with the command, the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stylisticbias.benchmark import load_benchmark
from stylisticbias.cli import setup_logging
from stylisticbias.config import load_group_option
from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine
from stylisticbias.outputs import atomic_write_text
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)

MODEL = "simulated-strong"
ENGINE = {"name": "simulated", "decoding": "simulated", "planted": "conf/planted/default.yaml"}
JUDGE = {"orderings": [1, 2, 3, 4], "seeds": [1, 2, 3], "scenarios": "all"}
TARGET_S = 10.0  # for 2,000 images (the paper's 16,226 in about this)


def synthetic_items(n: int, protocol: str = "stylisticbias") -> list[ImageItem]:
    """``n`` items: every third a base image, the others one evaluated variation each."""
    bench = load_benchmark(protocol)
    vals = [v for v in bench.variations if v.evaluated and v.gender_scope == "all"]
    out = []
    for i in range(n):
        attrs: dict[str, Any] = {
            "age": "elderly",
            "gender": "female",
            "ethnicity": "Asian",
            "body_type": "obese",
        }
        if i % 3:
            v = vals[i % len(vals)]
            attrs.update(attribute=v.attribute, value=v.value, category=v.category)
        else:
            attrs.update(attribute=None, value=None, category=None)
        out.append(ImageItem(f"img{i:05d}", f"f{i // 3}", "/nonexistent.png", i % 3 == 0, attrs))
    return out


def run(n_images: int, repeats: int) -> dict[str, Any]:
    """Judge ``n_images`` items ``repeats`` times; the result record."""
    bench = load_benchmark("stylisticbias")
    eng = SimulatedJudgeEngine(load_group_option("model", MODEL), ENGINE, JUDGE, bench)
    items = synthetic_items(n_images)
    secs, rows = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        rows = len(eng.judge(items, [None] * len(items)))
        secs.append(time.perf_counter() - t0)
    return {
        "model": MODEL,
        "images": n_images,
        "records": rows,
        "seconds": [round(s, 3) for s in secs],
        "seconds_median": round(statistics.median(secs), 3),
        "target_s": TARGET_S if n_images <= 2000 else None,
    }


def main() -> None:
    """Command line."""
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("reports/bench/simulated_judge.json"))
    args = ap.parse_args()
    res = run(args.images, args.repeats)
    doc = {
        **res,
        "command": "python -m stylisticbias_dev.bench.simulated_judge "
        f"--images {args.images} --repeats {args.repeats}",
        "machine": machine_info(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")
    log.info(
        "%d images: %d records in %.2f s (median of %d)",
        args.images,
        res["records"],
        res["seconds_median"],
        args.repeats,
    )


if __name__ == "__main__":
    main()
