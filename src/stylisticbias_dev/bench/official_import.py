"""Benchmark of importing a released-code run: ``reports/bench/official_import.json``.

Writes trees of the paper's released code's raw judgment files (one JSON per call, as its
judgement pipeline writes them, answers drawn from a realistic mix of forms) of 50,000 and
200,000 files, imports each in a fresh process (:func:`stylisticbias.judge.official_layout.importer.
import_official`) and records files/s and the child's peak RSS. Targets: >= 5,000 files/s;
peak RSS flat in the number of files (the 200k import within 10% + 30 MB of the 50k one).
The files are read from a warm page cache (just written).

``python -m stylisticbias_dev.bench.official_import [--files 50000,200000] [--workdir DIR]``
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import load_params, project_root
from stylisticbias.judge.official_layout.layout import file_name, options, prompt, released_of
from stylisticbias.outputs import atomic_write_text
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)

ANSWERS = [
    "(a)",
    "(b)",
    "(a)",
    "(b)",
    "A",
    "b)",
    "(b) Untrustworthy",
    "I cannot tell.",
    "<think>The person looks calm.</think>\n(a)",
    "Answer: (b)",
]
CHILD = """
import json, sys, time
from pathlib import Path
from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import load_params
from stylisticbias.judge.official_layout.importer import ImportSpec, import_official
b = benchmark_from_params(load_params())
st = import_official(ImportSpec(Path(sys.argv[1]), Path(sys.argv[2])), b)
print(json.dumps({"files": st.files, "rows": st.rows, "bad": st.bad, "seconds": st.seconds}))
"""


def write_tree(root: Path, n_files: int) -> float:
    """A released-code tree of ``n_files`` files (one model, 20 images per face, 25 scenarios x
    4 orders x 1 seed per image); returns the seconds it took."""
    b = benchmark_from_params(load_params())
    t0 = time.perf_counter()
    per_image = len(b.scenarios) * len(b.orderings)
    n_images = -(-n_files // per_image)
    rel = released_of(b)
    shown = {(sc.id, o.id): options(b, sc, o) for sc in b.scenarios for o in b.orderings}
    prompts = {k: prompt(b, b.scenario(k[0]), b.ordering(k[1])) for k in shown}
    evaluated = [v for v in b.variations if v.evaluated and v.gender_scope == "all"]
    written = 0
    for i in range(n_images):
        face = f"F{i // 20:05d}"
        # the released layout: the base in the folder named like the face, a variation's
        # characteristics name it in the released spelling
        image = face if i % 20 == 0 else f"{face}_face_{i % 20:02d}"
        chars: dict = {"age": "elderly"}
        if i % 20:
            v = evaluated[(i % 20) % len(evaluated)]
            chars = {"base": f"{face}.png", "variation": {v.key: rel.value(v.key, v.value)}}
        d = root / "bench-model" / face / image
        d.mkdir(parents=True, exist_ok=True)
        for (sid, oid), (a, bb) in shown.items():
            if written >= n_files:
                break
            doc = {
                "face_image_name": f"{image}.png",
                "characteristics": chars,
                "order": oid,
                "seed": 1,
                "prompt": prompts[(sid, oid)],
                "timestamp": "2026-05-03T04:12:15+00:00",
                "options": {"a": a, "b": bb},
                "chosen_option": a,
                "raw_output": ANSWERS[written % len(ANSWERS)],
            }
            name = file_name(image, rel.index_of(sid), oid, 1)
            (d / name).write_text(json.dumps(doc, indent=2))
            written += 1
    return time.perf_counter() - t0


def run_import(root: Path, out: Path) -> dict:
    """Import in a child process; its result, wall seconds and peak RSS (MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(out)],
        check=True,
        capture_output=True,
        text=True,
        cwd=project_root(),
    )
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    doc["wall_seconds"] = round(wall, 2)
    doc["files_per_s"] = round(doc["files"] / doc["seconds"], 1)
    # ru_maxrss of children is the max over all children so far: sizes run in increasing order
    doc["peak_rss_mb"] = round(max(peak, before) / 1024, 1)
    return doc


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", default="50000,200000")
    ap.add_argument("--workdir", default=".cache/bench-official-import")
    ap.add_argument("--out", default="reports/bench/official_import.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    work = Path(args.workdir)
    sizes = sorted(int(x) for x in args.files.split(","))
    runs = {}
    for n in sizes:
        root, out = work / f"raw-{n}", work / f"out-{n}"
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        gen = write_tree(root, n)
        r = run_import(root, out)
        r["write_seconds"] = round(gen, 1)
        log.info("%d files: %s", n, r)
        runs[str(n)] = r
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    big, small = runs[str(sizes[-1])], runs[str(sizes[0])]
    doc = {
        "runs": runs,
        "targets": {
            "files_per_s": 5000,
            "flat_memory": "peak RSS at the largest size <= 1.1 x the smallest + 30 MB",
        },
        "meets_speed": all(r["files_per_s"] >= 5000 for r in runs.values()),
        "meets_memory": big["peak_rss_mb"] <= 1.1 * small["peak_rss_mb"] + 30,
        "command": "python -m stylisticbias_dev.bench.official_import "
        + " ".join(argv or sys.argv[1:]),
        "machine": machine_info(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "note": "files read from a warm page cache (just written); one process, one thread",
    }
    atomic_write_text(Path(args.out), json.dumps(doc, indent=2) + "\n")
    log.info("wrote %s", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
