"""Every StylisticBias table's test and interval, run by the project's own analysis on
structured planted scores.

Each replicate plants a scores frame shaped like the scores stage's (the protocol's 25
scenarios, every evaluated variation of each face's gender, two models judging the same images)
and runs :func:`stylisticbias.analysis.run.analyze` -- the in-memory analysis the streaming
stage is tested against, so every table (paper Tables 2-7, 11, 12, the SBS profiles, the
model-pair regressions, the agreement measures, the released code's analyses) comes from the
same functions as in ``reports/tables/``. Structure of the plant (logit scale, phi = share of 12
Bernoulli answers):

* a **per-person random effect** ``u_f ~ N(0, 0.5^2)`` shared by all the face's photos and
  scenarios, a **per-photo appeal** ``e_i ~ N(0, 0.3^2)`` for every image (base and each
  variation; the same image is judged by both models), scenario intercepts ``N(0, 0.6^2)`` and a
  per-model scenario offset ``N(0, 0.2^2)``;
* **unequal groups** on every axis (age 50/30/20 %, gender 60/40, ethnicity 35/25/20/12/8,
  body 50/30/20), ``--faces`` faces per replicate.

``null``: nothing planted (no group or variation effect): every test's null holds -- a base and
a variation photo of a face are exchangeable, so every shift has mean 0 and every group the same
distribution. ``effect`` (power): ``--delta`` on the logit for each group (per scenario a random
sign, centred), every variation ``delta * (1 + N(0, 1))`` plus a scenario profile
``N(0, delta^2)`` (shared by the models) and interactions (Fashion x age, Tattoos x gender, Fashion
x body type, ``delta`` per group step).

Per table (and per test or measure where a table holds several): the false-positive rate of the
raw ``pval`` at alpha 0.05 and 0.01 over every cell of every null replicate, with a 95%
Clopper-Pearson interval on the **effective** number of cells (the binomial count deflated by the
design effect of the cells within one replicate, so that correlated cells do not narrow it), the
power under ``effect`` and the coverage of the table's interval at the null truth (0 for every
shift, spread, slope, correlation and effect size; 1 for a ratio).

``python -m stylisticbias_dev.bench.stylisticbias_tables_validity --replicates 600
--effect-replicates 150`` merges the result into ``reports/bench/calibration.json`` under
``protocols.stylisticbias.valid_inference.tables`` (the other keys are kept). ``--tables
mixed_model,effect_sizes,...`` re-measures only those tables and merges their entries into the
stored result (the run is listed under ``runs``); when every one is a released-code analysis
(:data:`RELEASED_TABLES`) only those are computed, not the whole analysis.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from stylisticbias.analysis.per_model import CATEGORICAL
from stylisticbias.analysis.run import analyze
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark, load_benchmark
from stylisticbias.outputs import atomic_write_text
from stylisticbias_dev.bench.machine import machine_info
from stylisticbias_dev.bench.results import VALID_INFERENCE_TARGETS

log = logging.getLogger(__name__)

SHARES: dict[str, tuple[float, ...]] = {
    "age": (0.5, 0.3, 0.2),
    "gender": (0.6, 0.4),
    "ethnicity": (0.35, 0.25, 0.2, 0.12, 0.08),
    "body_type": (0.5, 0.3, 0.2),
}
SD_PERSON = 0.5
SD_PHOTO = 0.3
SD_SCENARIO = 0.6
SD_MODEL = 0.2
ANSWERS = 12
MODELS = ("m1", "m2")
ALPHAS = (0.05, 0.01)


@dataclass(frozen=True)
class Plant:
    """One planted design: ``faces`` per replicate and the effect size (0 = the null)."""

    faces: int
    delta: float


def _sizes(n: int, shares: tuple[float, ...], rng: np.random.Generator) -> np.ndarray:
    sizes = np.floor(np.asarray(shares) * n).astype(int)
    sizes[0] += n - sizes.sum()
    return rng.permutation(np.repeat(np.arange(len(shares)), sizes))


def planted_scores(benchmark: Benchmark, plant: Plant, seed: int) -> pd.DataFrame:
    """A scores frame (the columns the analysis reads) of one planted replicate."""
    rng = np.random.default_rng(seed)
    F, d = plant.faces, plant.delta
    demo = {a: _sizes(F, sh, rng) for a, sh in SHARES.items()}
    scen = benchmark.scenarios
    S = len(scen)
    intercept = rng.normal(0.0, SD_SCENARIO, S)
    u = rng.normal(0.0, SD_PERSON, F)
    images: list[tuple[int, Any]] = []
    for f in range(F):
        images.append((f, None))
        gender = benchmark.demographics["gender"][demo["gender"][f]]
        images.extend((f, v) for v in benchmark.variations_for(gender, evaluated_only=True))
    face = np.array([i[0] for i in images])
    var = [i[1] for i in images]
    base = np.array([v is None for v in var])
    photo = rng.normal(0.0, SD_PHOTO, len(images))
    shift = np.zeros((len(images), S))
    if d:
        for a, sh in SHARES.items():  # group effects on every photo of the face
            e = d * rng.choice([-1.0, 1.0], size=(len(sh), S))
            shift += (e - e.mean(0))[demo[a][face]]
        labels = sorted({(v.attribute, v.value) for v in var if v is not None})
        v_eff = dict(zip(labels, d * (1.0 + rng.normal(0.0, 1.0, len(labels))), strict=True))
        s_eff = rng.normal(0.0, d, S)
        for i, v in enumerate(var):
            if v is None:
                continue
            f = face[i]
            x = v_eff[(v.attribute, v.value)]
            if v.category == "Fashion":
                x += d * (demo["age"][f] - 1) + d * (demo["body_type"][f] - 1)
            if v.category == "Tattoos":
                x += d * (2 * demo["gender"][f] - 1)
            shift[i] += x + s_eff
    base_idx = np.flatnonzero(base)
    base_of = base_idx[np.searchsorted(base_idx, np.arange(len(images)), side="right") - 1]
    rep = np.repeat
    frames = []
    for _m in MODELS:
        logit = intercept + rng.normal(0.0, SD_MODEL, S) + (u[face] + photo)[:, None] + shift
        phi = rng.binomial(ANSWERS, expit(logit)) / ANSWERS
        frames.append(
            pd.DataFrame(
                {
                    "model": _m,
                    "face_id": rep([f"f{f:03d}" for f in face], S),
                    "is_base": rep(base, S),
                    "category": rep([v.category if v else None for v in var], S),
                    "attribute": rep([v.attribute if v else None for v in var], S),
                    "value": rep([v.value if v else None for v in var], S),
                    **{
                        a: rep([benchmark.demographics[a][demo[a][f]] for f in face], S)
                        for a in DEMOGRAPHIC_AXES
                    },
                    "scenario_id": np.tile([x.id for x in scen], len(images)),
                    "scenario_category": np.tile([x.category for x in scen], len(images)),
                    "phi": phi.ravel(),
                    "delta": np.where(rep(base, S), np.nan, (phi - phi[base_of]).ravel()),
                    "simulated": True,
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)
    for c in CATEGORICAL:
        df[c] = df[c].astype("category")
    return df


#: (key, table, row filter or None, p column) -- every test of the StylisticBias tables
TESTS: tuple[tuple[str, str, Callable[[pd.DataFrame], pd.Series] | None], ...] = (
    ("vs_by_model", "vs_by_model", None),
    ("shift_by_variation_demographic", "shift_by_variation_demographic", None),
    ("sbs_category_by_demographic", "sbs_category_by_demographic", None),
    ("sbs_fashion_by_age", "sbs_fashion_by_age", None),
    ("tattoo_sbs", "tattoo_sbs", None),
    ("sbs_fashion_by_body", "sbs_fashion_by_body", None),
    ("per_model_effects", "per_model_effects", None),
    ("demographic_tests", "demographic_tests", None),
    ("sbs_overall", "sbs_overall", None),
    ("sbs_by_scenario", "sbs_by_scenario", None),
    ("sbs_by_scenario_category_model", "sbs_by_scenario_category_model", None),
    ("sbs_by_category_model", "sbs_by_category_model", None),
    ("sbs_by_variation_model", "sbs_by_variation_model", None),
    ("model_pair_regressions", "model_pair_regressions", None),
    ("profile_agreement.spearman", "profile_agreement", lambda t: t["measure"] == "spearman"),
    ("profile_agreement.kendall_w", "profile_agreement", lambda t: t["measure"] == "kendall_w"),
    ("mixed_model", "mixed_model", None),
    ("effect_sizes", "effect_sizes", None),
    ("negativity_asymmetry", "negativity_asymmetry", None),
    *(
        (f"interaction_tests.{k}", "interaction_tests", lambda t, k=k: t["test"] == k)
        for k in ("ols_interaction", "permutation", "mann_whitney", "kruskal")
    ),
    *(
        (f"scenario_agreement.{k}", "scenario_agreement", lambda t, k=k: t["measure"] == k)
        for k in ("kendall_w", "icc_2_1", "icc_3_1", "spearman")
    ),
)

#: (key, table, row filter, low, high, null truth) -- every interval
INTERVALS: tuple[
    tuple[str, str, Callable[[pd.DataFrame], pd.Series] | None, str, str, float], ...
] = (
    ("vs_by_model.debiased", "vs_by_model", None, "debiased_ci_low", "debiased_ci_high", 0.0),
    *(
        (t, t, None, "ci_low", "ci_high", 0.0)
        for t in (
            "shift_by_variation_demographic",
            "sbs_category_by_demographic",
            "sbs_fashion_by_age",
            "tattoo_sbs",
            "sbs_fashion_by_body",
            "per_model_effects",
            "sbs_overall",
            "sbs_by_scenario",
            "sbs_by_scenario_category_model",
            "sbs_by_category_model",
            "sbs_by_variation_model",
            "model_pair_regressions",
            "effect_sizes",
        )
    ),
    ("per_model_effects.cohens_d", "per_model_effects", None, "d_ci_low", "d_ci_high", 0.0),
    (
        "profile_agreement.spearman",
        "profile_agreement",
        lambda t: t["measure"] == "spearman",
        "ci_low",
        "ci_high",
        0.0,
    ),
    ("negativity_asymmetry.ratio", "negativity_asymmetry", None, "ci_low", "ci_high", 1.0),
    *(
        (
            f"scenario_agreement.{k}",
            "scenario_agreement",
            lambda t, k=k: t["measure"] == k,
            "ci_low",
            "ci_high",
            0.0,
        )
        for k in ("icc_2_1", "icc_3_1", "spearman")
    ),
)


def _rows(t: pd.DataFrame | None, keep: Callable[[pd.DataFrame], pd.Series] | None) -> pd.DataFrame:
    if t is None or t.empty:
        return pd.DataFrame()
    return t[keep(t).to_numpy(dtype=bool)] if keep is not None else t


#: the released code's analyses :func:`released_tables` computes without the whole analysis
RELEASED_TABLES = frozenset({"mixed_model", "effect_sizes", "scenario_agreement"})


def released_tables(
    scores: pd.DataFrame, benchmark: Benchmark, s: AnalysisSettings
) -> dict[str, pd.DataFrame]:
    """Only :data:`RELEASED_TABLES`, from the same functions and inputs as
    :func:`stylisticbias.analysis.official_analyses.official_analyses` inside ``analyze``."""
    from stylisticbias.analysis.beyond_tables import SBS_VOCABULARY
    from stylisticbias.analysis.metrics import cell_sums, sbs
    from stylisticbias.analysis.official_analyses import ATTRIBUTE_SCENARIO, face_means
    from stylisticbias.analysis.official_analyses.agreement import scenario_agreement
    from stylisticbias.analysis.official_analyses.effects import (
        effect_sizes,
        mixed_effects,
        mixed_frame,
        scenario_categories,
    )
    from stylisticbias.analysis.paper_tables import DIMENSIONS
    from stylisticbias.analysis.table_registry import spec

    delta = scores[~scores["is_base"].to_numpy(dtype=bool) & scores["delta"].notna().to_numpy()]
    faces = pd.Index(np.sort(np.asarray(pd.unique(scores["face_id"].astype(str)))))
    pooled = {
        f"t12_{d}": cell_sums(delta, ["attribute", "value", c], faces=faces)[0]
        for d, c in DIMENSIONS.items()
    }
    pooled["attribute_scenario"] = cell_sums(delta, list(ATTRIBUTE_SCENARIO), faces=faces)[0]
    mf = mixed_frame(pooled["attribute_scenario"], faces, benchmark, s)
    fm = face_means(pooled, faces, DIMENSIONS)
    kw = {**s.sbs_kwargs(), "n_resamples": 0}
    by_s = sbs(delta, ["model", "scenario_id"], **kw, test=False, faces=faces)
    by_s = by_s.astype({"model": str}).rename(columns=SBS_VOCABULARY)
    out = {
        "mixed_model": mixed_effects(mf, cluster=not s.official),
        "effect_sizes": effect_sizes(mf, fm, faces, s),
        "scenario_agreement": scenario_agreement(by_s, s, scenario_categories(benchmark, s)),
    }
    return {k: df[spec(k).built_columns] for k, df in out.items()}


def replicate(
    benchmark: Benchmark,
    plant: Plant,
    seed: int,
    s: AnalysisSettings,
    only: frozenset[str] | None = None,
) -> dict:
    """One replicate: per test ``[n, rejections at each alpha]``, per interval ``[n, covered]``
    (``only``: just these tables)."""
    scores = planted_scores(benchmark, plant, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if only is not None and only <= RELEASED_TABLES:
            tables = released_tables(scores, benchmark, s)
        else:
            tables = analyze(scores, benchmark, s)
    out: dict[str, list[int]] = {}
    for key, name, keep in TESTS:
        if only is not None and name not in only:
            continue
        p = _rows(tables.get(name), keep)
        p = p["pval"].to_numpy(dtype=np.float64) if "pval" in p else np.array([])
        p = p[np.isfinite(p)]
        out[f"test:{key}"] = [p.size, *(int((p < a).sum()) for a in ALPHAS)]
    if plant.delta == 0.0:
        for key, name, keep, lo, hi, truth in INTERVALS:
            if only is not None and name not in only:
                continue
            r = _rows(tables.get(name), keep)
            if r.empty:
                out[f"interval:{key}"] = [0, 0]
                continue
            low, high = r[lo].to_numpy(dtype=np.float64), r[hi].to_numpy(dtype=np.float64)
            ok = np.isfinite(low) & np.isfinite(high)
            cov = (low[ok] <= truth + 1e-12) & (truth - 1e-12 <= high[ok])
            out[f"interval:{key}"] = [int(ok.sum()), int(cov.sum())]
    return out


def _rate(k: np.ndarray, n: np.ndarray) -> dict[str, Any]:
    """Pooled rate over replicates with a Clopper-Pearson interval on the effective count."""
    tot, hits = float(n.sum()), float(k.sum())
    if tot == 0:
        return {"rate": None, "k": 0, "n": 0, "replicates": len(n)}
    rate = hits / tot
    r = len(n)
    var = r / max(r - 1, 1) * float(((k - rate * n) ** 2).sum()) / tot**2
    binom = rate * (1 - rate) / tot
    deff = max(1.0, var / binom) if binom > 0 else 1.0
    n_eff = tot / deff
    k_eff = rate * n_eff
    lo = 0.0 if k_eff <= 0 else float(stats.beta.ppf(0.025, k_eff, n_eff - k_eff + 1))
    hi = 1.0 if k_eff >= n_eff else float(stats.beta.ppf(0.975, k_eff + 1, n_eff - k_eff))
    return {
        "rate": round(rate, 5),
        "k": int(hits),
        "n": int(tot),
        "replicates": int(r),
        "design_effect": round(deff, 3),
        "ci95": [round(lo, 5), round(hi, 5)],
    }


def summarise(null: list[dict], eff: list[dict]) -> dict[str, Any]:
    """Per test: null false-positive rate and power at each alpha; per interval: coverage."""
    tests: dict[str, Any] = {}
    for key, *_ in TESTS:
        if null and f"test:{key}" not in null[0]:
            continue
        a = np.array([x[f"test:{key}"] for x in null], dtype=np.float64)
        b = np.array([x[f"test:{key}"] for x in eff], dtype=np.float64).reshape(-1, 3)
        tests[key] = {
            f"alpha_{al}": {
                "null_false_positive": _rate(a[:, 1 + i], a[:, 0]),
                "power": _rate(b[:, 1 + i], b[:, 0]),
            }
            for i, al in enumerate(ALPHAS)
        }
    cover: dict[str, Any] = {}
    for key, *_rest in INTERVALS:
        if null and f"interval:{key}" not in null[0]:
            continue
        c = np.array([x[f"interval:{key}"] for x in null], dtype=np.float64)
        cover[key] = {"truth": _rest[-1], "null_truth": _rate(c[:, 1], c[:, 0])}
    return {"tests": tests, "coverage": cover}


def verdicts(summary: dict[str, Any]) -> dict[str, bool]:
    """Per test and interval: within the targets (FPR 0.05 in [0.03, 0.07], CP upper <= 0.08,
    FPR 0.01 <= 0.02; coverage in [0.93, 0.97]); a test or interval with no cells is left out."""
    out: dict[str, bool] = {}
    for k, t in summary["tests"].items():
        a5, a1 = t["alpha_0.05"]["null_false_positive"], t["alpha_0.01"]["null_false_positive"]
        if a5["rate"] is None:
            continue
        out[f"test:{k}"] = bool(
            0.03 <= a5["rate"] <= 0.07 and a5["ci95"][1] <= 0.08 and a1["rate"] <= 0.02
        )
    for k, c in summary["coverage"].items():
        if c["null_truth"]["rate"] is not None:
            out[f"interval:{k}"] = bool(0.93 <= c["null_truth"]["rate"] <= 0.97)
    return out


_STATE: dict[str, Any] = {}


def _one(job: tuple[float, int]) -> dict:
    delta, seed = job
    return replicate(
        _STATE["benchmark"],
        Plant(_STATE["faces"], delta),
        seed,
        _STATE["settings"],
        _STATE.get("only"),
    )


def run(
    replicates: int,
    effect_replicates: int,
    faces: int,
    delta: float,
    s: AnalysisSettings,
    jobs: int,
    only: frozenset[str] | None = None,
) -> tuple[list[dict], list[dict]]:
    """The null and effect replicates (seeds ``r`` and ``100_000 + r``; ``only``: the tables)."""
    _STATE.update(benchmark=load_benchmark("stylisticbias"), faces=faces, settings=s, only=only)
    work = [(0.0, r) for r in range(replicates)]
    work += [(delta, 100_000 + r) for r in range(effect_replicates)]
    if jobs > 1:
        with mp.get_context("fork").Pool(jobs) as pool:
            res = pool.map(_one, work, chunksize=4)
    else:
        res = [_one(w) for w in work]
    return res[:replicates], res[replicates:]


def main(argv: list[str] | None = None) -> int:
    """Run the calibration and merge it into ``reports/bench/calibration.json``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=600)
    ap.add_argument("--effect-replicates", type=int, default=150)
    ap.add_argument("--faces", type=int, default=60)
    ap.add_argument("--delta", type=float, default=0.25)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--permutations", type=int, default=499)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("reports/bench/calibration.json"))
    ap.add_argument(
        "--tables",
        default="",
        help="comma-separated tables to re-measure (merged into the stored result); default all",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("stylisticbias").setLevel(logging.ERROR)
    names = {name for _k, name, _f in TESTS} | {i[1] for i in INTERVALS}
    only = frozenset(t.strip() for t in args.tables.split(",") if t.strip()) or None
    if only is not None and not only <= names:
        ap.error(f"--tables: unknown {sorted(only - names)}; valid: {', '.join(sorted(names))}")
    t0, c0 = time.time(), time.process_time()
    s = AnalysisSettings(n_resamples=args.bootstrap, n_permutations=args.permutations)
    null, eff = run(
        args.replicates, args.effect_replicates, args.faces, args.delta, s, args.jobs, only
    )
    summary = summarise(null, eff)
    result = {
        "design": {
            "faces": args.faces,
            "models": len(MODELS),
            "scenarios": 25,
            "answers_per_phi": ANSWERS,
            "group_shares": {a: list(v) for a, v in SHARES.items()},
            "person_sd_logit": SD_PERSON,
            "photo_sd_logit": SD_PHOTO,
            "scenario_sd_logit": SD_SCENARIO,
            "model_scenario_sd_logit": SD_MODEL,
            "planted_delta_logit": args.delta,
            "bootstrap": args.bootstrap,
            "permutations": args.permutations,
            "replicates_null": args.replicates,
            "replicates_effect": args.effect_replicates,
        },
        **summary,
        "targets": dict(VALID_INFERENCE_TARGETS),
        "command": "python -m stylisticbias_dev.bench.stylisticbias_tables_validity "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine_info(),
        "date": datetime.now(UTC).date().isoformat(),
        "seconds": round(time.time() - t0, 1),
        "cpu_seconds_main_process": round(time.process_time() - c0, 1),
    }
    data = json.loads(args.out.read_text("utf-8")) if args.out.exists() else {}
    vi = data.setdefault("protocols", {}).setdefault("stylisticbias", {})
    vi = vi.setdefault("valid_inference", {})
    if only is not None and "tables" in vi:  # merge the re-measured entries into the stored run
        old = vi["tables"]
        run_info = {k: result[k] for k in ("design", "command", "machine", "date", "seconds")}
        old.setdefault("runs", []).append({"tables": sorted(only), **run_info})
        for part in ("tests", "coverage"):
            old.setdefault(part, {}).update(summary[part])
        result = old
    ok = verdicts({"tests": result["tests"], "coverage": result["coverage"]})
    result["within_targets"] = ok
    result["failing"] = sorted(k for k, v in ok.items() if not v)
    vi["tables"] = result
    atomic_write_text(args.out, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    log.warning(
        "tables: %d failing of %d in %.0f s: %s",
        len(result["failing"]),
        len(ok),
        time.time() - t0,
        ", ".join(result["failing"]),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
