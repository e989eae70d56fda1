"""CLI of the openai engine: dry-run estimate and response-cache maintenance.

It sits beside the stage (it lists the images a judge run would cover), not inside the engine.

``python -m stylisticbias.judge.openai_cli estimate MODEL [HYDRA_OVERRIDE ...]``
    requests, tokens and cost of judging the run's images with MODEL (nothing is sent);
    e.g. ``estimate vllm-gemma-3-12b engine.decoding=generate``.
``python -m stylisticbias.judge.openai_cli cache stats [--cache PATH]``
``python -m stylisticbias.judge.openai_cli cache prune [--cache PATH] [--older-than DAYS]
[--endpoint URL] [--served-model NAME]``
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)


def _estimate(model: str, overrides: Sequence[str], as_json: bool) -> int:
    from dataclasses import asdict

    from stylisticbias.benchmark import load_benchmark
    from stylisticbias.config import compose
    from stylisticbias.judge.engines.factory import make_engine
    from stylisticbias.judge.items import judge_items
    from stylisticbias.judge.run import model_section
    from stylisticbias.spec.parse import config_from_params

    config = config_from_params(compose([f"model=[{model}]", *overrides]))
    model_cfg = model_section(config, model)
    if (model_cfg.get("engine") or {}).get("name") != "openai":
        raise StylisticBiasError(f"model {model!r} does not use the openai engine")
    benchmark = load_benchmark(config.protocol)
    engine = make_engine(model_cfg, asdict(config.judge), benchmark)
    est = engine.estimate(judge_items(config, benchmark))  # type: ignore[attr-defined]
    if as_json:
        sys.stdout.write(json.dumps(est.as_dict(), indent=2) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m stylisticbias.judge.openai_cli", description=__doc__.splitlines()[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    est = sub.add_parser("estimate", help="dry run: requests, tokens, cost")
    est.add_argument("model")
    est.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. judge.seeds=[1]")
    est.add_argument("--json", action="store_true", help="also print the estimate as JSON")
    cache = sub.add_parser("cache", help="response cache: stats | prune")
    cache.add_argument("action", choices=["stats", "prune"])
    cache.add_argument("--cache", default=None, help="cache file (default: engine config's)")
    cache.add_argument("--older-than", type=float, default=None, metavar="DAYS")
    cache.add_argument("--endpoint", default=None, help="base_url of the entries to drop")
    cache.add_argument("--served-model", default=None)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        if args.cmd == "estimate":
            return _estimate(args.model, args.overrides, args.json)
        from stylisticbias.config import load_group_option, project_root
        from stylisticbias.judge.engines.openai.cache import ResponseCache

        path = Path(args.cache or load_group_option("engine", "openai")["cache"])
        path = path if path.is_absolute() else project_root() / path
        if not path.exists():
            raise StylisticBiasError(f"no response cache at {path}")
        c = ResponseCache(path)
        if args.action == "prune":
            if args.older_than is None and args.endpoint is None and args.served_model is None:
                raise StylisticBiasError(
                    "cache prune: give --older-than, --endpoint and/or --served-model"
                )
            n = c.prune(
                older_than_days=args.older_than,
                endpoint=args.endpoint,
                served_model=args.served_model,
            )
            log.info("removed %d response(s)", n)
        st = c.stats()
        log.info(
            "%s: %d response(s), %d prompt + %d completion tokens",
            path,
            st.rows,
            st.prompt_tokens,
            st.completion_tokens,
        )
        for k, v in st.by_model.items():
            log.info("  %8d  %s", v, k)
        c.close()
    except StylisticBiasError as exc:
        log.error("error: %s", exc)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
