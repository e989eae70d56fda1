"""Generation benchmark: render the paper-size procedural dataset and time it.

``python -m stylisticbias_dev.bench.generation [--faces 500] [--workers 2] [--size 256]`` samples
the identities with the paper marginals, renders every base face and every plausible
variation (``benchmark.variations_for(gender)``), PNG-encodes and writes each image to a
temporary directory the way the dataset builder does (encode + write are timed), and writes
``reports/bench/generation.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import multiprocessing as mp
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from PIL import Image

from stylisticbias.benchmark import Benchmark, benchmark_from_params
from stylisticbias.config import load_params, project_root
from stylisticbias.dataset.render_cache import encode_image
from stylisticbias.generators.base import EditSpec, FaceSpec
from stylisticbias.generators.procedural import ProceduralGenerator
from stylisticbias.sampling import sample_identities
from stylisticbias_dev.bench.machine import machine_info, peak_rss_gb

log = logging.getLogger(__name__)

_STATE: dict[str, object] = {}


def _init(size: int, out_dir: str, params: dict) -> None:
    _STATE["gen"] = ProceduralGenerator(size=size, cache_faces=1)
    _STATE["out"] = Path(out_dir)
    _STATE["bench"] = benchmark_from_params(params)


def _write(image: Image.Image, path: Path) -> str:
    """Encode and write as the dataset builder does (PNG level 1); returns the sha256."""
    data = encode_image(image, "png")
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def _render_face(spec: FaceSpec) -> int:
    """Base face + all its variations, written as PNG files; returns the image count."""
    gen: ProceduralGenerator = _STATE["gen"]  # type: ignore[assignment]
    out: Path = _STATE["out"]  # type: ignore[assignment]
    bench: Benchmark = _STATE["bench"]  # type: ignore[assignment]
    base = gen.generate_faces([spec])[0].image
    assert base is not None
    _write(base, out / f"{spec.face_id}.png")
    edits = [EditSpec(spec, v, "", spec.seed) for v in bench.variations_for(spec.gender)]
    n = 1
    for i in range(0, len(edits), gen.batch_size):
        for e, res in zip(
            edits[i : i + gen.batch_size], gen.edit(base, edits[i : i + gen.batch_size])
        ):
            if res.image is None:
                raise RuntimeError(f"{spec.face_id} {e.variation.slug}: {res.reason}")
            _write(res.image, out / f"{spec.face_id}--{e.variation.slug}.png")
            n += 1
    return n


def run(n_faces: int = 500, workers: int = 2, size: int = 256, seed: int = 0) -> dict[str, object]:
    """Render the dataset once and return the measurements."""
    params = load_params()
    bench = benchmark_from_params(params)
    ids = sample_identities(bench, n_faces, seed=seed, sampler="paper_marginals")
    specs = [
        FaceSpec(r.face_id, r.age, r.gender, r.ethnicity, r.body_type, int(r.seed), "")
        for r in ids.itertuples()
    ]
    with tempfile.TemporaryDirectory(prefix="sb-bench-gen-") as tmp:
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        if workers > 1:
            ctx = mp.get_context("fork")
            with ctx.Pool(workers, initializer=_init, initargs=(size, tmp, params)) as pool:
                images = sum(pool.imap_unordered(_render_face, specs, chunksize=4))
        else:
            _init(size, tmp, params)
            images = sum(_render_face(s) for s in specs)
        seconds = time.perf_counter() - t0
    return {
        "images_per_s": round(images / seconds, 2),
        "images": images,
        "faces": n_faces,
        "seconds": round(seconds, 2),
        "peak_rss_gb": peak_rss_gb(),
        "workers": workers,
        "size": size,
        "generator": "procedural",
        "machine": machine_info(),
        # other processes competing for the cores lower the throughput: record the load
        "load_avg_1m": {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; writes reports/bench/generation.json."""
    p = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.generation")
    p.add_argument("--faces", type=int, default=500)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--out", type=Path, default=None, help="default: reports/bench/generation.json")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    result = run(args.faces, args.workers, args.size)
    argv_list = list(sys.argv[1:] if argv is None else argv)
    result = {
        "command": shlex.join(["python", "-m", "stylisticbias_dev.bench.generation", *argv_list]),
        **result,
    }
    out = args.out or project_root() / "reports" / "bench" / "generation.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    log.info(
        "%s images in %ss: %s images/s -> %s",
        result["images"],
        result["seconds"],
        result["images_per_s"],
        out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
