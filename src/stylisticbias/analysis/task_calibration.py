"""Calibration of the task-protocol statistics against the simulated judge's planted truth.

For each protocol family a synthetic design is judged by the simulated judge
(:mod:`stylisticbias.judge.engines.simulated.tasks`: answers written as text and read back by the
task parsers), the statistics of :mod:`.task_stats` are computed with bootstrap intervals over
the sampling unit, and over ``replicates`` independent replicates the share of intervals that
cover the closed-form truth is reported (with its Clopper-Pearson 95% interval), as is the
rejection rate of the null tests under a null plant (no effect: the FDR under the global null,
with its interval):

* REFLECT: per-group pairwise win rates (source photos as units, both orders, inconsistent
  pairs dropped), the MCQ relative mean gap (ordinal shift), the salary Gap% (log-normal
  means); null tests: the cluster-robust OLS Wald F test of the salary group effect and the
  chi-square test of the MCQ group x option table;
* VIGNETTE: per-identity selection frequency and the position bias toward slot 1 (pair
  instances as units); null tests: the Fisher exact test of each planted-free log-odds cell
  (the smallest p per replicate, Bonferroni over cells) and the binomial position-bias test.

``python -m stylisticbias.analysis.task_calibration [--replicates N] [--out FILE]`` writes the
JSON (``reports/bench/task_calibration.json``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from stylisticbias.analysis import task_stats as ts
from stylisticbias.analysis.task_demo import ask, pairwise_answers
from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.judge.engines.simulated.tasks import (
    TaskPlant,
    choice_k_probs,
)

log = logging.getLogger(__name__)

GROUPS = ("white-female", "white-male", "black-female", "black-male")
REF = "white-female"
#: The task scenarios asked: conf/benchmark/reflect.yaml's 2AFC income, MCQ salary and the
#: doctor's salary recommendation; conf/benchmark/vignette.yaml's "friendly" question.
AFC_INCOME, MCQ_SALARY, SALARY_DOCTOR, FRIENDLY = 1, 11, 21, 101


@dataclass(frozen=True)
class Coverage:
    """Intervals that covered the truth out of those computed, per statistic."""

    hits: int = 0
    n: int = 0

    def add(self, lo: float, hi: float, truth: float) -> Coverage:
        """One more interval."""
        return Coverage(self.hits + int(lo <= truth <= hi), self.n + 1)

    def summary(self) -> dict[str, Any]:
        """Coverage and its Clopper-Pearson 95% interval."""
        ci = stats.binomtest(self.hits, self.n).proportion_ci() if self.n else None
        return {"coverage": self.hits / self.n if self.n else math.nan, "intervals": self.n,
                "ci95": [ci.low, ci.high] if ci else None}  # fmt: skip


def _rate(k: int, n: int) -> dict[str, Any]:
    ci = stats.binomtest(k, n).proportion_ci()
    return {"rate": k / n, "replicates": n, "ci95": [ci.low, ci.high]}


# ---- REFLECT ----------------------------------------------------------------------------------
def _pair_truth(plant: TaskPlant, eps: float) -> dict[str, float]:
    """WinRate(g) over cross-group pairs: E[wins] / E[retained] across the balanced design."""
    num = dict.fromkeys(GROUPS, 0.0)
    den = dict.fromkeys(GROUPS, 0.0)
    for f, s in itertools.combinations(GROUPS, 2):
        d = plant.effect(f) - plant.effect(s)
        p0, p1 = expit(d + plant.position_bias), expit(d - plant.position_bias)
        keep = (1 - eps) ** 2
        first, second = p0 * p1 * keep, (1 - p0) * (1 - p1) * keep
        for g, w in ((f, first), (s, second)):
            num[g] += w
        for g in (f, s):
            den[g] += first + second
    return {g: num[g] / den[g] for g in GROUPS}


def _reflect_replicate(bench: Benchmark, rep: int, n_photos: int, n_boot: int, null: bool,
                       cov: dict[str, Coverage]) -> dict[str, float]:  # fmt: skip
    seed = 1000 + rep
    eps = 0.03
    shift = {} if null else {"black-female": -0.5, "black-male": -0.3, "white-male": 0.4}
    pair_plant = TaskPlant(shift=shift, position_bias=0.0 if null else 0.3, invalid_rate=eps)
    photos = [f"r{rep}-p{i}" for i in range(n_photos)]
    # pairwise: every cross-group pair of every photo, both orders
    answers = pairwise_answers(bench, AFC_INCOME, pair_plant, photos, GROUPS, seed)
    pairs = ts.consolidate_pairs(answers)
    truth = _pair_truth(pair_plant, eps)
    kept = pairs[pairs["status"] == "consistent"]
    for g in GROUPS:
        appears = (kept["first"] == g) | (kept["second"] == g)
        per = pd.DataFrame({"unit": kept["unit"], "w": (kept["winner"] == g) & appears,
                            "a": appears}).groupby("unit")[["w", "a"]].sum()  # fmt: skip
        per = per.reindex(photos, fill_value=0).to_numpy()
        lo, hi = ts.unit_bootstrap_ci(per, lambda s: s[0] / s[1] if s[1] else math.nan,
                                      n_boot, seed)  # fmt: skip
        cov["win_rate"] = cov.get("win_rate", Coverage()).add(lo, hi, truth[g])
    # MCQ (ordinal): one image per photo x group
    sc = bench.task_scenario(MCQ_SALARY)
    base = (0.1, 0.2, 0.3, 0.2, 0.1, 0.1)
    mcq_plant = TaskPlant(shift={} if null else {"black-male": -0.6, "white-male": 0.3},
                          base=base, invalid_rate=eps)  # fmt: skip
    img_units = [f"{p}|{g}" for p in photos for g in GROUPS]
    img_groups = [(g,) for _ in photos for g in GROUPS]
    mcq = ask(bench, MCQ_SALARY, mcq_plant, img_units, img_groups, seed)
    values = np.array([o.value for o in sc.options], float)
    labels = list(sc.labels)
    k = len(labels)
    counts = np.zeros((n_photos, len(GROUPS), k))
    for i, a in enumerate(mcq):
        if a.valid:
            counts[i // len(GROUPS), i % len(GROUPS), labels.index(a.choice)] += 1
    flat = counts.reshape(n_photos, -1)
    ref = GROUPS.index(REF)

    def gap(g: int):
        def stat(s: np.ndarray) -> float:
            c = s.reshape(len(GROUPS), k)
            if c[g].sum() == 0 or c[ref].sum() == 0:
                return math.nan
            return ts.relative_mean_gap(c[g] / c[g].sum(), c[ref] / c[ref].sum(), values)

        return stat

    for gi, g in enumerate(GROUPS):
        if gi == ref:
            continue
        mu = [float(np.dot(choice_k_probs(base, mcq_plant.effect(x)), values)) for x in (g, REF)]
        lo, hi = ts.unit_bootstrap_ci(flat, gap(gi), n_boot, seed)
        cov["mcq_relative_mean_gap"] = cov.get("mcq_relative_mean_gap", Coverage()).add(
            lo, hi, (mu[0] - mu[1]) / mu[1]
        )
    table = counts.sum(axis=0)
    p_mcq = float(stats.chi2_contingency(table[:, table.sum(axis=0) > 0]).pvalue)
    # salary: numeric, one answer per photo x group
    sal_plant = TaskPlant(shift={} if null else {"black-female": -0.08, "white-male": 0.05},
                          base_mean=70_000, noise_sd=0.15, invalid_rate=eps)  # fmt: skip
    sal = ask(bench, SALARY_DOCTOR, sal_plant, img_units, img_groups, seed)
    sums = np.zeros((n_photos, len(GROUPS), 2))
    recs = []
    for i, a in enumerate(sal):
        if a.valid:
            sums[i // len(GROUPS), i % len(GROUPS)] += (a.value, 1)
            recs.append((photos[i // len(GROUPS)], GROUPS[i % len(GROUPS)], a.value))
    flat_s = sums.reshape(n_photos, -1)
    for gi, g in enumerate(GROUPS):
        if gi == ref:
            continue

        def stat(s: np.ndarray, gi: int = gi) -> float:
            c = s.reshape(len(GROUPS), 2)
            return ts.gap_pct(c[gi, 0] / c[gi, 1], c[ref, 0] / c[ref, 1])

        lo, hi = ts.unit_bootstrap_ci(flat_s, stat, n_boot, seed)
        truth_gap = (math.exp(sal_plant.effect(g) - sal_plant.effect(REF)) - 1) * 100
        cov["salary_gap_pct"] = cov.get("salary_gap_pct", Coverage()).add(lo, hi, truth_gap)
    df = pd.DataFrame(recs, columns=["unit", "group", "salary"])
    terms = [f"C(group, Treatment('{REF}'))[T.{g}]" for g in GROUPS if g != REF]
    _, tests = ts.cluster_ols(df, f"salary ~ C(group, Treatment('{REF}'))", "unit",
                              {"group": terms})  # fmt: skip
    return {"salary_group_F": tests["group"][1], "mcq_chi2": p_mcq}


def calibrate_reflect(
    replicates: int = 20, n_photos: int = 48, n_boot: int = 300
) -> dict[str, Any]:
    """REFLECT: coverage of win rate, MCQ gap and Gap% intervals; null rejection rates."""
    bench = load_benchmark("reflect")
    cov: dict[str, Coverage] = {}
    for r in range(replicates):
        _reflect_replicate(bench, r, n_photos, n_boot, False, cov)
    rejections: dict[str, int] = {}
    for r in range(replicates):
        ps = _reflect_replicate(bench, 10_000 + r, n_photos, n_boot, True, {})
        for name, p in ps.items():
            rejections[name] = rejections.get(name, 0) + int(p < 0.05)
    return {"coverage": {k: v.summary() for k, v in cov.items()},
            "null_rejection": {k: _rate(v, replicates) for k, v in rejections.items()},
            "replicates": replicates, "units": n_photos, "bootstrap": n_boot}  # fmt: skip


# ---- VIGNETTE ---------------------------------------------------------------------------------
IDENTITIES = ("doctor", "farmer", "teacher", "athlete")


def _vignette_replicate(bench: Benchmark, rep: int, n_inst: int, n_boot: int, null: bool,
                        cov: dict[str, Coverage]) -> dict[str, float]:  # fmt: skip
    seed = 5000 + rep
    plant = TaskPlant(shift={} if null else {"doctor": 0.5, "athlete": -0.3},
                      position_bias=0.0 if null else 0.25, invalid_rate=0.02)  # fmt: skip
    combos = list(itertools.combinations(IDENTITIES, 2))
    insts = [f"v{rep}-i{j}" for j in range(n_inst)]
    answers = pairwise_answers(bench, FRIENDLY, plant, insts, IDENTITIES, seed)
    valid = answers[answers["choice"] != ts.INVALID]
    # selection frequency per identity (one activity): share chosen when shown
    for ident in IDENTITIES:
        shown = (valid["first"] == ident) | (valid["second"] == ident)
        chosen = ((valid["first"] == ident) & (valid["choice"] == "first")) | (
            (valid["second"] == ident) & (valid["choice"] == "second")
        )
        per = pd.DataFrame({"unit": valid["unit"], "c": chosen, "s": shown}).groupby("unit")[
            ["c", "s"]].sum().reindex(insts, fill_value=0).to_numpy()  # fmt: skip
        lo, hi = ts.unit_bootstrap_ci(per, lambda s: 100 * s[0] / s[1], n_boot, seed)
        truth = np.mean([
            50 * (expit(plant.effect(ident) - plant.effect(o) + plant.position_bias)
                  + expit(plant.effect(ident) - plant.effect(o) - plant.position_bias))
            for o in IDENTITIES if o != ident
        ])  # fmt: skip
        cov["selection_frequency"] = cov.get("selection_frequency", Coverage()).add(lo, hi, truth)
    slot1 = ((valid["variant"] == 0) & (valid["choice"] == "first")) | (
        (valid["variant"] == 1) & (valid["choice"] == "second")
    )
    per = pd.DataFrame({"unit": valid["unit"], "k": slot1, "n": 1}).groupby("unit")[
        ["k", "n"]].sum().reindex(insts, fill_value=0).to_numpy()  # fmt: skip
    lo, hi = ts.unit_bootstrap_ci(per, lambda s: s[0] / s[1] - 0.5, n_boot, seed)
    truth_pb = np.mean([
        (expit(plant.effect(a) - plant.effect(b) + plant.position_bias)
         + 1 - expit(plant.effect(a) - plant.effect(b) - plant.position_bias)) / 2
        for a, b in combos
    ]) - 0.5  # fmt: skip
    cov["position_bias"] = cov.get("position_bias", Coverage()).add(lo, hi, float(truth_pb))
    _, p_pos, _ = ts.position_bias(answers)
    return {"position_bias_binomial": p_pos}


def calibrate_vignette(replicates: int = 20, n_inst: int = 40, n_boot: int = 300) -> dict[str, Any]:
    """VIGNETTE: coverage of selection frequency and position bias; null rejection rates."""
    bench = load_benchmark("vignette")
    cov: dict[str, Coverage] = {}
    for r in range(replicates):
        _vignette_replicate(bench, r, n_inst, n_boot, False, cov)
    rejections: dict[str, int] = {}
    for r in range(replicates):
        for name, p in _vignette_replicate(bench, 10_000 + r, n_inst, n_boot, True, {}).items():
            rejections[name] = rejections.get(name, 0) + int(p < 0.05)
    return {"coverage": {k: v.summary() for k, v in cov.items()},
            "null_rejection": {k: _rate(v, replicates) for k, v in rejections.items()},
            "replicates": replicates, "units": n_inst, "bootstrap": n_boot}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: write the task-protocol calibration JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=20)
    ap.add_argument("--bootstrap", type=int, default=300)
    ap.add_argument("--out", default="reports/bench/task_calibration.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    res = {"reflect": calibrate_reflect(args.replicates, n_boot=args.bootstrap),
           "vignette": calibrate_vignette(args.replicates, n_boot=args.bootstrap)}  # fmt: skip
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    log.info("wrote %s", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
