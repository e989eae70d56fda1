"""Requests per prompt of the ``openai`` engine's exact mode, against planted answer trees.

``python -m stylisticbias_dev.bench.exact_requests [--trees 40] [--temperature 0.2]``

Each of ``--trees`` realistic answer trees (:mod:`stylisticbias_dev.planted_answers`:
well-formed letters 95-99 %, a tail of refusals and chatter that runs to the token limit) is
planted in the vLLM-shaped loopback server (:mod:`stylisticbias_dev.openai_loopback`, no model)
and one prompt is judged in exact mode under three request strategies:

``node``         the previous procedure: one next-token list per request
                 (``engine.exact_paths: 0``, no batching), every node above the prune threshold;
``paths``        ``exact_paths`` sampled answer paths per request (``n``), log-probabilities at
                 every position, one request per partial answer still needed;
``paths_batch``  as ``paths``, and each later round's partial answers of a prompt in one request
                 to vLLM's ``/v1/chat/completions/batch`` (``capabilities.batch_chat``).

Per arm: HTTP requests per prompt (the server's log, cross-checked with the engine's count),
the undecided mass, and the largest error against the tree's true verdict distribution
(brute-force enumeration): a verdict's mass may fall short of the truth by at most the
undecided mass and never exceed it (``err_over`` must be ~0). The paper's own procedure takes
3 requests per prompt (one ``generate`` per seed). Merges ``exact_requests`` into
``reports/bench/openai_engine.json`` (other keys kept).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shlex
import statistics
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from stylisticbias.benchmark import load_benchmark
from stylisticbias.config import load_group_option, project_root
from stylisticbias.judge.engines.openai.engine import OpenAIJudgeEngine
from stylisticbias.judge.engines.openai.requests import encode_image
from stylisticbias.judge.engines.openai.transport import Transport
from stylisticbias.judge.protocol.parsing import parse_response
from stylisticbias.outputs import atomic_write_text
from stylisticbias_dev.bench.machine import machine_info
from stylisticbias_dev.bench.openai_engine import _port, _start, _stop
from stylisticbias_dev.planted_answers import EOS, draw_tree, truth

log = logging.getLogger(__name__)
MODEL = "tiny-llava-next-vllm"
ARMS = {
    "node": {"exact_paths": 0, "batch_chat": False, "undecided_target": 0.0},
    "paths": {"exact_paths": None, "batch_chat": False},
    "paths_batch": {"exact_paths": None, "batch_chat": True},
}


def engine_for(
    url: str,
    cache: Path,
    temperature: float,
    max_new: int,
    *,
    exact_paths: int,
    batch_chat: bool,
    undecided_target: float,
    explore: float | None = None,
) -> OpenAIJudgeEngine:
    """The exact-mode engine of the loopback model file, pointed at ``url``."""
    os.environ["STYLISTICBIAS_LOOPBACK_URL"] = url
    model = load_group_option("model", MODEL)
    caps = {**model["endpoint"]["capabilities"], "batch_chat": batch_chat}
    model = {**model, "endpoint": {**model["endpoint"], "capabilities": caps}}
    eng = {
        **load_group_option("engine", "openai"),
        "decoding": "exact",
        "cache": str(cache),
        "progress": False,
        "exact_paths": exact_paths,
        "undecided_target": undecided_target,
        "explore_temperature": explore,
    }
    judge = {
        "orderings": [1],
        "seeds": [1],
        "scenarios": [1],
        "temperature": temperature,
        "max_new_tokens": max_new,
    }
    return OpenAIJudgeEngine(model, eng, judge, load_benchmark("stylisticbias"))


def judge_one(api: OpenAIJudgeEngine, image: Path) -> Any:
    """The exact distribution of the engine's one prompt about ``image``."""

    async def go() -> Any:
        async with Transport(api.endpoint, api.transport, api.cache, api.stats) as tr:
            return await api.distributions(tr, encode_image(str(image)))

    (d,) = asyncio.run(go())
    return d


def _image(d: Path) -> Path:
    path = d / "img.png"
    rs = np.random.RandomState(0)
    Image.fromarray((rs.rand(32, 32, 3) * 255).astype("uint8")).save(path)
    return path


def run(
    trees: int,
    temperature: float,
    max_new: int,
    paths: int,
    target: float,
    explore: float | None = None,
) -> dict:
    """Every tree under every arm; per-arm summaries and per-tree rows."""
    rows: dict[str, list[dict[str, float]]] = {a: [] for a in ARMS}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        image = _image(d)
        for seed in range(trees):
            tree = draw_tree(seed, temperature, max_new)
            want = truth(tree, parse_response)
            port = _port()
            logf = d / f"log{seed}.jsonl"
            faults = {"planted_logprobs": tree.table, "eos": [EOS]}
            cmd = [
                sys.executable,
                "-m",
                "stylisticbias_dev.openai_loopback",
                "--port",
                str(port),
                "--served-model",
                "tiny-llava-next",
                "--faults",
                json.dumps(faults),
                "--log",
                str(logf),
            ]
            env = {**os.environ, "PYTHONPATH": str(project_root() / "src")}
            proc, _ = _start(cmd, f"http://127.0.0.1:{port}/health", env)
            try:
                for arm, cfg in ARMS.items():
                    n_paths = paths if cfg["exact_paths"] is None else cfg["exact_paths"]
                    before = _lines(logf)
                    api = engine_for(
                        f"http://127.0.0.1:{port}/v1",
                        d / f"c{seed}{arm}.sqlite",
                        temperature,
                        max_new,
                        exact_paths=n_paths,
                        batch_chat=cfg["batch_chat"],
                        undecided_target=cfg.get("undecided_target", target),
                        explore=explore,
                    )
                    got = judge_one(api, image)
                    sent = _lines(logf) - before
                    if sent != got.requests:
                        raise RuntimeError(
                            f"{arm}: server saw {sent}, engine counted {got.requests}"
                        )
                    und = float(got.undecided)
                    over = max(got.mass[v] - want[v] for v in want)
                    short = max(want[v] - got.mass[v] for v in want)
                    rows[arm].append(
                        {
                            "tree": seed,
                            "requests": sent,
                            "undecided": und,
                            "err_over": float(over),
                            "err_short_beyond_undecided": float(short - und),
                        }
                    )
            finally:
                _stop(proc)
    return {arm: _summary(rs) for arm, rs in rows.items()} | {"per_tree": rows}


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _summary(rows: list[dict[str, float]]) -> dict[str, Any]:
    req = [r["requests"] for r in rows]
    und = [r["undecided"] for r in rows]
    return {
        "requests_per_prompt_mean": round(statistics.mean(req), 3),
        "requests_per_prompt_median": statistics.median(req),
        "requests_per_prompt_max": max(req),
        "undecided_median": float(f"{statistics.median(und):.3g}"),
        "undecided_max": float(f"{max(und):.3g}"),
        "err_over_max": float(f"{max(r['err_over'] for r in rows):.3g}"),
        "err_short_beyond_undecided_max": float(
            f"{max(r['err_short_beyond_undecided'] for r in rows):.3g}"
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", type=int, default=40)
    ap.add_argument("--temperature", type=float, default=0.2)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--paths", type=int, default=None, help="default: engine.exact_paths")
    ap.add_argument("--target", type=float, default=None, help="default: engine.undecided_target")
    ap.add_argument(
        "--explore-temperature",
        type=float,
        default=None,
        help="default: engine.explore_temperature",
    )
    ap.add_argument(
        "--out", default=str(project_root() / "reports" / "bench" / "openai_engine.json")
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    eng = load_group_option("engine", "openai")
    paths = int(eng["exact_paths"] if args.paths is None else args.paths)
    target = float(eng["undecided_target"] if args.target is None else args.target)
    explore = eng["explore_temperature"]
    if args.explore_temperature is not None:
        explore = args.explore_temperature
    res = run(args.trees, args.temperature, args.max_new_tokens, paths, target, explore)
    per_tree = res.pop("per_tree")
    doc = {
        "command": shlex.join(
            [
                "python",
                "-m",
                "stylisticbias_dev.bench.exact_requests",
                *(argv if argv is not None else sys.argv[1:]),
            ]
        ),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_info(),
        "trees": args.trees,
        "temperature": args.temperature,
        "max_new_tokens": args.max_new_tokens,
        "exact_paths": paths,
        "undecided_target": target,
        "explore_temperature": explore,
        "paper_requests_per_prompt": 3,
        "arms": res,
        "per_tree": per_tree,
    }
    out = Path(args.out)
    full: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    full["exact_requests"] = doc
    atomic_write_text(out, json.dumps(full, indent=2) + "\n")
    log.info("%s -> %s", json.dumps(res), out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
