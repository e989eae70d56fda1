"""Does the planted answer grammar survive a full-size random-weight model? (CPU, text only.)

``python -m stylisticbias_dev.bench.grammar_check --model qwen3-vl-8b --scales 1,1e-3``

The GPU benchmark (:mod:`stylisticbias_dev.bench.judge_gpu`) times exact decoding on full-size
random-weight models with a planted answer grammar; the number of branches it expands is only
realistic if the model actually follows that grammar through all its decoder layers. This
check builds the model at its real shape in bfloat16 on the CPU (~17.5 GB of RAM for the 8B
model; minutes), damps the residual branches by each ``--scales`` value
(:func:`stylisticbias_dev.full_size.damp_residual`), and records the most likely next tokens
(at the benchmark's temperature, 0.2) after the chat prompt and after ``(``, ``(a`` and
``(a)``. A working grammar reads ``(`` -> ``a``/``b`` -> ``)`` -> end of turn.
Results merge into ``reports/bench/grammar_check.json`` under ``models.<name>``.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stylisticbias.config import project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias_dev.bench.machine import machine_info, peak_rss_gb
from stylisticbias_dev.bench.results import merge_model_result
from stylisticbias_dev.full_size import SCALES, SPECS, build, damp_residual

log = logging.getLogger(__name__)

QUESTION = (
    "Is the person in the picture (a) Competent or (b) Incompetent? Answer with only (a) or (b)."
)
CONTINUATIONS = ("", "(", "(a", "(a)")


def _prompt(processor: Any) -> str:
    msg = [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    return processor.apply_chat_template(msg, add_generation_prompt=True, tokenize=False)


def check(
    name: str,
    scales: Sequence[float],
    temperature: float = 0.2,
    top: int = 3,
    scale: str = "full",
) -> dict[str, Any]:
    """Next-token top-``top`` after each continuation, per residual scale (``scale="tiny"``:
    the same code on shrunken widths, for tests)."""
    import torch

    t = time.perf_counter()
    dtype = "bfloat16" if scale == "full" else "float32"
    model, processor = build(name, device="cpu", dtype=dtype, scale=scale, residual_scale=1.0)
    build_s = time.perf_counter() - t
    tok = processor.tokenizer
    prompt = _prompt(processor)
    out: dict[str, Any] = {}
    current = 1.0
    for s in scales:
        damp_residual(model, s / current)
        current = s
        rows = {}
        for cont in CONTINUATIONS:
            ids = tok(prompt + cont, add_special_tokens=False, return_tensors="pt")["input_ids"]
            with torch.no_grad():
                logits = model(input_ids=ids, logits_to_keep=1).logits[0, -1].float()
            p = torch.softmax(logits / temperature, -1)
            v, i = torch.topk(p, top)
            rows[cont or "<start>"] = {
                tok.decode([int(k)]): round(float(x), 4) for x, k in zip(v, i)
            }
        out[f"{s:g}"] = rows
        log.info("%s residual scale %g: %s", name, s, rows)
    return {
        "model": name,
        "hub_id_of_shape": SPECS[name].hub_id,
        "scale": scale,
        "parameters_billion": round(sum(p.numel() for p in model.parameters()) / 1e9, 3),
        "temperature": temperature,
        "prompt": prompt,
        "next_tokens_by_residual_scale": out,
        "build_seconds": round(build_s, 1),
        "peak_rss_gb": peak_rss_gb(),
        "machine": machine_info(),
        "torch": torch.__version__,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    argv_list = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(
        prog="python -m stylisticbias_dev.bench.grammar_check", description=__doc__
    )
    ap.add_argument("--model", required=True, choices=sorted(SPECS))
    ap.add_argument("--scales", default="1,1e-3", help="comma-separated residual scales")
    ap.add_argument("--scale", default="full", choices=SCALES, help="tiny: tests only")
    ap.add_argument(
        "--out", default=str(project_root() / "reports" / "bench" / "grammar_check.json")
    )
    args = ap.parse_args(argv_list)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        scales = [float(x) for x in args.scales.split(",") if x.strip()]
        if not scales or any(s <= 0 for s in scales):
            raise StylisticBiasError(f"--scales {args.scales!r}: positive numbers, e.g. 1,1e-3")
        res = check(args.model, scales, scale=args.scale)
    except (StylisticBiasError, ValueError) as exc:
        log.error("error: %s", exc)
        return 2
    res["command"] = shlex.join(
        ["python", "-m", "stylisticbias_dev.bench.grammar_check", *argv_list]
    )
    out = Path(args.out)
    merge_model_result(out, args.model, res)
    log.info("-> %s", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
