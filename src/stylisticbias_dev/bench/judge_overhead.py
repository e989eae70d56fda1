"""Judge engine overhead: measured seconds per image / seconds of the bare forward passes.

``python -m stylisticbias_dev.bench.judge_overhead`` (options: ``--models``, ``--images``,
``--baseline-commit``, ``--profile``) writes ``reports/bench/judge_overhead.json``.

For each architecture (Qwen3-VL, LLaVA-NeXT) a random-weight model of the real architecture is
built at the **shrunk** shape of :mod:`stylisticbias_dev.full_size` (decoder hidden 1024,
8 layers, GQA 16/4 heads; the real vocabulary, image processing and image-token count -- 1,024
tokens for Qwen3-VL at 1,024 px, 2,928 for LLaVA-NeXT; a small vision tower), with the **real
tokenizer** (:mod:`stylisticbias_dev.real_tokenizers`), so the 100 prompt suffixes have the
token counts the real model sees. The planted answer grammar is kept readable through the depth
by ``damp_residual`` (undecided mass reported). Then, on the same procedural faces:

1. **engine**: ``HFJudgeEngine`` (``decoding=exact``, all 25 scenarios x 4 orderings), one
   warm-up image, then ``--images`` timed images: seconds per image, phase breakdown
   (preprocessing, vision tower, prefix prefill, suffix forward, each expansion depth's forward,
   host work between forwards), forward calls, host transfers, peak memory;
2. **bare**: right after each timed image, exactly the forward passes the answer needs, with
   the same batch shapes and no engine code around them: the prefix (vision tower included,
   batch 1), ONE forward of all 100 suffixes (left-padded to the longest), and per expansion
   depth one forward of the live branches the engine had at that depth. They run on the same
   shared-prefix attention the engine uses (the kernel is not what is measured); everything the
   engine does between them (logits processing, softmax, pruning, parsing, cache bookkeeping)
   is not in them. **overhead ratio** = engine seconds / bare seconds per image (median of the
   per-image ratios; each pair is measured back to back, which cancels most of the load drift
   of a shared machine);
3. **previous engine**: the same model (saved to a temporary checkpoint) and images judged by
   the engine at ``--baseline-commit`` (a ``git worktree`` of it, run in a subprocess with that
   commit's code) -- its seconds per image, forward calls, and the largest difference of its
   probabilities from the new engine's (the two must agree).

CPU only by default (``--device cuda`` runs the same on a GPU, with synchronised phase clocks).
Machine load (``os.getloadavg``) is recorded before and after: the machine is shared.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import json
import logging
import os
import pstats
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import load_group_option, load_params, project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.judge.protocol.prompts import common_prefix_len, tokenize_text
from stylisticbias_dev.bench.judge import _images
from stylisticbias_dev.bench.judge_gpu import _engine
from stylisticbias_dev.bench.machine import machine_info, peak_rss_gb
from stylisticbias_dev.bench.results import merge_model_result
from stylisticbias_dev.full_size import SPECS, build

log = logging.getLogger(__name__)

TARGET_RATIO = 1.3
DEFAULT_BASELINE = "b0e6d99"
#: residual damping of the shrunk models (8 random layers drown the planted grammar undamped)
SHRUNK_RESIDUAL_SCALE = 1e-3
_SHAPE_KEYS = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
)
_TOKENIZER_KIND = {"qwen3-vl-8b": "qwen", "llava-v1-6-mistral-7b": "mistral"}


def _sync(device: str) -> Any:
    if device.startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return None


def suffix_token_counts(processor: Any, rendered: Sequence[str]) -> list[int]:
    """Tokens per prompt suffix (after the longest common prefix), as the engine splits them."""
    toks = [tokenize_text(processor, r) for r in rendered]
    cut = min(common_prefix_len(toks), min(len(t) for t in toks) - 1)
    return [len(t) - cut for t in toks]


class _VisionClock:
    """Wall time spent in the vision tower (forward hooks; synchronised on a GPU)."""

    def __init__(self, model: Any, sync: Any) -> None:
        inner = getattr(model, "model", model)
        self.module = getattr(inner, "visual", None) or getattr(inner, "vision_tower", None)
        self.sync = sync
        self.seconds = 0.0
        self._t = 0.0
        if self.module is not None:
            self.module.register_forward_pre_hook(self._pre)
            self.module.register_forward_hook(self._post)

    def _pre(self, *args: Any) -> None:
        if self.sync:
            self.sync()
        self._t = time.perf_counter()

    def _post(self, *args: Any) -> None:
        if self.sync:
            self.sync()
        self.seconds += time.perf_counter() - self._t


def bare_forwards(eng: Any, img: Any, calls: Sequence[tuple[str, int, int]], sync: Any) -> float:
    """Seconds of exactly the forward passes of one image (see module doc), nothing around them.

    ``calls``: the engine's ``(phase, rows, query tokens)`` log for this image; the suffix pass
    is ONE forward of all suffixes left-padded to the longest, each expansion depth ONE forward
    of the rows the engine had live at that depth. Inputs and caches are built outside the clock.
    """
    import torch

    from stylisticbias.judge.engines.hf.prompts import split_prompts
    from stylisticbias.judge.engines.hf.shared_prefix import SharedPrefixCache

    model = eng.model
    prompts = split_prompts(
        model,
        eng.processor,
        img,
        [s.text for s in eng.specs],
        eng._rendered,
        eng.chat_template_kwargs,
        text_tokens=eng._text_tokens,
    )
    dev = model.device
    inputs = {k: v.to(dev) if hasattr(v, "to") else v for k, v in prompts.prefix_inputs.items()}
    if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
        inputs["pixel_values"] = inputs["pixel_values"].to(model.dtype)
    depth_rows: dict[str, int] = collections.OrderedDict()
    for phase, rows, _q in calls:
        if phase.startswith("step"):
            depth_rows[phase] = depth_rows.get(phase, 0) + rows
    sfx = prompts.suffixes
    n, width, p_len = len(sfx), max(len(s) for s in sfx), len(prompts.prefix_ids)
    ids = torch.tensor([[s[0]] * (width - len(s)) + list(s) for s in sfx], device=dev)
    real = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sfx], device=dev)
    attn = torch.cat([torch.ones((n, p_len), dtype=torch.long, device=dev), real], 1)
    pos = (p_len - 1 + real.cumsum(1)).clamp_min(p_len)
    total = 0.0
    with torch.inference_mode():
        if sync:
            sync()
        t = time.perf_counter()
        out = model(**inputs, use_cache=True, logits_to_keep=1)
        if sync:
            sync()
        total += time.perf_counter() - t
        deltas = getattr(model.model, "rope_deltas", None)

        def position_ids(p: Any) -> Any:
            return p if deltas is None else (p + deltas)[None].expand(3, *p.shape)

        shared = SharedPrefixCache.from_prefix(out.past_key_values)
        cache = shared.repeat(n)
        kw = {"attention_mask": attn, "position_ids": position_ids(pos)}
        t = time.perf_counter()
        with cache.active(model):
            model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1, **kw)
        if sync:
            sync()
        total += time.perf_counter() - t
        last = pos[:, -1]
        for rows in depth_rows.values():
            sel = torch.arange(rows, device=dev) % cache.batch_size
            cache = cache.select(sel)
            attn = torch.cat([attn.index_select(0, sel), attn.new_ones((rows, 1))], 1)
            last = last.index_select(0, sel) + 1
            tok = ids[:1, -1:].expand(rows, 1).contiguous()
            kw = {"attention_mask": attn, "position_ids": position_ids(last[:, None])}
            if sync:
                sync()
            t = time.perf_counter()
            with cache.active(model):
                model(input_ids=tok, past_key_values=cache, use_cache=True, logits_to_keep=1, **kw)
            if sync:
                sync()
            total += time.perf_counter() - t
    return total


def _profile_tables(eng: Any, item: Any, img: Any, device: str) -> dict[str, Any]:
    """One image under cProfile and torch.profiler: the top entries of each (for the JSON)."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    prof = cProfile.Profile()
    with profile(activities=acts) as tp:
        prof.enable()
        eng.judge([item], [img])
        prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf)
    top_py = []
    for (file, line, fn), (_cc, nc, tt, ct, _callers) in sorted(
        st.stats.items(), key=lambda kv: -kv[1][3]
    )[:25]:
        where = f"{Path(file).name}:{line}({fn})" if line else fn
        top_py.append(
            {"function": where, "calls": nc, "tottime_s": round(tt, 3), "cumtime_s": round(ct, 3)}
        )
    key = "self_cuda_time_total" if device.startswith("cuda") else "self_cpu_time_total"
    ops = sorted(tp.key_averages(), key=lambda e: -getattr(e, key))[:20]
    top_ops = [
        {"op": e.key, "calls": e.count, "self_s": round(getattr(e, key) / 1e6, 3)} for e in ops
    ]
    return {"cprofile_top_cumulative": top_py, f"torch_profiler_top_{key}": top_ops}


_BASELINE_DRIVER = r"""
import json, sys, time, statistics
sys.path.insert(0, sys.argv[1])
import torch
torch.set_num_threads(int(sys.argv[5]))
from stylisticbias_dev.bench.judge import _images
from stylisticbias_dev.bench.judge_gpu import _engine
from stylisticbias.benchmark import benchmark_from_config
from stylisticbias.config import load_group_option, load_params
from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.judge.engines.hf.loading import load_model_and_processor
import stylisticbias
assert stylisticbias.__file__.startswith(sys.argv[1]), stylisticbias.__file__
name, ckpt, n, size = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[6])
model, proc = load_model_and_processor({"name": name, "hub_id": ckpt, "dtype": "float32"}, "cpu")
params = load_params()
bench = benchmark_from_config(params["benchmark"])  # the baseline checkout's params
judge = dict(params["judge"])
judge.update({"temperature": 0.2, "max_new_tokens": 16, "orderings": [1, 2, 3, 4],
              "seeds": [1, 2, 3], "scenarios": "all"})
ecfg = dict(load_group_option("engine", "hf"))
ecfg.update({"decoding": "exact", "device": "cpu", "suffix_batch_size": 100,
             "branch_batch_size": 256})
ecfg.pop("lightning", None)
eng = _engine(dict(load_group_option("model", name)), ecfg, judge, bench, model, proc, "cpu")
imgs = _images(n + 1, size)
items = [ImageItem(f"bench{i}", f"bench{i}", "", True) for i in range(n + 1)]
eng.judge(items[:1], imgs[:1])
out = {"seconds": [], "forward_calls": [], "undecided": [], "p": []}
for i in range(1, n + 1):
    t = time.perf_counter()
    df = eng.judge(items[i:i + 1], imgs[i:i + 1])
    out["seconds"].append(time.perf_counter() - t)
    out["forward_calls"].append(eng.last_stats["forward_calls"])
    out["undecided"].append(eng.last_stats["undecided_mass_mean"])
    out["p"].append(df[["p_pos", "p_neg", "p_invalid", "p_undecided"]].values.tolist())
import resource
out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
print("BASELINE_JSON " + json.dumps(out))
"""


def baseline_src(commit: str, where: Path | None) -> Path:
    """``src/`` of a ``git worktree`` of ``commit`` (created under ``where`` or a temp dir)."""
    root = project_root()
    dest = where or Path(tempfile.gettempdir()) / f"stylisticbias-baseline-{commit}"
    if not (dest / "src" / "stylisticbias").exists():
        subprocess.run(
            ["git", "-C", str(root), "worktree", "add", "--detach", str(dest), commit],
            check=True,
            capture_output=True,
        )
    return dest / "src"


def run_baseline(src: Path, name: str, ckpt: Path, n: int, size: int, threads: int) -> dict:
    """The previous engine's measurements (subprocess with that commit's code on ``src``)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [
        sys.executable,
        "-c",
        _BASELINE_DRIVER,
        str(src),
        name,
        str(ckpt),
        str(n),
        str(threads),
        str(size),
    ]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=src.parent)
    for line in res.stdout.splitlines():
        if line.startswith("BASELINE_JSON "):
            return json.loads(line[len("BASELINE_JSON ") :])
    raise StylisticBiasError(f"baseline engine failed ({res.returncode}): {res.stderr[-2000:]}")


def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def run_model(
    name: str,
    *,
    n_images: int,
    size: int,
    device: str,
    residual_scale: float,
    baseline: Path | None,
    profile: bool,
    threads: int,
    baseline_commit: str = DEFAULT_BASELINE,
    scale: str = "shrunk",
    dtype: str = "float32",
) -> dict[str, Any]:
    """All measurements of one architecture (see module doc)."""
    import torch

    from stylisticbias_dev.real_tokenizers import source

    sync = _sync(device)
    params = load_params()
    bench = benchmark_from_params(params)
    judge = dict(params["judge"])
    judge.update(
        {
            "temperature": 0.2,
            "max_new_tokens": 16,
            "orderings": bench.ordering_ids,
            "seeds": [1, 2, 3],
            "scenarios": "all",
        }
    )
    engine_cfg = dict(load_group_option("engine", "hf"))
    engine_cfg.pop("lightning", None)
    engine_cfg.update({"decoding": "exact", "device": device})
    model, processor = build(
        name, device=device, dtype=dtype, scale=scale, residual_scale=residual_scale
    )
    eng = _engine(
        dict(load_group_option("model", name)), engine_cfg, judge, bench, model, processor, device
    )
    eng.profile_sync = sync
    counts = suffix_token_counts(processor, eng._rendered)
    vision = _VisionClock(model, sync)
    images = _images(n_images + 2, size)
    items = [ImageItem(f"bench{i}", f"bench{i}", "", True) for i in range(n_images + 2)]

    ckpt_dir = None
    if baseline is not None:  # saved before any judging: the baseline gets the same weights
        ckpt_dir = tempfile.TemporaryDirectory(prefix=f"overhead-{name}-")
        model.save_pretrained(ckpt_dir.name)
        processor.save_pretrained(ckpt_dir.name)
        (Path(ckpt_dir.name) / "TINY_MODEL.json").write_text('{"note": "overhead benchmark"}')

    eng.judge(items[:1], images[:1])  # warm-up: kernels, the shared-prefix check, batch sizes
    per_image, bare, ratios, calls_n, syncs, undecided = [], [], [], [], [], []
    phases: dict[str, list[float]] = collections.defaultdict(list)
    p_new = []
    for i in range(1, n_images + 1):
        vision.seconds = 0.0
        if sync:
            sync()
        t = time.perf_counter()
        df = eng.judge(items[i : i + 1], images[i : i + 1])
        if sync:
            sync()
        s = time.perf_counter() - t
        st = eng.last_stats
        ph = dict(st["phase_s"])
        ph["vision_tower"] = vision.seconds
        ph["prefill_decoder"] = ph.get("prefill", 0.0) - vision.seconds
        ph["other"] = s - sum(v for k, v in st["phase_s"].items())
        for k, v in ph.items():
            phases[k].append(v)
        b = bare_forwards(eng, images[i], st["calls"], sync)
        per_image.append(s)
        bare.append(b)
        ratios.append(s / b)
        calls_n.append(st["forward_calls"])
        syncs.append(st["host_syncs"])
        undecided.append(st["undecided_mass_mean"])
        p_new.append(df[["p_pos", "p_neg", "p_invalid", "p_undecided"]].values.tolist())
        log.info(
            "%s image %d: engine %.2f s, bare %.2f s, ratio %.3f, %d forward calls",
            name,
            i,
            s,
            b,
            s / b,
            st["forward_calls"],
        )
    prof = _profile_tables(eng, items[-1], images[-1], device) if profile else None
    peak_gpu = torch.cuda.max_memory_allocated() / 1e9 if device.startswith("cuda") else None
    res: dict[str, Any] = {
        "architecture": type(model).__name__,
        "shape": {
            "scale": f"{scale} (stylisticbias_dev.full_size)",
            "text": {k: getattr(model.config.text_config, k) for k in _SHAPE_KEYS},
            "parameters_million": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
            "dtype": dtype,
            "residual_scale": residual_scale,
            "image_size_px": size,
        },
        "image_tokens": int(eng.last_stats["image_tokens_per_image"][0]),
        "suffix_tokens": {
            "source": source(_TOKENIZER_KIND[name])
            if scale == "shrunk"
            else "word-level tokenizer of the tiny checkpoints (NOT the real counts)",
            "per_prompt_min": min(counts),
            "per_prompt_max": max(counts),
            "total_per_image": sum(counts),
            "histogram": {str(k): v for k, v in sorted(collections.Counter(counts).items())},
            "distinct_lengths": len(set(counts)),
            "padded_batch": [len(counts), max(counts)],
        },
        "images_timed": n_images,
        "seconds_per_image_median": round(_median(per_image), 3),
        "bare_forward_seconds_per_image_median": round(_median(bare), 3),
        "overhead_ratio": round(_median(ratios), 4),
        "overhead_ratio_of_medians": round(_median(per_image) / _median(bare), 4),
        "overhead_ratio_per_image": [round(r, 4) for r in ratios],
        "target_overhead_ratio": TARGET_RATIO,
        "meets_target": _median(ratios) <= TARGET_RATIO,
        "forward_calls_per_image": _median(calls_n),
        "bare_forward_calls_per_image": 2 + sum(1 for _ in _depths(eng.last_stats["calls"])),
        "host_transfers_per_image": _median(syncs),
        "phase_seconds_median": {k: round(_median(v), 4) for k, v in sorted(phases.items())},
        "undecided_mass_mean": float(statistics.fmean(undecided)),
        "grammar_intact": statistics.fmean(undecided) < 0.1,
        "batch_sizes": {
            "suffix": eng.suffix_batch_size,
            "branch": eng.decoding_params.branch_batch_size,
            "chosen_from_free_gb": round(eng.batch_sizes.free_bytes / 1e9, 1)
            if eng.batch_sizes
            else None,
        },
        "prefix_sharing": "shared" if eng._shared_ok else "copy",
        "peak_rss_gb": peak_rss_gb(),
        "peak_gpu_memory_gb": round(peak_gpu, 2) if peak_gpu is not None else None,
    }
    if prof is not None:
        res["profile"] = prof
    if baseline is not None and ckpt_dir is not None:
        old = run_baseline(baseline, name, Path(ckpt_dir.name), n_images, size, threads)
        ckpt_dir.cleanup()
        diff = max(
            abs(a - b)
            for img_new, img_old in zip(p_new, old["p"])
            for row_new, row_old in zip(img_new, img_old)
            for a, b in zip(row_new, row_old)
        )
        res["previous_engine"] = {
            "commit": baseline_commit,
            "seconds_per_image_median": round(_median(old["seconds"]), 3),
            "overhead_ratio_vs_bare_median": round(_median(old["seconds"]) / _median(bare), 4),
            "forward_calls_per_image": _median(old["forward_calls"]),
            "undecided_mass_mean": float(statistics.fmean(old["undecided"])),
            "peak_rss_gb": round(old["peak_rss_gb"], 3),
            "max_abs_probability_difference": diff,
        }
        res["speedup_vs_previous_engine"] = round(_median(old["seconds"]) / _median(per_image), 3)
    return res


def _depths(calls: Sequence[tuple[str, int, int]]) -> list[str]:
    return sorted({p for p, _r, _q in calls if p.startswith("step")})


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    argv_list = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(
        prog="python -m stylisticbias_dev.bench.judge_overhead",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--models", default="qwen3-vl-8b,llava-v1-6-mistral-7b")
    ap.add_argument("--images", type=int, default=2, help="timed images per model")
    ap.add_argument("--size", type=int, default=1024, help="face image size in px")
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--scale",
        default="shrunk",
        choices=("shrunk", "full"),
        help="full: the real 8B/7B shapes (GPU; use --dtype bfloat16)",
    )
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (CPU)")
    ap.add_argument("--residual-scale", type=float, default=SHRUNK_RESIDUAL_SCALE)
    ap.add_argument(
        "--baseline-commit",
        default=DEFAULT_BASELINE,
        help="previous engine to compare against ('' to skip)",
    )
    ap.add_argument("--baseline-dir", default=None, help="where its git worktree goes")
    ap.add_argument("--profile", action="store_true", help="cProfile + torch.profiler tables")
    ap.add_argument("--out", default=str(project_root() / "reports/bench/judge_overhead.json"))
    args = ap.parse_args(argv_list)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import torch

    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    bad = [m for m in names if m not in SPECS]
    if bad:
        log.error("error: --models %s; valid: %s", ",".join(bad), ", ".join(SPECS))
        return 2
    load_before = os.getloadavg()
    base = None
    if args.baseline_commit and args.device != "cpu":
        log.warning("--baseline-commit runs on the CPU only: previous engine not measured")
    elif args.baseline_commit:
        base = baseline_src(
            args.baseline_commit, Path(args.baseline_dir) if args.baseline_dir else None
        )
    out = Path(args.out)
    command = shlex.join(["python", "-m", "stylisticbias_dev.bench.judge_overhead", *argv_list])
    for name in names:
        try:
            res = run_model(
                name,
                n_images=args.images,
                size=args.size,
                device=args.device,
                residual_scale=args.residual_scale,
                baseline=base,
                profile=args.profile,
                threads=args.threads,
                baseline_commit=args.baseline_commit,
                scale=args.scale,
                dtype=args.dtype,
            )
        except StylisticBiasError as exc:
            log.error("error: %s", exc)
            return 2
        res.update(
            {
                "command": command,
                "machine": machine_info(),
                "load_average_1_5_15_before": [round(x, 2) for x in load_before],
                "load_average_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
                "torch_threads": torch.get_num_threads(),
                "torch": torch.__version__,
                "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            }
        )
        merge_model_result(out, name, res)
        log.info(
            "%s: overhead ratio %.3f (target <= %.1f), %.2f s/image, %s forward calls -> %s",
            name,
            res["overhead_ratio"],
            TARGET_RATIO,
            res["seconds_per_image_median"],
            res["forward_calls_per_image"],
            out,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
