"""Calibration over many replicates and three plants (``reports/bench/calibration.json``).

One run of the pipeline is a weak check of its intervals and tests: all SBS of a run share the
base faces' noise, so single-run coverage swings widely. This benchmark repeats the whole
estimation ``--replicates`` times per plant -- each replicate with **new faces** (synthetic
identities with the paper marginals, seed ``r``) and **new judge seeds** (the simulated judge's
seed + ``r``) -- for three plants:

* ``default``: ``conf/planted/default.yaml`` (the paper-shaped effects);
* ``mixed``: the default with three attributes planted exactly 0 (Hair color, Makeup, Eyewear),
  every Fashion style effect sign-flipped (negative effects), and its demographic interactions
  (fashion x age / body type, tattoo x age / gender / body) kept plus one more (eyewear x gender,
  itself on a null main effect);
* ``null``: every demographic, variation and interaction effect 0 (format biases kept).

**Truth** is the *population* value of each estimand: the same estimator applied to the exact
expected deltas/phis (:func:`~stylisticbias.judge.engines.simulated.engine.planted_truth`) of a
large synthetic population (``--population`` faces, seed 10_000, default 10,000: at 2000 faces
the truth's own sampling error was 0.25 of the estimate's SD for the age VS), since the face
bootstrap is an interval for the population quantity. Cells planted exactly 0
(``delta_planted`` 0 on every row) are *null* cells with truth 0.

Per plant and table (Table 12 variation x group cells, Table 3 category x dimension cells,
model x category x scenario-category SBS, de-biased VS per model x dimension): ``coverage`` of the
95% CIs with its Clopper-Pearson interval (as if the intervals were independent) and its interval
by replicate (``coverage_ci95_by_replicate``: the cells of one replicate share its faces, so their
misses come together -- the errors of a replicate's 40 Table 3 cells correlate ~0.6 -- and the
replicate is the independent unit), ``bias`` and ``rmse`` of the estimate, ``ci_contains_estimate``,
and the mean false-discovery proportion over replicates (``fdr``: null discoveries / discoveries
after the table's BH correction) with the share of replicates with any null discovery; the null
plant's tested tables also get ``fdr_study`` (:func:`null_fdr_study`: ``--fdr-replicates``
replicates of the tests alone, the FDR with its binomial interval), which then gives their
``fdr`` and ``fdr_ci95`` (the main replicates' value: ``fdr_main_replicates``; ``fdr_replicates``
says how many replicates ``fdr`` rests on in every plant). For VS
also ``paper_vs_ci_contains_estimate`` (the paper VS's bootstrap range holds its own estimate)
and the coverage per dimension (``by_dimension``).

``python -m stylisticbias_dev.bench.calibration --replicates 30 --faces 100 --population 10000
--fdr-replicates 500 --jobs 2`` (the ``make bench-calibration`` target). The demo's cheap
version is ``python pipelines/calibrate.py``.

``--only vs_debiased`` runs the de-biased VS interval's coverage alone (:func:`vs_debiased_study`:
base faces only, the same faces and judge seeds as the full run's replicates, so its first 30
replicates reproduce ``by_dimension``) with enough replicates to judge it per dimension, and
merges it into ``protocols.stylisticbias.vs_debiased_coverage`` (which the full run keeps).
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from stylisticbias.analysis.calibration import CELLS, synthetic_dataset
from stylisticbias.analysis.metrics import sbs
from stylisticbias.analysis.model_tables import table2_cells
from stylisticbias.analysis.paper_tables import DIMENSIONS, shift_cells, table3
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.vs import variation_strength
from stylisticbias.benchmark import Benchmark, benchmark_from_params
from stylisticbias.config import compose, conf_dir, load_group_option
from stylisticbias.outputs import atomic_write_text
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)

TABLES = ("table12", "table3", "model_category_scenario_category", "vs_debiased")
KEY12 = ["attribute", "value", "dimension", "group"]
KEY3 = ["category", "dimension"]


def plants() -> dict[str, dict[str, Any]]:
    """The three planted configurations (mappings accepted by ``load_planted``)."""
    import yaml

    default = yaml.safe_load((conf_dir() / "planted" / "default.yaml").read_text("utf-8"))
    mixed = copy.deepcopy(default)
    for attr in ("Hair color", "Makeup", "Eyewear"):
        mixed["variations"][attr] = {v: {"default": 0.0} for v in mixed["variations"][attr]}
    mixed["variations"]["Fashion style"] = {
        v: {k: -x for k, x in eff.items()}
        for v, eff in mixed["variations"]["Fashion style"].items()
    }
    mixed["interactions"].append(
        {
            "attribute": "Eyewear",
            "values": ["Thick-rimmed"],
            "axis": "gender",
            "groups": {"female": {"default": 0.2}, "male": {"default": -0.2}},
        }
    )
    null = copy.deepcopy(default)
    for axis, groups in null["demographics"].items():
        null["demographics"][axis] = {g: {"default": 0.0} for g in groups}
    null["categories"] = {c: {"default": 0.0} for c in null.get("categories", {})}
    null["variations"] = {
        a: {v: {"default": 0.0} for v in vals} for a, vals in null["variations"].items()
    }
    null["interactions"] = []
    return {"default": default, "mixed": mixed, "null": null}


def _judge(params: dict[str, Any], benchmark: Benchmark, cfg: dict[str, Any], faces, var):
    """Scores of one simulated judge on a dataset (as the judge + scores stages would)."""
    from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine, image_attrs
    from stylisticbias.scores import compute_scores

    img = image_attrs(faces, var)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].astype(object)
    attrs = attrs.where(attrs.notna(), None).to_dict("records")
    eng = SimulatedJudgeEngine(
        cfg, load_group_option("engine", "simulated"), params["judge"], benchmark
    )
    j = eng.judge_records(img["image_id"].tolist(), img["face_id"].tolist(), attrs)
    return compute_scores(j, faces, var, benchmark)


def _truth_rows(params, benchmark, cfgs, faces, var) -> pd.DataFrame:
    """planted_truth rows of every model, shaped like score rows (phi/delta = the truth)."""
    from stylisticbias.judge.engines.simulated.engine import planted_truth

    out = []
    for cfg in cfgs:
        orderings = benchmark.selected_orderings(params["judge"].get("orderings"))
        tr = planted_truth(benchmark, faces, var, cfg, orderings=orderings)
        out.append(tr)
    tr = pd.concat(out, ignore_index=True)
    tr["phi"] = tr["phi_true"]
    tr["delta"] = tr["delta_true"]
    return tr


def _estimates(
    df: pd.DataFrame, faces: pd.Index, benchmark: Benchmark, s: AnalysisSettings, vs: bool = True
):
    """The four tables' estimates (with CIs and corrected p where the table has them).

    ``vs=False`` leaves VS out (the null-FDR study needs only the tested tables).
    """
    delta = df[~df["is_base"].astype(bool) & df["delta"].notna()]
    sh = shift_cells(delta, faces, s)
    t12 = sh.frame.rename(columns={"effect": "est"})
    t3 = table3(delta, faces, sh, benchmark, s).rename(columns={"sbs": "est"})
    t3 = t3[t3["category"] != "Average"]
    mc = sbs(delta, CELLS, **s.sbs_kwargs(), faces=faces).rename(columns={"effect": "est"})
    if not vs:
        return {"table12": t12, "table3": t3, "model_category_scenario_category": mc}
    vst = variation_strength(
        df,
        DIMENSIONS,
        ddof=s.vs_ddof,
        n_resamples=s.n_resamples,
        ci=s.ci,
        seed=s.seed,
        n_permutations=0,
    )
    return {"table12": t12, "table3": t3, "model_category_scenario_category": mc, "vs": vst}


TESTED = ("table12", "table3", "model_category_scenario_category")


def _null_chunk(args: tuple[list[int], int, list[str]]) -> list[dict[str, Any]]:
    """Null-plant replicates ``rs`` (p-values only): per replicate and tested table, the number of
    tests, of BH discoveries and of raw p below alpha (a worker of :func:`null_fdr_study`)."""
    rs, n_faces, models = args
    quiet = logging.getLogger("stylisticbias")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # per-replicate warnings
    try:
        return _null_rows(rs, n_faces, models)
    finally:
        quiet.setLevel(level)


def _null_rows(rs: list[int], n_faces: int, models: list[str]) -> list[dict[str, Any]]:
    params = compose()
    benchmark = benchmark_from_params(params)
    s = replace(AnalysisSettings.from_config(params.get("analysis")), n_resamples=1)
    cfgs = [{**load_group_option("model", m), "planted": plants()["null"]} for m in models]
    rows = []
    for r in rs:
        est = replicate(params, benchmark, cfgs, r, n_faces, s, vs=False)
        for name in TESTED:
            t = est[name]
            rows.append(
                {
                    "replicate": r,
                    "table": name,
                    "tests": int(t["pval"].notna().sum()),
                    "discoveries": int((t["pval_corr"] < s.alpha).sum()),
                    "raw_below_alpha": int((t["pval"] < s.alpha).sum()),
                }
            )
    return rows


def null_fdr_study(
    replicates: int, n_faces: int, models: list[str], alpha: float, jobs: int = 1
) -> dict[str, dict[str, Any]]:
    """False-discovery rate of each tested table under the all-null plant, over many replicates.

    Under the all-null plant every discovery is false, so a replicate's false-discovery proportion
    is 1 if the table's BH correction rejects anything and 0 otherwise: the FDR is a binomial
    proportion, and a few dozen replicates cannot tell 0.05 from 0.07 (30 replicates: Clopper-
    Pearson half-width ~0.09). The tests and their correction do not use the bootstrap, so this
    study runs the judge and the tests alone (one bootstrap resample), ~1-2 s per replicate, on the
    same seeds as the main replicates (replicate ``r``: faces seed ``r``, judge seed + 1000
    (r + 1)), and reports per table the FDR with its Clopper-Pearson interval, the one-sided
    binomial p-value against ``FDR <= alpha`` (small = evidence of an FDR above nominal), and the
    size of the raw per-cell tests (share of raw p below alpha: the tests' own calibration).
    """
    from concurrent.futures import ProcessPoolExecutor

    from scipy import stats

    step = 25
    chunks = [list(range(i, min(i + step, replicates))) for i in range(0, replicates, step)]
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()

    def progress(done: int) -> None:
        log.info(
            "null FDR study: %d/%d replicates (%.0fs)", done, replicates, time.perf_counter() - t0
        )

    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for part in pool.map(_null_chunk, [(c, n_faces, models) for c in chunks]):
                rows.extend(part)
                progress(len({r["replicate"] for r in rows}))
    else:
        for c in chunks:
            rows.extend(_null_chunk((c, n_faces, models)))
            progress(c[-1] + 1)
    df = pd.DataFrame(rows)
    out = {}
    for name, g in df.groupby("table"):
        hit, n = int((g["discoveries"] > 0).sum()), len(g)
        lo, hi = proportion_confint(hit, n, alpha=0.05, method="beta")
        out[str(name)] = {
            "replicates": n,
            "fdr": round(hit / n, 4),
            "fdr_ci95": [round(float(lo), 4), round(float(hi), 4)],
            "p_fdr_above_nominal": round(
                float(stats.binomtest(hit, n, alpha, alternative="greater").pvalue), 4
            ),
            "fdr_nominal": alpha,
            "tests_per_replicate": int(g["tests"].median()),
            "raw_test_size": round(float(g["raw_below_alpha"].sum() / g["tests"].sum()), 4),
        }
    return out


def population_truth(params, benchmark, cfgs, n_faces: int, s: AnalysisSettings):
    """Population values of every cell (the estimators on exact expected deltas of many faces)."""
    faces, var = synthetic_dataset(benchmark, n_faces, seed=10_000)
    tr = _truth_rows(params, benchmark, cfgs, faces, var)
    fidx = pd.Index(np.sort(tr["face_id"].unique()))
    quick = replace(s, n_resamples=1)
    est = _estimates(tr, fidx, benchmark, quick)
    null_rows = tr.assign(delta=tr["delta_planted"].abs())
    nul = _estimates(null_rows, fidx, benchmark, quick)
    out = {}
    for name, keys in (
        ("table12", KEY12),
        ("table3", KEY3),
        ("model_category_scenario_category", CELLS),
    ):
        t = est[name][[*keys, "est"]].rename(columns={"est": "truth"})
        n = nul[name][[*keys, "est"]].rename(columns={"est": "planted_abs"})
        t = t.merge(n, on=keys, how="left")
        t["null"] = t["planted_abs"].fillna(0.0) <= 0.0
        t.loc[t["null"], "truth"] = 0.0
        out[name] = t.drop(columns="planted_abs")
    out["vs_debiased"] = _population_vs(tr, s.vs_ddof)
    return out


def _population_vs(tr: pd.DataFrame, ddof: int) -> pd.DataFrame:
    """True de-biased-VS estimand: RMS over scenarios of the SD of population group means."""
    base = tr[tr["is_base"].astype(bool)]
    rows = []
    for model, g in base.groupby("model"):
        for dim, col in DIMENSIONS.items():
            means = g.groupby(["scenario_id", col])["phi_true"].mean().unstack(col)
            k = means.shape[1]
            theta2 = ((means.sub(means.mean(axis=1), axis=0)) ** 2).sum(axis=1) / (k - ddof)
            planted = g.groupby(["scenario_id", col])["phi_planted"].mean().unstack(col)
            is_null = bool((planted.max(axis=1) - planted.min(axis=1)).max() < 1e-12)
            truth = 0.0 if is_null else float(np.sqrt(theta2.mean()))
            rows.append((model, dim, truth, is_null))
    return pd.DataFrame(rows, columns=["model", "dimension", "truth", "null"])


def replicate(params, benchmark, cfgs, r: int, n_faces: int, s: AnalysisSettings, vs: bool = True):
    """One replicate: new faces (seed r), new judge seeds; estimates of the four tables."""
    faces, var = synthetic_dataset(benchmark, n_faces, seed=r)
    scored = []
    for cfg in cfgs:
        c = {**cfg, "seed": int(cfg.get("seed", 0)) + 1000 * (r + 1)}
        scored.append(_judge(params, benchmark, c, faces, var))
    df = pd.concat(scored, ignore_index=True)
    fidx = pd.Index(np.sort(df["face_id"].astype(str).unique()))
    return _estimates(df, fidx, benchmark, s, vs=vs)


def coverage_by_replicate(cells: pd.DataFrame) -> list[float]:
    """95% interval of the coverage with the replicate as the unit (cluster-robust).

    The cells of one replicate share its faces (every shift shares its base face's noise), so
    their misses come together and ``coverage_ci95`` (Clopper-Pearson over all intervals, as if
    independent) is too narrow. This is the t interval of the per-replicate coverages, clipped
    to [0, 1].
    """
    from scipy import stats

    per = cells.groupby("replicate")["covered"].mean().to_numpy(dtype=float)
    if per.size < 2:
        return [float("nan"), float("nan")]
    half = stats.t.ppf(0.975, per.size - 1) * per.std(ddof=1) / np.sqrt(per.size)
    m = per.mean()
    return [round(float(max(m - half, 0.0)), 4), round(float(min(m + half, 1.0)), 4)]


def _summary(cells: pd.DataFrame, alpha: float, significance: bool) -> dict[str, Any]:
    cov = cells["covered"].to_numpy()
    lo, hi = proportion_confint(int(cov.sum()), len(cov), alpha=0.05, method="beta")
    err = (cells["est"] - cells["truth"]).to_numpy(dtype=float)
    out: dict[str, Any] = {
        "coverage": round(float(cov.mean()), 4),
        "coverage_ci95": [round(float(lo), 4), round(float(hi), 4)],
        "coverage_ci95_by_replicate": coverage_by_replicate(cells),
        "n_cells": len(cov),
        "n_replicates": int(cells["replicate"].nunique()),
        "n_null_cells": int(cells["null"].sum()),
        "ci_contains_estimate": float(
            ((cells["ci_low"] <= cells["est"]) & (cells["est"] <= cells["ci_high"])).mean()
        ),
        "bias": float(np.nanmean(err)),
        "rmse": float(np.sqrt(np.nanmean(err**2))),
        "coverage_null_cells": (
            round(float(cells.loc[cells["null"], "covered"].mean()), 4)
            if cells["null"].any()
            else None
        ),
    }
    if significance:
        fdp, anyfalse = [], []
        for _, g in cells.groupby("replicate"):
            sig = g["pval_corr"] < alpha
            disc = int(sig.sum())
            false = int((sig & g["null"]).sum())
            fdp.append(false / disc if disc else 0.0)
            anyfalse.append(false > 0)
        out["fdr"] = round(float(np.mean(fdp)), 4)
        out["fdr_nominal"] = alpha
        out["share_replicates_with_null_discovery"] = round(float(np.mean(anyfalse)), 4)
        nonnull = cells[~cells["null"]]
        out["power_non_null"] = (
            round(float((nonnull["pval_corr"] < alpha).mean()), 4) if len(nonnull) else None
        )
    return out


def run(
    replicates: int,
    n_faces: int,
    population: int,
    models: list[str],
    fdr_replicates: int = 0,
    jobs: int = 1,
) -> dict[str, Any]:
    """Every plant x replicate; the calibration.json content (without command/machine).

    ``fdr_replicates`` > 0 adds :func:`null_fdr_study` to the null plant's tested tables
    (``fdr_study``), with ``jobs`` worker processes.
    """
    params = compose()
    benchmark = benchmark_from_params(params)
    s = AnalysisSettings.from_config(params.get("analysis"))
    result: dict[str, Any] = {}
    for plant, planted in plants().items():
        t0 = time.perf_counter()
        cfgs = [{**load_group_option("model", m), "planted": planted} for m in models]
        truth = population_truth(params, benchmark, cfgs, population, s)
        collected: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES}
        vs_own = []
        for r in range(replicates):
            est = replicate(params, benchmark, cfgs, r, n_faces, s)
            for name, keys in (
                ("table12", KEY12),
                ("table3", KEY3),
                ("model_category_scenario_category", CELLS),
            ):
                e = est[name][[*keys, "est", "ci_low", "ci_high", "pval_corr"]]
                collected[name].append(
                    e.merge(truth[name], on=keys, how="inner").assign(replicate=r)
                )
            v = est["vs"]
            vs_own.append(((v["range_low"] <= v["vs"]) & (v["vs"] <= v["range_high"])).to_numpy())
            # the de-biased VS and its CI (the paper VS's interval is a range, not a CI)
            e = v[["model", "dimension", "vs_debiased", "debiased_ci_low", "debiased_ci_high"]]
            e = e.rename(
                columns={
                    "vs_debiased": "est",
                    "debiased_ci_low": "ci_low",
                    "debiased_ci_high": "ci_high",
                }
            ).assign(pval_corr=np.nan)
            collected["vs_debiased"].append(
                e.merge(truth["vs_debiased"], on=["model", "dimension"]).assign(replicate=r)
            )
            log.info(
                "plant %s: replicate %d/%d (%.0fs)",
                plant,
                r + 1,
                replicates,
                time.perf_counter() - t0,
            )
        summary, frames = {}, {}
        for name in TABLES:
            cells = frames[name] = pd.concat(collected[name], ignore_index=True)
            cells["covered"] = (cells["ci_low"] <= cells["truth"]) & (
                cells["truth"] <= cells["ci_high"]
            )
            summary[name] = _summary(cells, s.alpha, significance=name != "vs_debiased")
        own = np.concatenate(vs_own)
        summary["vs_debiased"]["paper_vs_ci_contains_estimate"] = float(own.mean())
        summary["vs_debiased"]["by_dimension"] = {
            d: {
                "coverage": round(float(g["covered"].mean()), 4),
                "n_cells": len(g),
                "mean_truth": round(float(g["truth"].mean()), 5),
            }
            for d, g in frames["vs_debiased"].groupby("dimension")
        }
        for name in TESTED:
            summary[name]["fdr_replicates"] = replicates
        if plant == "null" and fdr_replicates > 0:
            # the headline FDR of the null plant is the study's (its binomial interval is
            # ~4x narrower); the main replicates' value stays beside it
            study = null_fdr_study(fdr_replicates, n_faces, models, s.alpha, jobs)
            for name in TESTED:
                sm = summary[name]
                sm["fdr_main_replicates"] = sm["fdr"]
                sm["fdr"] = study[name]["fdr"]
                sm["fdr_ci95"] = study[name]["fdr_ci95"]
                sm["fdr_replicates"] = study[name]["replicates"]
                sm["fdr_study"] = study[name]
        result[plant] = summary
    return result


def vs_debiased_study(
    replicates: int, n_faces: int, population: int, models: list[str], plant_names: list[str]
) -> dict[str, Any]:
    """Coverage of the de-biased VS interval per plant and dimension, base faces only.

    The replicates are the full run's (faces seed ``r``, judge seed + ``1000 (r + 1)``; the
    variation images, which VS does not use, are not judged), the truth the same population
    value (:func:`_population_vs`), the interval the tables' default (``debiased_ci_low/high``:
    boundary-aware, with the settings' permutation test and the within-group face bootstrap;
    the full run measures the signed test inversion, without permutations). Per dimension:
    coverage with its Clopper-Pearson interval
    (the two models' cells of one replicate share its faces) and the share of misses on each side.
    """
    params = compose()
    benchmark = benchmark_from_params(params)
    s = AnalysisSettings.from_config(params.get("analysis"))
    known = plants()
    out: dict[str, Any] = {}
    for plant in plant_names:
        t0 = time.perf_counter()
        cfgs = [{**load_group_option("model", m), "planted": known[plant]} for m in models]
        faces, var = synthetic_dataset(benchmark, population, seed=10_000)
        truth = _population_vs(_truth_rows(params, benchmark, cfgs, faces, var.iloc[:0]), s.vs_ddof)
        cells = []
        for r in range(replicates):
            faces, var = synthetic_dataset(benchmark, n_faces, seed=r)
            scored = []
            for cfg in cfgs:
                c = {**cfg, "seed": int(cfg.get("seed", 0)) + 1000 * (r + 1)}
                scored.append(_judge(params, benchmark, c, faces, var.iloc[:0]))
            v = table2_cells(pd.concat(scored, ignore_index=True), s)  # the table's own cells
            cells.append(v.merge(truth, on=["model", "dimension"]).assign(replicate=r))
            if (r + 1) % 25 == 0:
                log.info(
                    "vs_debiased %s: %d/%d (%.0fs)",
                    plant,
                    r + 1,
                    replicates,
                    time.perf_counter() - t0,
                )
        df = pd.concat(cells, ignore_index=True)
        below = (df["truth"] < df["debiased_ci_low"]).to_numpy()
        above = (df["truth"] > df["debiased_ci_high"]).to_numpy()
        df["covered"] = ~(below | above)
        df["below"], df["above"] = below, above
        first30 = df[df["replicate"] < 30].groupby("dimension")["covered"].mean().round(4)
        by_dim = {}
        for d, g in df.groupby("dimension"):
            k, n = int(g["covered"].sum()), len(g)
            lo, hi = proportion_confint(k, n, alpha=0.05, method="beta")
            by_dim[d] = {
                "coverage": round(k / n, 4),
                "coverage_ci95": [round(float(lo), 4), round(float(hi), 4)],
                "n_cells": n,
                "truth_below_interval": round(float(g["below"].mean()), 4),
                "truth_above_interval": round(float(g["above"].mean()), 4),
                "first_30_replicates": float(first30.get(d, np.nan)),
                "mean_truth": round(float(g["truth"].mean()), 5),
            }
        out[plant] = {
            "coverage": round(float(df["covered"].mean()), 4),
            "coverage_ci95_by_replicate": coverage_by_replicate(df),
            "by_dimension": by_dim,
            "replicates": replicates,
            "seconds": round(time.perf_counter() - t0, 1),
        }
    return out


def _write_vs_study(args: argparse.Namespace, argv: list[str] | None, models: list[str]) -> int:
    """``--only vs_debiased``: :func:`vs_debiased_study`, merged into its key (read-then-write)."""
    t0 = time.perf_counter()
    noisy = logging.getLogger("stylisticbias.analysis")
    level = noisy.level
    noisy.setLevel(logging.ERROR)
    try:
        res = vs_debiased_study(
            args.replicates, args.faces, args.population, models, args.plants.split(",")
        )
    finally:
        noisy.setLevel(level)
    res["settings"] = {
        "faces_per_replicate": args.faces,
        "population_faces": args.population,
        "models": models,
        "interval": "the default: boundary-aware (permutation test for 0), within-group face "
        "bootstrap",
        "target": [0.93, 0.97],
    }
    res["command"] = "python -m stylisticbias_dev.bench.calibration " + " ".join(
        argv or sys.argv[1:]
    )
    res["machine"] = machine_info()
    res["date"] = datetime.now(UTC).strftime("%Y-%m-%d")
    res["seconds"] = round(time.perf_counter() - t0, 1)
    out = Path(args.out)
    doc = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    old = (
        doc.setdefault("protocols", {}).setdefault("stylisticbias", {}).get("vs_debiased_coverage")
    )
    kept = {  # plants not re-run this time keep their result, labelled with their own run
        p: {**v, "run": v.get("run") or {k: old[k] for k in ("command", "date") if k in old}}
        for p, v in (old or {}).items()
        if p in plants() and p not in res and isinstance(v, dict)
    }
    doc["protocols"]["stylisticbias"]["vs_debiased_coverage"] = {**kept, **res}
    atomic_write_text(out, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    log.info("merged protocols.stylisticbias.vs_debiased_coverage into %s", out)
    return 0


def main(argv: list[str] | None = None) -> int:
    """CLI: write reports/bench/calibration.json."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.calibration")
    ap.add_argument("--replicates", type=int, default=20)
    ap.add_argument("--faces", type=int, default=100, help="faces per replicate")
    ap.add_argument("--population", type=int, default=10_000, help="faces of the truth population")
    ap.add_argument(
        "--fdr-replicates",
        type=int,
        default=500,
        help="null-plant replicates of the FDR study (0 = none)",
    )
    ap.add_argument("--jobs", type=int, default=1, help="worker processes of the FDR study")
    ap.add_argument("--models", default="simulated-strong,simulated-weak")
    ap.add_argument("--out", default="reports/bench/calibration.json")
    ap.add_argument(
        "--only",
        choices=["vs_debiased"],
        default=None,
        help="vs_debiased: only the de-biased VS interval's coverage (vs_debiased_study)",
    )
    ap.add_argument("--plants", default="default,null", help="plants of --only vs_debiased")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.only == "vs_debiased":
        return _write_vs_study(args, argv, [m for m in args.models.split(",") if m])
    noisy = [logging.getLogger(n) for n in ("stylisticbias.analysis", "stylisticbias.scores")]
    levels = [lg.level for lg in noisy]
    t0 = time.perf_counter()
    models = [m for m in args.models.split(",") if m]
    try:
        for lg in noisy:
            lg.setLevel(logging.ERROR)  # per-replicate warnings
        res = run(
            args.replicates,
            args.faces,
            args.population,
            models,
            fdr_replicates=args.fdr_replicates,
            jobs=args.jobs,
        )
    finally:
        for lg, level in zip(noisy, levels):
            lg.setLevel(level)
    doc = {
        "plants": res,
        "settings": {
            "replicates": args.replicates,
            "faces_per_replicate": args.faces,
            "population_faces": args.population,
            "models": models,
            "ci": 0.95,
            "fdr_study_replicates": args.fdr_replicates,
            "targets": {
                "coverage": [0.93, 0.97],
                "fdr": "<= nominal (alpha); null plant: fdr_study",
                "paper_vs_ci_contains_estimate": 1.0,
            },
        },
        "command": "python -m stylisticbias_dev.bench.calibration "
        + " ".join(argv or sys.argv[1:]),
        "machine": machine_info(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():  # other protocols' sections (paired_calibration) are kept as they are
        kept = json.loads(out.read_text(encoding="utf-8")).get("protocols")
        if kept:
            doc["protocols"] = kept
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    log.info("wrote %s in %.0fs", out, doc["seconds"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
