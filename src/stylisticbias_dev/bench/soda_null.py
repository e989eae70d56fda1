"""The SODA permutation test's size under the null (``reports/bench/soda_null_calibration.json``).

Each replicate draws a base and a group sample of ``--n`` images from one distribution (the base
distributions of ``conf/soda/planted.yaml``: no planted difference) and runs the seeded
``--n-perm``-shuffle BDS permutation test; the test's size is the share of replicates with
``p < alpha``. It must lie within its binomial interval around ``alpha`` (Clopper-Pearson,
95%, over ``--replicates`` >= 200). A discrete statistic on 2 x 20 images makes the test
conservative (size at or below alpha), never liberal.

``python -m stylisticbias_dev.bench.soda_null --replicates 200 --n 20 --n-perm 10000``
(``make bench-soda``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from stylisticbias.config import project_root
from stylisticbias.soda.demo import load_planted, null_calibration
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    """CLI: write reports/bench/soda_null_calibration.json."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.soda_null")
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--n", type=int, default=20, help="images per condition")
    ap.add_argument("--n-perm", type=int, default=10_000)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--planted", default="conf/soda/planted.yaml")
    ap.add_argument("--out", default="reports/bench/soda_null_calibration.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.replicates < 200:
        log.warning("fewer than 200 replicates: the interval is wide")
    t0 = time.perf_counter()
    planted = load_planted(project_root() / args.planted)
    res = null_calibration(planted, args.replicates, args.n, args.n_perm, args.alpha, args.seed)
    doc = {
        "null_calibration": asdict(res),
        "settings": {
            "planted": args.planted,
            "seed": args.seed,
            "ci": 0.95,
            "target": "alpha within [ci_low, ci_high] (within: true)",
        },
        "command": "python -m stylisticbias_dev.bench.soda_null " + " ".join(argv or sys.argv[1:]),
        "machine": machine_info(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    log.info(
        "wrote %s: size %.4f (%d/%d), interval [%.4f, %.4f], within: %s",
        out,
        res.size,
        res.rejections,
        res.replicates,
        res.ci_low,
        res.ci_high,
        res.within,
    )
    return 0 if res.within else 1


if __name__ == "__main__":
    raise SystemExit(main())
