"""OpenAI-engine benchmark: the same images judged in-process and through local servers (CPU).

``python -m stylisticbias_dev.bench.openai_engine [--images 2] [--scenarios 3] [--repeats 3]``

Arms, on the same procedural face images and prompts (temperature 0.2, 16 new tokens,
4 orderings, seeds 1-3, the tiny random-weight LLaVA-NeXT, float32, one torch thread each):

(a) ``hf`` in-process, ``generate`` and ``exact``;
(b) ``openai`` engine ``generate`` through a real ``transformers serve`` on 127.0.0.1;
(c) ``openai`` engine ``exact`` through the vLLM-shaped loopback server
    (:mod:`stylisticbias_dev.openai_loopback`), with its agreement with (a) exact;
(d) a rerun of (b) and (c) against the same response cache: requests sent (must be 0) and time.

Rates are medians over ``--repeats`` runs, each with a fresh cache (a repeat's rerun uses that
repeat's cache). A *judgment* is one (image, scenario, ordering, seed) response; an exact row
replaces K = 3 of them and counts 3. Server start-up is excluded from the rates (reported).
The tiny model on CPU says nothing about real latency or throughput of a served 7-14B model on a
GPU: these numbers measure the client's overhead and the cache, not a backend.
Writes ``reports/bench/openai_engine.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shlex
import signal
import socket
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
from stylisticbias.judge.engines.base import ImageItem
from stylisticbias_dev.bench.judge import _images
from stylisticbias_dev.bench.machine import machine_info, peak_rss_gb

log = logging.getLogger(__name__)
KEYS = ["image_id", "scenario_id", "ordering", "seed"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(cmd: list[str], health: str, env: dict[str, str]) -> tuple[subprocess.Popen, float]:
    import httpx2

    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[0]} exited with {proc.returncode}")
        try:
            if httpx2.get(health, timeout=2.0).status_code == 200:
                return proc, time.perf_counter() - t0
        except httpx2.HTTPError:
            pass
        if time.perf_counter() - t0 > 300:
            raise TimeoutError(health)
        time.sleep(0.3)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def _timed(engine: Any, items: list[ImageItem], images: list[Any]) -> tuple[Any, float, dict]:
    t = time.perf_counter()
    df = engine.judge(items, images)
    return df, time.perf_counter() - t, dict(engine.last_stats)


def run(n_images: int = 2, n_scen: int = 3, repeats: int = 3, size: int = 256) -> dict[str, Any]:
    """Run the arms and return the measurements."""
    import torch

    from stylisticbias.judge.engines.hf.engine import HFJudgeEngine
    from stylisticbias.judge.engines.openai.engine import OpenAIJudgeEngine
    from stylisticbias_dev import tiny

    torch.set_num_threads(1)
    params = load_params()
    bench = benchmark_from_params(params)
    ids = [s.id for s in bench.scenarios][:n_scen]
    judge = {
        **params["judge"],
        "temperature": 0.2,
        "max_new_tokens": 16,
        "orderings": bench.ordering_ids,
        "seeds": [1, 2, 3],
        "scenarios": ids,
    }
    k = 3
    ckpt = tiny.ensure_built("llava_next", project_root() / ".cache" / "tiny" / "llava-next")
    tmp = Path(tempfile.mkdtemp(prefix="bench-openai-"))
    items, pil = [], _images(n_images, size)
    for i, im in enumerate(pil):
        p = tmp / f"bench{i}.png"
        im.save(p)
        items.append(ImageItem(f"bench{i}", f"bench{i}", str(p), True))
    hf_cfg = {**load_group_option("model", "tiny-llava-next"), "hub_id": str(ckpt)}
    hf_gen = HFJudgeEngine(
        hf_cfg, {"name": "hf", "decoding": "generate", "device": "cpu"}, judge, bench
    )
    hf_gen.setup("cpu")
    hf_ex = HFJudgeEngine(
        hf_cfg, {"name": "hf", "decoding": "exact", "device": "cpu"}, judge, bench
    )
    hf_ex.setup("cpu")

    env = {
        **os.environ,
        "PYTHONPATH": str(project_root() / "src"),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    sp, lp = _port(), _port()
    serve_cmd = [
        str(Path(sys.executable).with_name("transformers")),
        "serve",
        str(ckpt),
        "--host",
        "127.0.0.1",
        "--port",
        str(sp),
        "--device",
        "cpu",
        "--dtype",
        "float32",
        "--log-level",
        "warning",
    ]
    loop_cmd = [
        sys.executable,
        "-m",
        "stylisticbias_dev.openai_loopback",
        "--model",
        str(ckpt),
        "--port",
        str(lp),
        "--served-model",
        "tiny-llava-next",
    ]
    serve, serve_start = _start(serve_cmd, f"http://127.0.0.1:{sp}/health", env)
    loop, loop_start = _start(loop_cmd, f"http://127.0.0.1:{lp}/health", env)
    os.environ["STYLISTICBIAS_TRANSFORMERS_SERVE_URL"] = f"http://127.0.0.1:{sp}/v1"
    os.environ["STYLISTICBIAS_TRANSFORMERS_SERVE_MODEL"] = str(ckpt)
    os.environ["STYLISTICBIAS_LOOPBACK_URL"] = f"http://127.0.0.1:{lp}/v1"
    base_engine = {**load_group_option("engine", "openai"), "progress": False}
    arms: dict[str, list[dict[str, float]]] = {
        a: []
        for a in (
            "hf_generate",
            "hf_exact",
            "serve_generate",
            "serve_generate_rerun",
            "loopback_exact",
            "loopback_exact_rerun",
        )
    }
    max_diff_poles = max_diff_rest = 0.0
    try:
        for r in range(repeats):
            df, dt, _ = _timed(hf_gen, items, pil)
            arms["hf_generate"].append({"s": dt, "judgments": len(df), "requests": 0})
            want, dt, _ = _timed(hf_ex, items, pil)
            arms["hf_exact"].append({"s": dt, "judgments": len(want) * k, "requests": 0})
            plan = [
                ("serve_generate", "tiny-llava-next-serve", "generate"),
                ("loopback_exact", "tiny-llava-next-vllm", "exact"),
            ]
            for arm, model, decoding in plan:
                cache = tmp / f"{arm}-{r}.sqlite"
                eng_cfg = {**base_engine, "decoding": decoding, "cache": str(cache)}
                for name in (arm, f"{arm}_rerun"):
                    eng = OpenAIJudgeEngine(
                        load_group_option("model", model), eng_cfg, judge, bench
                    )
                    got, dt, st = _timed(eng, items, [None] * len(items))
                    n = len(got) * (k if decoding == "exact" else 1)
                    arms[name].append(
                        {
                            "s": dt,
                            "judgments": n,
                            "requests": st["api_requests"],
                            "cached": st["api_cached"],
                            "retries": st["api_retries"],
                        }
                    )
                    if decoding == "exact" and name == arm:
                        a = got.sort_values(KEYS).reset_index(drop=True)
                        b = want.sort_values(KEYS).reset_index(drop=True)
                        d = (a[["p_pos", "p_neg"]] - b[["p_pos", "p_neg"]]).abs().to_numpy()
                        e = a[["p_invalid", "p_undecided"]] - b[["p_invalid", "p_undecided"]]
                        max_diff_poles = max(max_diff_poles, float(d.max()))
                        max_diff_rest = max(max_diff_rest, float(e.abs().to_numpy().max()))
            log.info("repeat %d done", r)
    finally:
        _stop(serve)
        _stop(loop)

    def summary(rows: list[dict[str, float]]) -> dict[str, Any]:
        s = statistics.median(x["s"] for x in rows)
        rate = statistics.median(x["judgments"] / x["s"] for x in rows)
        out = {
            "seconds_median": round(s, 4),
            "judgments_per_s": round(rate, 2),
            "requests_sent": [int(x["requests"]) for x in rows],
        }
        if any(x["requests"] for x in rows):
            out["requests_per_s"] = round(
                statistics.median(x["requests"] / x["s"] for x in rows), 2
            )
        if "cached" in rows[0]:
            out["cache_hits"] = [int(x["cached"]) for x in rows]
            out["retries"] = [int(x["retries"]) for x in rows]
        return out

    return {
        "benchmark": "openai engine vs in-process hf (tiny LLaVA-NeXT, CPU, float32, 127.0.0.1)",
        "arms": {k_: summary(v) for k_, v in arms.items()},
        "exact_agreement_loopback_vs_hf": {
            "max_abs_diff_p_pos_p_neg": max_diff_poles,
            "max_abs_diff_p_invalid_p_undecided": max_diff_rest,
            "note": "the server re-tokenises partial answers (see judge/engines/openai/exact.py)",
        },
        "server_startup_s": {
            "transformers_serve": round(serve_start, 1),
            "loopback": round(loop_start, 1),
        },
        "images": n_images,
        "image_size_px": size,
        "scenarios": len(ids),
        "prompts_per_image": len(ids) * 4,
        "judgment_unit": (
            "one (image, scenario, ordering, seed) response; an exact row "
            "replaces K=3 seeded responses and counts 3"
        ),
        "settings": {
            "temperature": 0.2,
            "max_new_tokens": 16,
            "seeds": k,
            "concurrency": base_engine["transport"]["concurrency"],
            "top_logprobs": base_engine["top_logprobs"],
        },
        "repeats": repeats,
        "peak_rss_gb": peak_rss_gb(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": machine_info(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "note": (
            "Tiny random-weight model on a shared CPU: these rates say nothing about the latency "
            "or throughput of a real served model (a 7-14B VLM on a GPU behind vLLM/SGLang or an "
            "API), where the server, not the client, dominates. They show (1) the client's "
            "overhead per request on loopback HTTP, (2) that a rerun from the response cache "
            "sends zero requests and takes only the cache-read time, and (3) that exact through "
            "a logprob server reproduces the in-process distribution. transformers serve and "
            "the loopback server each run one request at a time on one CPU thread, so "
            "requests_per_s is bounded by the tiny model's forward pass, not by the client. "
            "The loopback server has no prefix cache (every request is a full forward over "
            "image + prompt + partial answer), unlike vLLM/SGLang, so exact through it is far "
            "slower than in-process exact (which runs the image prefix once per image)."
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    argv_list = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(
        prog="python -m stylisticbias_dev.bench.openai_engine", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--images", type=int, default=2)
    ap.add_argument("--scenarios", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument(
        "--out", default=str(project_root() / "reports" / "bench" / "openai_engine.json")
    )
    args = ap.parse_args(argv_list)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    res = run(args.images, args.scenarios, args.repeats, args.size)
    res["command"] = shlex.join(
        ["python", "-m", "stylisticbias_dev.bench.openai_engine", *argv_list]
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    log.info("%s -> %s", json.dumps(res["arms"]), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
