"""Valid inference of the task protocols' tests and intervals under planted designs with
structure (per-photo appeal, per-source effects and random slopes, unequal cluster sizes):
``protocols.reflect.valid_inference`` and ``protocols.vignette.valid_inference`` of
``reports/bench/calibration.json`` (read, updated and written at once; every other key kept).

For every tested table (``reflect_salary_tests`` per occupation and pooled, per effect;
``vignette_pair_comp``; ``vignette_text_vs_image``) the null rejection rate at alpha 0.05 and
0.01 with its Clopper-Pearson interval and the power under the planted effects, for the
default test and the paper's pooled test beside it; the coverage of the REFLECT Gap%, MCQ gap
and JSD intervals; the JSD's chance level against the mean null JSD
(:mod:`stylisticbias.families.tasks.analysis.calibration`, designs in
:mod:`stylisticbias.families.tasks.analysis.designs`).

``python -m stylisticbias_dev.bench.tasks_valid_inference`` (defaults: REFLECT 600 null and
100 planted replicates, VIGNETTE 1,000 and 300; ~8 min on one core). ``--designs few-clusters``
runs the harsher designs of :data:`~stylisticbias.families.tasks.analysis.designs.DESIGN_SETS`
(20 source photos, 12 instances, skewed cluster effects) into ``valid_inference_few_clusters``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from stylisticbias.families.tasks.analysis.calibration import VALID_INFERENCE, merge_into
from stylisticbias.families.tasks.analysis.designs import DESIGN_SETS
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)
KEY = "valid_inference"


def main(argv: list[str] | None = None) -> int:
    """CLI: merge the studies into the bench file."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.tasks_valid_inference")
    ap.add_argument("--protocol", choices=(*VALID_INFERENCE.names, "both"), default="both")
    ap.add_argument("--reflect-null", type=int, default=600)
    ap.add_argument("--reflect-planted", type=int, default=100)
    ap.add_argument("--vignette-null", type=int, default=1000)
    ap.add_argument("--vignette-planted", type=int, default=300)
    ap.add_argument("--bootstrap", type=int, default=399, help="REFLECT's bootstrap draws")
    ap.add_argument(
        "--designs",
        choices=tuple(DESIGN_SETS),
        default="default",
        help="the planted designs; a set other than default writes valid_inference_<set>",
    )
    ap.add_argument("--out", default="reports/bench/calibration.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    command = "python -m stylisticbias_dev.bench.tasks_valid_inference " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    counts = {
        "reflect": (args.reflect_null, args.reflect_planted),
        "vignette": (args.vignette_null, args.vignette_planted),
    }
    names = VALID_INFERENCE.names if args.protocol == "both" else (args.protocol,)
    for name in names:
        t0 = time.perf_counter()
        load_start = [round(x, 2) for x in os.getloadavg()]
        null, planted = counts[name]
        study = VALID_INFERENCE.lookup(name, "--protocol")
        kwargs = dict(DESIGN_SETS[args.designs][name])
        if name == "reflect":
            kwargs["n_boot"] = args.bootstrap
        section = study(null, planted, **kwargs)
        section["design_set"] = args.designs
        section |= {
            "command": command,
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "seconds": round(time.perf_counter() - t0, 1),
            "machine": machine_info(),
            "load_average": {
                "start": load_start,
                "end": [round(x, 2) for x in os.getloadavg()],
                "note": "1/5/15-minute load; 2 cores shared",
            },
        }
        key = KEY if args.designs == "default" else f"{KEY}_{args.designs.replace('-', '_')}"
        merge_into(Path(args.out), name, section, key=key)
        log.info("%s valid inference passed: %s; wrote %s", name, section["passed"], args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
