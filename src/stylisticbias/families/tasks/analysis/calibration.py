"""Calibration of the task-protocol tables against the simulated judge's planted truth.

For each protocol a synthetic design is judged by the simulated judge
(:mod:`stylisticbias.judge.engines.simulated.tasks`: answers written as text and read back by the
task parsers) and the protocol's tables are built by the same builders the analyze stage uses
(:mod:`.tables`). Over ``replicates`` independent replicates (new source photos /
instances, new judge seeds) every table with an interval reports the share of its intervals
that cover the closed-form truth, with the Clopper-Pearson 95% interval of that share (as if the
intervals were independent) and the interval by replicate (the rows of one replicate share its
units: the replicate is the independent unit), plus the bias and RMSE of the estimate. Every
table with p-values is run ``null_replicates`` times under a **global null** plant (no group or
identity effect, no position bias): its p-values are Benjamini-Hochberg corrected within the
table at q = 0.05, and since every hypothesis is null the false-discovery proportion of a
replicate is 1 when anything is rejected, so the FDR is the share of replicates with a
rejection (with its Clopper-Pearson interval).

* REFLECT (48 source photos x 4 race-gender variants): ``reflect_win_rates`` (every cross-group
  pair of a photo, both orders, inconsistent pairs dropped), ``task_position_bias``,
  ``reflect_mcq_gaps`` (ordinal shift), ``reflect_salary_gaps`` (log-normal means); null:
  ``reflect_salary_tests`` (cluster-robust OLS Wald F) and ``task_position_bias`` (binomial);
* VIGNETTE (40 composite instances of every pair of four identities, both orders; the
  "friendly"/"unfriendly" terms, a decision question with the image and text-only):
  ``vignette_selection``, ``vignette_log_odds`` (Woolf interval of the add-one log-odds ratio;
  truth: the log odds ratio of the expected selection shares), ``task_position_bias``; null:
  ``vignette_log_odds`` and ``vignette_polarity`` (the exact test stratified by instance,
  :mod:`.exact`), ``vignette_pair_comp`` (Fisher exact), ``vignette_text_vs_image``
  (two-proportion z) and ``task_position_bias``. Every tested table also reports its ``power``
  under the planted design (the share of its rows rejected after BH per replicate).

The pooled Fisher test of the log-odds and polarity tables read a null FDR of 0.0525 over 400
replicates (CP [0.033, 0.079]); a direct simulation of the same design (20,000 null
replicates, the same BH over the four identities) puts its true FDR at 0.037 [0.034, 0.040]:
not anti-conservative with independent answers, the 0.0525 was Monte Carlo error. The
stratified test replaced it because real answers are clustered by instance (every question of
an instance shows the same photos), which the simulated judge does not model.
``python -m stylisticbias_dev.bench.vignette_null_size --replicates 4000``
(``reports/bench/vignette_null_size.json``) draws the design directly: stratified 0.039
[0.033, 0.046], pooled Fisher 0.037 [0.032, 0.044].
Over the bench's 400 null replicates (seeds shared with the earlier run) it reads 0.055
[0.035, 0.082]: the same replicates that put the pooled test above 0.05, so the point
estimate over 400 replicates cannot settle 0.04 against 0.05; more null replicates (e.g.
2,000: a CP half-width near 0.01) can.

The intervals are BCa with the small-sample expansion
(:func:`~.stats.unit_bootstrap_ci`). With plain percentile intervals the ratio statistics
undercovered: over 400 replicates the win rate covered 0.933 (1,600 intervals), the MCQ gap
0.942, BCa alone 0.938 / 0.944, BCa expanded 0.951 / 0.949; the estimator's own bias is
small (the MCQ relative mean gap, a ratio of means, +0.008 against an SD of 0.10: the O(1/n)
ratio bias) and the unit was right (source photos; a photo's variants share it).

``python -m stylisticbias.families.tasks.analysis.calibration --replicates 100
--null-replicates 400`` merges ``protocols.reflect`` and ``protocols.vignette`` into
``reports/bench/calibration.json``.

**Valid inference** (:func:`reflect_valid_inference`, :func:`vignette_valid_inference`): the
simulated judge has no random effects, so the tests are also calibrated on designs drawn
directly with the structure of real data (:mod:`.designs`: per-photo appeal, per-source
effects and random slopes, unequal cluster sizes): per tested table the null rejection rate
at alpha 0.05 and 0.01 (Clopper-Pearson intervals over rows) and the power at the planted
effects, for the default test and the paper's pooled one beside it, and the coverage of the
Gap%, MCQ gap and JSD intervals. ``python -m stylisticbias_dev.bench.tasks_valid_inference``
merges them as ``protocols.<protocol>.valid_inference``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import os
import platform
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit, logit
from statsmodels.stats.multitest import multipletests

from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.families.tasks.analysis import stats as ts
from stylisticbias.families.tasks.analysis import tables as tt
from stylisticbias.families.tasks.analysis.demo import ask, options_table, pairwise_answers
from stylisticbias.families.tasks.analysis.designs import McqDesign, SalaryDesign, VignetteDesign
from stylisticbias.families.tasks.judge.plants import load_plants
from stylisticbias.judge.engines.simulated.tasks import TaskPlant, choice_k_probs
from stylisticbias.registry import Registry

log = logging.getLogger(__name__)

GROUPS = ("white-female", "white-male", "black-female", "black-male")
REF = "white-female"
IDENTITIES = ("doctor", "farmer", "teacher", "athlete")
#: The task scenarios asked: conf/benchmark/reflect.yaml's 2AFC income, MCQ salary and the
#: doctor's salary recommendation; conf/benchmark/vignette.yaml's "friendly"/"unfriendly"
#: terms and the first cooking decision with the image and text-only.
AFC_INCOME, MCQ_SALARY, SALARY_DOCTOR = 1, 11, 21
FRIENDLY, UNFRIENDLY, DECISION, DECISION_TEXT = 101, 102, 3021, 4021
#: targets of the acceptance check
COVERAGE_TARGET = (0.93, 0.97)
FDR_TARGET = 0.05
MODEL = "simulated"


def _cp(k: int, n: int) -> list[float] | None:
    if not n:
        return None
    ci = stats.binomtest(k, n).proportion_ci()
    return [float(ci.low), float(ci.high)]


@dataclass
class Coverage:
    """Intervals of one table: per replicate, the hits and the estimate errors."""

    hits: list[list[bool]] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)

    def add(self, rep: int, rows: pd.DataFrame, estimate: str, truth: Sequence[float]) -> None:
        """One replicate's rows (``ci_low``, ``ci_high``, the ``estimate`` column) and truths."""
        lo, hi = rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float)
        t = np.asarray(truth, float)
        self.hits.append(list((lo <= t) & (t <= hi)))
        self.errors += list(rows[estimate].to_numpy(float) - t)

    def summary(self) -> dict[str, Any]:
        """Coverage with its Clopper-Pearson interval and its interval by replicate."""
        flat = [h for rep in self.hits for h in rep]
        k, n = int(sum(flat)), len(flat)
        per = np.array([np.mean(r) for r in self.hits])
        half = stats.t.ppf(0.975, len(per) - 1) * per.std(ddof=1) / math.sqrt(len(per))
        err = np.asarray(self.errors)
        return {
            "coverage": k / n,
            "intervals": n,
            "replicates": len(self.hits),
            "ci95": _cp(k, n),
            "ci95_by_replicate": [float(per.mean() - half), float(per.mean() + half)],
            "bias": float(err.mean()),
            "rmse": float(np.sqrt((err**2).mean())),
        }


@dataclass
class NullFdr:
    """Per replicate of the global null: was anything rejected after BH within the table?"""

    rejected: list[bool] = field(default_factory=list)
    tests: int = 0
    shares: list[float] = field(default_factory=list)

    def add(self, pvals: Sequence[float], q: float = FDR_TARGET) -> None:
        """One replicate's p-values of the table."""
        p = np.asarray(pvals, float)
        p = p[~np.isnan(p)]
        self.tests = max(self.tests, len(p))
        rej = multipletests(p, q, "fdr_bh")[0] if len(p) else np.zeros(0, bool)
        self.rejected.append(bool(rej.any()))
        self.shares.append(float(rej.mean()) if len(p) else math.nan)

    def power(self) -> dict[str, Any]:
        """Under the planted design: the mean share of the table's rows rejected (BH within
        the table) per replicate -- the power over its rows, every planted row non-null --
        and the share of replicates with a rejection."""
        k, n = int(sum(self.rejected)), len(self.rejected)
        return {
            "row_rejection_share": float(np.nanmean(self.shares)) if n else None,
            "any_rejection": k / n if n else None,
            "replicates": n,
            "tests_per_replicate": self.tests,
            "correction": "fdr_bh q=0.05",
        }

    def summary(self) -> dict[str, Any]:
        """The FDR (share of null replicates with a discovery) and its interval."""
        k, n = int(sum(self.rejected)), len(self.rejected)
        return {
            "fdr": k / n,
            "replicates": n,
            "ci95": _cp(k, n),
            "tests_per_replicate": self.tests,
            "correction": "fdr_bh q=0.05",
        }


# ---- truths -----------------------------------------------------------------------------------
def _pair_probs(plant: TaskPlant, a: str, b: str) -> tuple[float, float]:
    """P(a chosen) in order 0 (a in slot 1) and in order 1 (b in slot 1)."""
    d = plant.effect(a) - plant.effect(b)
    return float(expit(d + plant.position_bias)), float(expit(d - plant.position_bias))


def win_rate_truth(plant: TaskPlant, members: Sequence[str], eps: float) -> dict[str, float]:
    """WinRate(g) over cross-group pairs: E[wins] / E[retained] across the balanced design."""
    num = dict.fromkeys(members, 0.0)
    den = dict.fromkeys(members, 0.0)
    keep = (1 - eps) ** 2
    for f, s in itertools.combinations(members, 2):
        p0, p1 = _pair_probs(plant, f, s)
        first, second = p0 * p1 * keep, (1 - p0) * (1 - p1) * keep
        num[f] += first
        num[s] += second
        for g in (f, s):
            den[g] += first + second
    return {g: num[g] / den[g] for g in members}


def position_bias_truth(plant: TaskPlant, members: Sequence[str]) -> float:
    """The expected share of valid answers choosing slot 1, minus 1/2 (both orders)."""
    shares = [
        (p0 + 1 - p1) / 2
        for a, b in itertools.combinations(members, 2)
        for p0, p1 in [_pair_probs(plant, a, b)]
    ]
    return float(np.mean(shares)) - 0.5


def selection_truth(plants: Sequence[TaskPlant], members: Sequence[str]) -> dict[str, float]:
    """S(i): the mean over the terms (activities) of 100 x P(i chosen | shown)."""
    out = {}
    for i in members:
        per_term = [
            np.mean([50 * sum(_pair_probs(p, i, o)) for o in members if o != i]) for p in plants
        ]
        out[i] = float(np.mean(per_term))
    return out


def _for(rows: pd.DataFrame, key: str, truth: dict[str, float]) -> list[float]:
    """The truth of each row: by its ``key`` column (``a+b``: the two columns joined by |)."""
    cols = key.split("+")
    return [truth["|".join(str(v) for v in vals)] for vals in zip(*(rows[c] for c in cols))]


# ---- REFLECT ----------------------------------------------------------------------------------


def reflect_plants(null: bool) -> dict[str, TaskPlant]:
    """The planted effects of a REFLECT replicate (``conf/planted/tasks.yaml``, section
    ``reflect``; every shift and position bias 0 under the global null)."""
    return load_plants("reflect", null=null)


def reflect_replicate(
    bench: Benchmark, rep: int, n_photos: int, n_boot: int, null: bool
) -> dict[str, pd.DataFrame]:
    """The REFLECT tables of one replicate (fresh photos and judge seed)."""
    seed = 1000 + rep + (10_000 if null else 0)
    plants = reflect_plants(null)
    kw = {"n_boot": n_boot, "seed": seed, "simulated": True}
    photos = [f"{'n' if null else 'r'}{rep}-p{i}" for i in range(n_photos)]
    ans = pairwise_answers(bench, AFC_INCOME, plants["pairwise"], photos, GROUPS, seed)
    out = tt.pairwise_tables(ans, MODEL, AFC_INCOME, **kw)
    units = [f"{p}|{g}" for p in photos for g in GROUPS]
    groups = [(g,) for _ in photos for g in GROUPS]
    unit_col = [u.split("|")[0] for u in units]
    sc = bench.task_scenario(MCQ_SALARY)
    mcq = ask(bench, MCQ_SALARY, plants["choice_k"], units, groups, seed)
    df = pd.DataFrame(
        {"unit": unit_col, "group": [g[0] for g in groups], "choice": [a.outcome for a in mcq]}
    )
    values = [float(o.value) for o in sc.options]  # type: ignore[arg-type]
    out |= tt.mcq_tables(df, MODEL, MCQ_SALARY, sc.labels, values, REF, **kw)
    sal = ask(bench, SALARY_DOCTOR, plants["numeric"], units, groups, seed)
    df = pd.DataFrame(
        {
            "unit": unit_col,
            "group": [g[0] for g in groups],
            "value": [a.value if a.valid else math.nan for a in sal],
        }
    )
    out |= tt.salary_tables(df, MODEL, SALARY_DOCTOR, REF, **kw)
    return out


def reflect_truth(bench: Benchmark) -> dict[str, dict[str, float]]:
    """The closed-form truth of every REFLECT interval (planted, non-null)."""
    p = reflect_plants(False)
    values = [float(o.value) for o in bench.task_scenario(MCQ_SALARY).options]  # type: ignore[arg-type]
    mcq = p["choice_k"]
    ref_dist = choice_k_probs(mcq.base, mcq.effect(REF))
    # the gap the tables estimate, applied to the planted distributions (one definition)
    mcq_gaps = {
        g: ts.relative_mean_gap(choice_k_probs(mcq.base, mcq.effect(g)), ref_dist, values)
        for g in GROUPS
    }
    sal = p["numeric"]
    return {
        "reflect_win_rates": win_rate_truth(p["pairwise"], GROUPS, p["pairwise"].invalid_rate),
        "task_position_bias": {"_": position_bias_truth(p["pairwise"], GROUPS)},
        "reflect_mcq_gaps": mcq_gaps,
        "reflect_salary_gaps": {
            g: (math.exp(sal.effect(g) - sal.effect(REF)) - 1) * 100 for g in GROUPS
        },
    }


#: table -> (estimate column, key column) of the REFLECT intervals
REFLECT_INTERVALS = {
    "reflect_win_rates": ("win_rate", "group"),
    "task_position_bias": ("position_bias", None),
    "reflect_mcq_gaps": ("relative_mean_gap", "group"),
    "reflect_salary_gaps": ("gap_pct", "group"),
}
REFLECT_TESTS = ("reflect_salary_tests", "task_position_bias")


# ---- VIGNETTE ---------------------------------------------------------------------------------


def vignette_plants(null: bool) -> dict[str, TaskPlant]:
    """The planted effects of a VIGNETTE replicate (``conf/planted/tasks.yaml``, section
    ``vignette``; every shift and position bias 0 under the global null)."""
    return load_plants("vignette", null=null)


def vignette_replicate(
    bench: Benchmark, rep: int, n_inst: int, n_boot: int, null: bool
) -> dict[str, pd.DataFrame]:
    """The VIGNETTE tables of one replicate (fresh instances and judge seeds)."""
    seed = 5000 + 4 * rep + (100_000 if null else 0)
    plants = vignette_plants(null)
    kw = {"n_boot": n_boot, "seed": seed, "simulated": True}
    inst = [f"{'n' if null else 'v'}{rep}-i{j}" for j in range(n_inst)]
    high = pairwise_answers(bench, FRIENDLY, plants["high"], inst, IDENTITIES, seed)
    low = pairwise_answers(bench, UNFRIENDLY, plants["low"], inst, IDENTITIES, seed + 1)
    oh, ol = options_table(high, "friendly"), options_table(low, "unfriendly")
    out = tt.vignette_tables(pd.concat([oh, ol], ignore_index=True), MODEL, FRIENDLY, **kw)
    out["vignette_polarity"] = tt.polarity_table(
        tt.polarity_counts(oh, ol, "p1"), MODEL, simulated=True
    )
    pairwise = tt.pairwise_tables(high, MODEL, FRIENDLY, **kw)
    out["task_position_bias"] = pairwise["task_position_bias"]
    with_img = pairwise_answers(bench, DECISION, plants["high"], inst, IDENTITIES, seed + 2)
    text = pairwise_answers(bench, DECISION_TEXT, plants["text"], inst, IDENTITIES, seed + 3)
    out["vignette_text_vs_image"] = tt.text_vs_image_table(
        options_table(with_img, "cooking"),
        options_table(text, "cooking"),
        MODEL,
        DECISION,
        simulated=True,
    )
    return out


def vignette_truth(bench: Benchmark) -> dict[str, dict[str, float]]:
    """The closed-form truth of every VIGNETTE interval (planted, non-null)."""
    p = vignette_plants(False)
    high, low = selection_truth([p["high"]], IDENTITIES), selection_truth([p["low"]], IDENTITIES)
    lor = {}
    for i in IDENTITIES:  # friendly vs the rest (unfriendly), and the reverse
        d = float(logit(high[i] / 100) - logit(low[i] / 100))
        lor[f"{i}|friendly"], lor[f"{i}|unfriendly"] = d, -d
    return {
        "vignette_selection": selection_truth([p["high"], p["low"]], IDENTITIES),
        "vignette_log_odds": lor,
        "task_position_bias": {"_": position_bias_truth(p["high"], IDENTITIES)},
    }


VIGNETTE_INTERVALS = {
    "vignette_selection": ("selection_frequency", "identity"),
    "vignette_log_odds": ("log_odds", "identity+activity"),
    "task_position_bias": ("position_bias", None),
}
VIGNETTE_TESTS = (
    "vignette_log_odds",
    "vignette_pair_comp",
    "vignette_polarity",
    "vignette_text_vs_image",
    "task_position_bias",
)


# ---- the study ----------------------------------------------------------------------------------
Replicate = Callable[[Benchmark, int, int, int, bool], dict[str, pd.DataFrame]]


def calibrate(
    protocol: str,
    replicate: Replicate,
    truth: dict[str, dict[str, float]],
    intervals: dict[str, tuple[str, str | None]],
    tests: Sequence[str],
    replicates: int,
    null_replicates: int,
    units: int,
    n_boot: int,
    jobs: int = 1,
) -> dict[str, Any]:
    """Coverage of ``intervals`` over ``replicates`` and the null FDR of ``tests``; ``jobs``
    worker processes build the replicates (each replicate is seeded by its index, so the result
    does not depend on ``jobs``)."""
    cov = {name: Coverage() for name in intervals}
    power = {name: NullFdr() for name in tests}
    planted = _replicates(replicate, protocol, units, n_boot, False, replicates, jobs)
    nulls = _replicates(replicate, protocol, units, 20, True, null_replicates, jobs)
    for r, tabs in enumerate(planted):
        for name in tests:
            power[name].add(tabs[name]["pval"].tolist())
        for name, (col, key) in intervals.items():
            rows = tabs[name]
            t = [truth[name]["_"]] * len(rows) if key is None else _for(rows, key, truth[name])
            cov[name].add(r, rows, col, t)
    fdr = {name: NullFdr() for name in tests}
    for tabs in nulls:  # intervals unused under the null (20 resamples)
        for name in tests:
            fdr[name].add(tabs[name]["pval"].tolist())
    cov_s = {k: v.summary() for k, v in cov.items()}
    fdr_s = {k: v.summary() for k, v in fdr.items()}
    power_s = {k: v.power() for k, v in power.items()}
    lo, hi = COVERAGE_TARGET
    passed = all(lo <= c["coverage"] <= hi for c in cov_s.values()) and all(
        f["fdr"] <= FDR_TARGET for f in fdr_s.values()
    )
    return {
        "coverage": cov_s,
        "null_fdr": fdr_s,
        "power": power_s,
        "replicates": replicates,
        "null_replicates": null_replicates,
        "units": units,
        "bootstrap": n_boot,
        "interval": "BCa, expanded for the number of units (task_stats.unit_bootstrap_ci)",
        "targets": {"coverage": list(COVERAGE_TARGET), "null_fdr": f"<= {FDR_TARGET}"},
        "passed": passed,
    }


def _one(args: tuple[Replicate, str, int, int, int, bool]) -> dict[str, pd.DataFrame]:
    replicate, protocol, r, units, n_boot, null = args
    return replicate(load_benchmark(protocol), r, units, n_boot, null)


def _replicates(
    replicate: Replicate, protocol: str, units: int, n_boot: int, null: bool, count: int, jobs: int
) -> list[dict[str, pd.DataFrame]]:
    """Replicates ``0 .. count - 1`` in index order, over ``jobs`` processes when > 1."""
    args = [(replicate, protocol, r, units, n_boot, null) for r in range(count)]
    if jobs <= 1:
        return [_one(a) for a in args]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(_one, args, chunksize=4))


def calibrate_reflect(
    replicates: int = 20,
    n_photos: int = 48,
    n_boot: int = 500,
    null_replicates: int | None = None,
    jobs: int = 1,
) -> dict[str, Any]:
    """REFLECT: coverage of every interval table, null FDR of every tested table."""
    return calibrate(
        "reflect",
        reflect_replicate,
        reflect_truth(load_benchmark("reflect")),
        REFLECT_INTERVALS,
        REFLECT_TESTS,
        replicates,
        replicates if null_replicates is None else null_replicates,
        n_photos,
        n_boot,
        jobs,
    )


def calibrate_vignette(
    replicates: int = 20,
    n_inst: int = 40,
    n_boot: int = 500,
    null_replicates: int | None = None,
    jobs: int = 1,
) -> dict[str, Any]:
    """VIGNETTE: coverage of every interval table, null FDR of every tested table."""
    return calibrate(
        "vignette",
        vignette_replicate,
        vignette_truth(load_benchmark("vignette")),
        VIGNETTE_INTERVALS,
        VIGNETTE_TESTS,
        replicates,
        replicates if null_replicates is None else null_replicates,
        n_inst,
        n_boot,
        jobs,
    )


# ---- valid inference: tests and intervals under structured designs ---------------------------
ALPHAS = (0.05, 0.01)
#: acceptance: null rate in [0.03, 0.07] at 0.05 with its CP upper bound <= 0.08; <= 0.02 at 0.01
FPR_TARGET = {"0.05": (0.03, 0.07, 0.08), "0.01": (0.0, 0.02, None)}


@dataclass
class Rejections:
    """p-values of one test (rows pooled over replicates): rejection rates at each level."""

    pvals: list[float] = field(default_factory=list)

    def add(self, p: Sequence[float] | float) -> None:
        """Add one or more p-values (NaN skipped)."""
        self.pvals += [float(x) for x in np.atleast_1d(p) if not math.isnan(float(x))]

    def summary(self) -> dict[str, Any]:
        """Per level: the rate, its count and its Clopper-Pearson 95% interval."""
        p = np.asarray(self.pvals)
        out: dict[str, Any] = {"tests": len(p)}
        for a in ALPHAS:
            k = int(np.sum(p < a))
            out[str(a)] = {"rate": k / len(p) if len(p) else None, "k": k, "ci95": _cp(k, len(p))}
        return out


def _fpr_ok(s: dict[str, Any]) -> bool:
    """Does a null summary meet :data:`FPR_TARGET`?"""
    ok = True
    for a, (lo, hi, cp_hi) in FPR_TARGET.items():
        r = s[a]
        ok &= r["rate"] is not None and lo <= r["rate"] <= hi
        ok &= cp_hi is None or r["ci95"][1] <= cp_hi
    return bool(ok)


@dataclass
class Hits:
    """Interval coverage of one interval column (all rows of all replicates)."""

    hits: list[bool] = field(default_factory=list)

    def add(self, lo: Sequence[float], hi: Sequence[float], truth: Sequence[float]) -> None:
        """One replicate's intervals and truths."""
        lo_, hi_, t = (np.asarray(x, float) for x in (lo, hi, truth))
        self.hits += list((lo_ <= t) & (t <= hi_))

    def summary(self) -> dict[str, Any]:
        """Coverage with its Clopper-Pearson 95% interval."""
        k, n = int(sum(self.hits)), len(self.hits)
        return {"coverage": k / n if n else None, "intervals": n, "ci95": _cp(k, n)}


def _split(null: dict[str, Rejections], power: dict[str, Rejections]) -> dict[str, Any]:
    return {
        name: {
            "null": r.summary(),
            "power": power[name].summary() if name in power else None,
            "passed": _fpr_ok(r.summary()),
        }
        for name, r in null.items()
    }


def reflect_valid_inference(
    null_replicates: int = 600,
    replicates: int = 100,
    n_boot: int = 399,
    seed: int = 7,
    design: SalaryDesign | None = None,
    mcq: McqDesign | None = None,
) -> dict[str, Any]:
    """REFLECT under :class:`~.designs.SalaryDesign` / :class:`~.designs.McqDesign` (per-source
    effects, random slopes, unequal clusters): the null rejection rate of every
    ``reflect_salary_tests`` row kind (per occupation and pooled, per effect) for the default
    (wild cluster bootstrap) and the paper's test (CR1 Wald F against F(q, G - 1): its F is
    the default's, the p-value statsmodels'), their power under the planted effects, and the
    coverage of the Gap%, MCQ gap and JSD intervals; the JSD's chance level beside the mean
    null JSD."""
    sd, md = design or SalaryDesign(), mcq or McqDesign()
    rng = np.random.default_rng(seed)
    ref = REF
    null = {"default": defaultdict(Rejections), "paper": defaultdict(Rejections)}
    power = {"default": defaultdict(Rejections), "paper": defaultdict(Rejections)}

    def salary_tests(occ: list[tuple[int, pd.DataFrame]], into: dict) -> None:
        for scope, sid, df in [("occupation", s_, d_) for s_, d_ in occ] + [("pooled", 0, None)]:
            if df is None:
                valid = pd.concat(
                    [d_.dropna(subset=["value"]).assign(scenario=s_) for s_, d_ in occ],
                    ignore_index=True,
                )
            else:
                valid = df.dropna(subset=["value"])
            rows = tt.salary_test_rows(
                valid,
                MODEL,
                sid,
                ref,
                n_boot=n_boot,
                seed=int(rng.integers(1 << 31)),
                pooled=scope == "pooled",
            )
            g = valid["unit"].nunique()
            q = {"group": 9, "race": 4, "gender": 1, "race x gender": 4}
            for r in rows:
                into["default"][f"{scope}: {r['effect']}"].add(r["pval"])
                into["paper"][f"{scope}: {r['effect']}"].add(
                    stats.f.sf(r["f_stat"], q[r["effect"]], g - 1)
                )

    for _ in range(null_replicates):
        salary_tests(sd.draw(rng, True), null)
    gap_cov = Hits()
    mcq_cov, jsd_cov = Hits(), Hits()
    truth_gap = sd.gap_truth(ref)
    marg = {g: md.marginal(g) for g in md.groups}
    pooled = np.mean([marg[g] for g in md.groups], axis=0)
    truth_mcq = {g: ts.relative_mean_gap(marg[g], marg[ref], md.values) for g in md.groups}
    truth_jsd = {g: float(ts.jsd_rows(marg[g][None], pooled)[0]) for g in md.groups}
    for r in range(replicates):
        occ = sd.draw(rng, False)
        salary_tests(occ, power)
        for sid, df in occ:
            gaps = tt.salary_tables(df, MODEL, sid, ref, n_boot=n_boot, seed=r)
            g = gaps["reflect_salary_gaps"]
            gap_cov.add(g["ci_low"], g["ci_high"], [truth_gap[x] for x in g["group"]])
        m = tt.mcq_tables(
            md.draw(rng, False), MODEL, MCQ_SALARY, md.labels, md.values, ref, n_boot=n_boot, seed=r
        )["reflect_mcq_gaps"]
        mcq_cov.add(m["ci_low"], m["ci_high"], [truth_mcq[x] for x in m["group"]])
        jsd_cov.add(m["jsd_ci_low"], m["jsd_ci_high"], [truth_jsd[x] for x in m["group"]])
    chance, null_jsd = [], []
    for r in range(min(replicates, 200)):  # the chance level against the null JSD's mean
        m = tt.mcq_tables(
            md.draw(rng, True), MODEL, MCQ_SALARY, md.labels, md.values, ref, n_boot=20, seed=r
        )["reflect_mcq_gaps"]
        chance += list(m["jsd_chance"])
        null_jsd += list(m["jsd"])
    tests = {k: _split(null[k], power[k]) for k in ("default", "paper")}
    intervals = {
        "reflect_salary_gaps.gap_pct": gap_cov.summary(),
        "reflect_mcq_gaps.relative_mean_gap": mcq_cov.summary(),
        "reflect_mcq_gaps.jsd": jsd_cov.summary(),
    }
    lo, hi = COVERAGE_TARGET
    return {
        "design": {"salary": _plain(sd), "mcq": _plain(md)},
        "reflect_salary_tests": {
            "default": {"test": ts.WILD_CLUSTER, **tests["default"]},
            "paper": {"test": ts.PAPER_WALD_F, **tests["paper"]},
        },
        "intervals": intervals,
        "jsd_chance": {
            "mean_chance_level": float(np.mean(chance)),
            "mean_null_jsd": float(np.mean(null_jsd)),
            "rows": len(chance),
            "note": "bits; the chance level (labels permuted within each photo) "
            "estimates the mean JSD when groups do not differ",
        },
        "null_replicates": null_replicates,
        "replicates": replicates,
        "bootstrap": n_boot,
        "targets": {
            "fpr": {a: list(v) for a, v in FPR_TARGET.items()},
            "coverage": list(COVERAGE_TARGET),
        },
        "passed": all(v["passed"] for v in tests["default"].values())
        and all(lo <= c["coverage"] <= hi for c in intervals.values()),
    }


def vignette_valid_inference(
    null_replicates: int = 1000,
    replicates: int = 300,
    seed: int = 11,
    design: VignetteDesign | None = None,
) -> dict[str, Any]:
    """VIGNETTE under :class:`~.designs.VignetteDesign` (per-photo appeal, unequal repeats):
    the null rejection rate of ``vignette_pair_comp`` and ``vignette_text_vs_image`` rows for
    the default (instance-clustered) and the paper's pooled tests, and their power over the
    rows whose planted truth is at least 0.03 away from 0."""
    vd = design or VignetteDesign()
    rng = np.random.default_rng(seed)
    null = {"default": defaultdict(Rejections), "paper": defaultdict(Rejections)}
    power = {"default": defaultdict(Rejections), "paper": defaultdict(Rejections)}
    pc_truth, tv_truth = vd.pair_comp_truth(), vd.text_vs_image_truth()

    def one(into: dict, planted: bool) -> None:
        terms, image, text = vd.draw(rng, not planted)
        pc = ts.pair_comp(terms)
        tv = tt.text_vs_image_table(image, text, MODEL, DECISION)
        tv_paper = tt.text_vs_image_table(image, text, MODEL, DECISION, paper_tests=True)
        if planted:
            keep_pc = [
                abs(pc_truth[f"{a}|{b}"]) >= 0.03 for a, b in zip(pc["identity"], pc["partner"])
            ]
            keep_tv = [abs(tv_truth[i]) >= 0.03 for i in tv["identity"]]
            pc, tv, tv_paper = pc[keep_pc], tv[keep_tv], tv_paper[keep_tv]
        into["default"]["vignette_pair_comp"].add(pc["pval"])
        into["paper"]["vignette_pair_comp"].add(pc["pval_fisher"])
        into["default"]["vignette_text_vs_image"].add(tv["pval"])
        into["paper"]["vignette_text_vs_image"].add(tv_paper["pval"])

    for _ in range(null_replicates):
        one(null, False)
    for _ in range(replicates):
        one(power, True)
    tests = {k: _split(null[k], power[k]) for k in ("default", "paper")}
    return {
        "design": _plain(vd),
        "vignette_pair_comp": {
            "default": {"test": ts.CLUSTER_T, **tests["default"]["vignette_pair_comp"]},
            "paper": {"test": ts.PAPER_FISHER, **tests["paper"]["vignette_pair_comp"]},
        },
        "vignette_text_vs_image": {
            "default": {"test": ts.CLUSTER_T, **tests["default"]["vignette_text_vs_image"]},
            "paper": {"test": ts.PAPER_Z, **tests["paper"]["vignette_text_vs_image"]},
        },
        "power_rows": "rows whose planted truth is >= 0.03 from 0 (PairComp, share difference)",
        "null_replicates": null_replicates,
        "replicates": replicates,
        "targets": {"fpr": {a: list(v) for a, v in FPR_TARGET.items()}},
        "passed": all(v["passed"] for v in tests["default"].values()),
    }


def _plain(obj: Any) -> dict[str, Any]:
    """A design dataclass as JSON-ready values."""
    return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in asdict(obj).items()}


#: protocol -> its valid-inference study (``protocols.<protocol>.valid_inference``)
VALID_INFERENCE: Registry[Callable[..., dict[str, Any]]] = Registry(
    "task valid-inference study",
    {"reflect": reflect_valid_inference, "vignette": vignette_valid_inference},
)


def merge_into(path: Path, protocol: str, section: dict[str, Any], key: str | None = None) -> None:
    """Write ``section`` as ``protocols.<protocol>`` of the bench file (as
    ``protocols.<protocol>.<key>`` with ``key``), keeping the rest; read, update and written
    at once (atomically)."""
    from stylisticbias.outputs import atomic_write_text

    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    proto = doc.setdefault("protocols", {})
    if key is None:
        proto[protocol] = section
    else:
        proto.setdefault(protocol, {})[key] = section
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


#: task protocol -> its calibration (planted effects recovered, null false-positive rate)
CALIBRATIONS: Registry[Callable[..., dict[str, Any]]] = Registry(
    "task calibration", {"reflect": calibrate_reflect, "vignette": calibrate_vignette}
)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: merge the task protocols' calibration into the bench file."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", choices=(*CALIBRATIONS.names, "both"), default="both")
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--null-replicates", type=int, default=400)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--out", default="reports/bench/calibration.json")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (same results)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    command = "python -m stylisticbias.families.tasks.analysis.calibration " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    names = CALIBRATIONS.names if args.protocol == "both" else (args.protocol,)
    for name in names:
        t0 = time.perf_counter()
        load_start = [round(x, 2) for x in os.getloadavg()]
        fn = CALIBRATIONS.lookup(name, "--protocol")
        section = fn(
            args.replicates,
            n_boot=args.bootstrap,
            null_replicates=args.null_replicates,
            jobs=args.jobs,
        )
        section |= {
            "command": command,
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "python": platform.python_version(),
            "seconds": round(time.perf_counter() - t0, 1),
            "load_average": {
                "start": load_start,
                "end": [round(x, 2) for x in os.getloadavg()],
                "note": "1/5/15-minute load; 2 cores shared",
            },
        }
        merge_into(Path(args.out), name, section)
        for table, c in section["coverage"].items():
            log.info("%s %s coverage %.4f CP [%.4f, %.4f]", name, table, c["coverage"], *c["ci95"])
        for table, f in section["null_fdr"].items():
            log.info("%s %s null FDR %.4f CP [%.4f, %.4f]", name, table, f["fdr"], *f["ci95"])
        log.info("%s passed: %s; wrote %s", name, section["passed"], args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
