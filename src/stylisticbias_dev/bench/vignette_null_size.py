"""The size of VIGNETTE's log-odds / polarity tests under the global null, precisely
(``reports/bench/vignette_null_size.json``).

The calibration bench (``stylisticbias.families.tasks.analysis.calibration``) builds every table per
replicate, so its null FDR rests on a few hundred replicates (a Clopper-Pearson half-width near
0.02 at 0.05). This bench draws the same design directly -- ``--instances`` instances of four
identities, every pair in both orders, one high- and one low-valence term, invalid answers at
``--invalid``, every answer a fair coin (no identity, term or position effect) -- as the per
(identity, instance) counts the tables read, and applies the two tests of
``vignette_polarity`` (and of ``vignette_log_odds``, whose table is the same for two terms):
the exact test stratified by instance (:func:`~stylisticbias.families.tasks.analysis.exact.
stratified_exact_p`, the table's ``pval``) and the paper's pooled Fisher test
(``pval_fisher``), each Benjamini-Hochberg corrected over the four identities at q = 0.05.
Under the global null the FDR is the share of replicates with a rejection (reported with its
Clopper-Pearson 95% interval).

``python -m stylisticbias_dev.bench.vignette_null_size --replicates 4000``
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

from stylisticbias.families.tasks.analysis.exact import pooled_fisher_p, stratified_exact_p
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)
IDENTITIES = 4


def null_counts(rng: np.random.Generator, instances: int, invalid: float) -> np.ndarray:
    """Per (instance, identity, term) the selections and valid appearances: ``[..., 0]``
    selections, ``[..., 1]`` appearances; term 0 high, 1 low."""
    out = np.zeros((instances, IDENTITIES, 2, 2), np.int64)
    for term in (0, 1):
        for a, b in itertools.combinations(range(IDENTITIES), 2):
            for _order in (0, 1):
                valid = rng.random(instances) >= invalid
                a_chosen = (rng.random(instances) < 0.5) & valid
                out[:, a, term, 0] += a_chosen
                out[:, b, term, 0] += valid & ~a_chosen
                out[:, a, term, 1] += valid
                out[:, b, term, 1] += valid
    return out


def size_study(replicates: int, instances: int, invalid: float, seed: int) -> dict:
    """The FDR of both tests over ``replicates`` null replicates."""
    rng = np.random.default_rng(seed)
    hits = {"stratified": 0, "pooled_fisher": 0}
    for _ in range(replicates):
        c = null_counts(rng, instances, invalid)
        p = {"stratified": [], "pooled_fisher": []}
        for i in range(IDENTITIES):
            x, n = c[:, i, :, 0], c[:, i, :, 1]
            tabs = np.stack(
                [
                    np.stack([x[:, 0], n[:, 0] - x[:, 0]], -1),
                    np.stack([x[:, 1], n[:, 1] - x[:, 1]], -1),
                ],
                1,
            )
            p["stratified"].append(stratified_exact_p(tabs))
            p["pooled_fisher"].append(pooled_fisher_p(tabs))
        for k, v in p.items():
            hits[k] += bool(multipletests(v, 0.05, "fdr_bh")[0].any())
    out = {}
    for k, h in hits.items():
        ci = stats.binomtest(h, replicates).proportion_ci()
        out[k] = {"fdr": h / replicates, "ci95": [float(ci.low), float(ci.high)]}
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: write reports/bench/vignette_null_size.json."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.vignette_null_size")
    ap.add_argument("--replicates", type=int, default=4000)
    ap.add_argument("--instances", type=int, default=40)
    ap.add_argument("--invalid", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="reports/bench/vignette_null_size.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    load_start = [round(x, 2) for x in os.getloadavg()]
    t0 = time.perf_counter()
    res = size_study(args.replicates, args.instances, args.invalid, args.seed)
    doc = {
        "tests": res,
        "replicates": args.replicates,
        "instances": args.instances,
        "identities": IDENTITIES,
        "invalid_rate": args.invalid,
        "seed": args.seed,
        "correction": "fdr_bh q=0.05 over the identities",
        "target": "<= 0.05",
        "command": "python -m stylisticbias_dev.bench.vignette_null_size "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - t0, 1),
        "load_average": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
        "machine": machine_info(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    for k, v in res.items():
        log.info("%s: null FDR %.4f CP [%.4f, %.4f]", k, v["fdr"], *v["ci95"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
