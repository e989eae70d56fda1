"""GPU judge benchmark: full-size random-weight models of the real architectures.

``python -m stylisticbias_dev.bench.judge_gpu --model qwen3-vl-8b`` (and ``llava-v1-6-mistral-7b``)

Builds the model in memory at its real shape (:mod:`stylisticbias_dev.full_size`: every layer,
width, vocabulary and vision-tower setting of the hub checkpoint; random weights, since none can
be downloaded) in bfloat16 on the GPU, with the real image processing (Qwen3-VL: 32 px per token,
at most 1,024 tokens; LLaVA-NeXT: anyres 336-px tiles, 2,928 tokens for a square image), and
times, on procedural faces at ``--size`` px (1,024: the size of the paper's Imagen images):

- ``exact`` decoding over all 25 scenarios x 4 orderings (what the pipeline runs): images/s,
  judgments/s (one exact row stands for K = 3 seeded responses), forward calls and branches;
- ``generate`` (the paper's literal protocol: one ``generate()`` per prompt and seed) on
  ``--generate-scenarios`` scenarios of ``--generate-images`` images: judgments/s;
- the projection to the paper's benchmark: ``16,226`` images (500 base faces + 15,726 evaluated
  variations) x 300 judgments, in GPU-hours for each decoding (``gpu_hours_exact``, target <= 2
  per 8B model), and ``speedup_exact_vs_generate``;
- peak GPU memory (``torch.cuda.max_memory_allocated``) and the engine settings used.

The first image is a warm-up (kernels, allocator, the shared-prefix check) and is not timed.
Results merge into ``reports/bench/judge_gpu.json`` under ``models.<name>`` (one command per
model), each with its command, machine (GPU named) and date. ``--device cpu --scale tiny`` runs
the same code path with shrunken widths (the tests do that); its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import load_group_option, load_params, project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.judge.engines.hf.engine import HFJudgeEngine
from stylisticbias.judge.protocol.prompts import render_all
from stylisticbias_dev.bench.judge import _images
from stylisticbias_dev.bench.machine import machine_info, peak_rss_gb
from stylisticbias_dev.bench.results import merge_model_result
from stylisticbias_dev.full_size import FULL_RESIDUAL_SCALE, SCALES, SPECS, build

log = logging.getLogger(__name__)

#: Images the paper's judging covers: 500 base faces + 15,726 evaluated variations.
PAPER_IMAGES = 16_226
#: Judgments per image in the paper's protocol: 25 scenarios x 4 orderings x 3 seeds.
PAPER_JUDGMENTS_PER_IMAGE = 300


def _engine(
    model_cfg: dict[str, Any],
    engine_cfg: dict[str, Any],
    judge: dict[str, Any],
    bench: Any,
    model: Any,
    processor: Any,
    device: str,
) -> HFJudgeEngine:
    eng = HFJudgeEngine(model_cfg, engine_cfg, judge, bench)
    eng.model, eng.processor, eng.device = model, processor, device
    eng._rendered = render_all(processor, eng.specs, eng.chat_template_kwargs)
    return eng


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def run(
    name: str,
    *,
    n_images: int = 8,
    gen_images: int = 1,
    gen_scenarios: int = 2,
    size: int = 1024,
    device: str = "cuda",
    dtype: str = "bfloat16",
    scale: str = "full",
    engine_overrides: dict[str, Any] | None = None,
    residual_scale: float | None = None,
    profile: Path | None = None,
) -> dict[str, Any]:
    """Build ``name`` at ``scale`` on ``device`` and time both decodings; the measurements.

    ``profile``: also profile one more image (cProfile, then ``torch.profiler``) and write both
    tables there (text), for finding where an image's time goes.
    """
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise StylisticBiasError(
            "--device cuda: no CUDA device here (use --device cpu --scale tiny)"
        )
    params = load_params()
    bench = benchmark_from_params(params)
    judge = dict(params["judge"])
    judge.update({"temperature": 0.2, "max_new_tokens": 16, "orderings": bench.ordering_ids})
    judge["seeds"] = [1, 2, 3]
    k = len(judge["seeds"])
    model_cfg = dict(load_group_option("model", name))
    engine_cfg = dict(load_group_option("engine", "hf"))
    engine_cfg.pop("lightning", None)
    engine_cfg.update(engine_overrides or {})
    engine_cfg["device"] = device

    t = time.perf_counter()
    model, processor = build(
        name, device=device, dtype=dtype, scale=scale, residual_scale=residual_scale
    )
    build_s = time.perf_counter() - t
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    weights_gb = sum(p.numel() * p.element_size() for p in model.parameters()) / 1e9

    images = _images(n_images + 3, size)
    items = [ImageItem(f"bench{i}", f"bench{i}", "", True) for i in range(n_images + 3)]
    exact = _engine(
        model_cfg,
        {**engine_cfg, "decoding": "exact"},
        {**judge, "scenarios": "all"},
        bench,
        model,
        processor,
        device,
    )
    exact.judge(items[:1], images[:1])  # warm-up
    _sync(device)
    per_image: list[float] = []
    rows = 0
    stats: dict[str, Any] = {"forward_calls": 0, "branch_rows": 0, "capped_mass": 0.0}
    undecided: list[float] = []
    image_tokens: list[int] = []
    for i in range(1, n_images + 1):
        t = time.perf_counter()
        df = exact.judge(items[i : i + 1], images[i : i + 1])
        _sync(device)
        per_image.append(time.perf_counter() - t)
        rows += len(df)
        for key in stats:
            stats[key] += exact.last_stats.get(key, 0)
        undecided.append(exact.last_stats["undecided_mass_mean"])
        image_tokens.extend(exact.last_stats["image_tokens_per_image"])
    exact_s = sum(per_image)
    if profile is not None:
        _profile(exact, items[n_images + 1 :], images[n_images + 1 :], device, profile)
    exact_img_s = n_images / exact_s
    exact_j_s = rows * k / exact_s

    ids = [s.id for s in bench.scenarios][:gen_scenarios]
    gen = _engine(
        model_cfg,
        {**engine_cfg, "decoding": "generate"},
        {**judge, "scenarios": ids},
        bench,
        model,
        processor,
        device,
    )
    gen.judge(items[:1], images[:1]) if gen_images else None  # warm-up (not timed)
    _sync(device)
    t = time.perf_counter()
    dg = gen.judge(items[1 : 1 + gen_images], images[1 : 1 + gen_images])
    _sync(device)
    gen_s = time.perf_counter() - t
    gen_j_s = len(dg) / gen_s

    peak_gpu = torch.cuda.max_memory_allocated() / 1e9 if device.startswith("cuda") else None
    per_img_j = PAPER_JUDGMENTS_PER_IMAGE
    return {
        "benchmark": f"judge engine on a full-size random-weight {name} ({scale} scale)",
        "model": name,
        "hub_id_of_shape": SPECS[name].hub_id,
        "parameters_billion": round(sum(p.numel() for p in model.parameters()) / 1e9, 3),
        "weights_gb": round(weights_gb, 2),
        "scale": scale,
        "device": device,
        "dtype": dtype,
        "images_per_s_exact": round(exact_img_s, 4),
        "seconds_per_image_exact_median": round(statistics.median(per_image), 3),
        "judgments_per_s_exact": round(exact_j_s, 2),
        "judgments_per_s_generate": round(gen_j_s, 3),
        "speedup_exact_vs_generate": round(exact_j_s / gen_j_s, 2),
        "paper_images": PAPER_IMAGES,
        "gpu_hours_exact": round(PAPER_IMAGES / exact_img_s / 3600, 3),
        "gpu_hours_generate": round(PAPER_IMAGES * per_img_j / gen_j_s / 3600, 2),
        "target_gpu_hours": 2.0,
        "peak_gpu_memory_gb": round(peak_gpu, 2) if peak_gpu is not None else None,
        "peak_rss_gb": peak_rss_gb(),
        "build_seconds": round(build_s, 1),
        "images_timed_exact": n_images,
        "image_size_px": size,
        "image_tokens_per_image": sorted(set(image_tokens)),
        "exact_prompts_per_image": len(exact.specs),
        "exact_forward_calls_per_image": stats["forward_calls"] / n_images,
        "exact_branch_rows_per_image": stats["branch_rows"] / n_images,
        "exact_undecided_mass_mean": round(statistics.fmean(undecided), 6),
        "exact_capped_mass": stats["capped_mass"],
        "generate_calls_timed": len(dg),
        "settings": {
            "temperature": 0.2,
            "max_new_tokens": 16,
            "orderings": 4,
            "seeds": k,
            **{
                key: engine_cfg.get(key)
                for key in (
                    "prune_threshold",
                    "suffix_batch_size",
                    "branch_batch_size",
                    "max_branches_per_suffix",
                )
            },
            "prefix_sharing": exact.prefix_sharing if exact._shared_ok else "copy",
            "residual_scale": (
                residual_scale
                if residual_scale is not None
                else (FULL_RESIDUAL_SCALE if scale == "full" else 1.0)
            ),
        },
        "machine": machine_info(),
        "torch": torch.__version__,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "note": (
            "Random weights of the real shape with a planted answer grammar and a word-level "
            "tokenizer (prompt suffixes ~1 token per word): FLOPs, KV-cache size and image "
            "tokens are the real model's; the number of branches exact decoding expands depends "
            "on how peaked the real model's answers are (a real chat model is usually more "
            "peaked than the planted grammar, i.e. fewer branches)."
        ),
    }


def _profile(
    eng: HFJudgeEngine, items: list[ImageItem], images: list[Any], device: str, out: Path
) -> None:
    """One image under cProfile and one under ``torch.profiler``; both tables to ``out``."""
    import cProfile
    import io
    import pstats

    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    prof = cProfile.Profile()
    prof.enable()
    eng.judge(items[:1], images[:1])
    _sync(device)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(45)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with torch_profile(activities=acts) as tp:
        eng.judge(items[1:2], images[1:2])
        _sync(device)
    key = "self_cuda_time_total" if device.startswith("cuda") else "self_cpu_time_total"
    table = tp.key_averages().table(sort_by=key, row_limit=35)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        f"# cProfile of one image (cumulative)\n{buf.getvalue()}\n"
        f"# torch.profiler of one image (by {key})\n{table}\n",
        encoding="utf-8",
    )
    log.info("profile -> %s", out)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    argv_list = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(
        prog="python -m stylisticbias_dev.bench.judge_gpu", description=__doc__
    )
    ap.add_argument("--model", required=True, choices=sorted(SPECS))
    ap.add_argument("--images", type=int, default=8, help="images timed with exact decoding")
    ap.add_argument("--generate-images", type=int, default=1)
    ap.add_argument("--generate-scenarios", type=int, default=2)
    ap.add_argument("--size", type=int, default=1024, help="face image size in px")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--scale", default="full", choices=SCALES)
    ap.add_argument("--suffix-batch-size", type=int, default=None)
    ap.add_argument("--branch-batch-size", type=int, default=None)
    ap.add_argument(
        "--residual-scale",
        type=float,
        default=None,
        help=f"damping of the random residual branches (default {FULL_RESIDUAL_SCALE} at full "
        "scale, 1 at tiny; see stylisticbias_dev.full_size.damp_residual)",
    )
    ap.add_argument("--profile", default=None, help="write a profile of one more image here")
    ap.add_argument("--out", default=str(project_root() / "reports" / "bench" / "judge_gpu.json"))
    args = ap.parse_args(argv_list)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    over = {
        k: v
        for k, v in (
            ("suffix_batch_size", args.suffix_batch_size),
            ("branch_batch_size", args.branch_batch_size),
        )
        if v is not None
    }
    try:
        res = run(
            args.model,
            n_images=args.images,
            gen_images=args.generate_images,
            gen_scenarios=args.generate_scenarios,
            size=args.size,
            device=args.device,
            dtype=args.dtype,
            scale=args.scale,
            engine_overrides=over,
            residual_scale=args.residual_scale,
            profile=Path(args.profile) if args.profile else None,
        )
    except StylisticBiasError as exc:
        log.error("error: %s", exc)
        return 2
    res["command"] = shlex.join(["python", "-m", "stylisticbias_dev.bench.judge_gpu", *argv_list])
    out = Path(args.out)
    merge_model_result(out, args.model, res)
    log.info(
        "%s: %.3f images/s exact -> %.2f GPU-hours for %d images; %.1fx vs generate -> %s",
        args.model,
        res["images_per_s_exact"],
        res["gpu_hours_exact"],
        PAPER_IMAGES,
        res["speedup_exact_vs_generate"],
        out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
