"""Valid inference of the StylisticBias tests under structured planted data.

Planted design (vectorised, no judge): ``--faces`` base faces per replicate in groups of
**unequal size** (gender 60/40; ethnicity 40/25/20/15 %), each face with a **per-person random
effect** ``u ~ N(0, 0.5^2)`` on the logit scale shared by all its scenarios, 25 scenarios with
their own intercepts, and phi = the share of ``n_answers`` Bernoulli answers (as the judge's 12).
Each variation image of a face adds an **image appeal** ``N(0, 0.3^2)``. Plants:

* ``null``: no group effect, no variation effect;
* ``effect``: a group effect ``delta`` on the logit (per scenario a random sign times ``delta``)
  and a variation effect ``delta`` for every face.

Measured per replicate, every test at alpha 0.05 and 0.01 with Clopper-Pearson intervals:

* ``vs_permutation`` (Table 2's marks: face-label permutation test of VS), per dimension;
* ``demographic_tests`` (Table 11: Kruskal-Wallis / Mann-Whitney per scenario, raw p);
* ``wilcoxon_faces`` (Tables 3-6, 12: face-level signed-rank test of the variation shift);

and the coverage of the 95% intervals: the boundary-aware VS interval (``vs_boundary``) and the
previous signed test-inversion one (``vs_tib``, kept under ``analysis.definitions: official``) at
the true spread (0 under ``null``; the population value under ``effect``, by Gauss-Hermite
quadrature over the person effect).

``--null-test-replicates N`` (> ``--replicates``) adds null replicates of the tests alone (no
bootstrap, so about a fifth of the cost; seeds continue after the main ones): the null
false-positive rates then rest on ``N`` replicates, enough for a Clopper-Pearson upper bound
near the level (0.05 at 1200 replicates: upper bound about 0.063), while power and coverage
keep the main replicates.

``python -m stylisticbias_dev.bench.stylisticbias_validity --replicates 600
--null-test-replicates 2000`` merges the result into ``reports/bench/calibration.json`` under
``protocols.stylisticbias.valid_inference`` (its other keys, e.g. ``tables``, are kept).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit
from statsmodels.stats.proportion import proportion_confint

from stylisticbias.analysis.significance import demographic_tests, wilcoxon_faces
from stylisticbias.analysis.vs import variation_strength
from stylisticbias.outputs import atomic_write_text
from stylisticbias_dev.bench.machine import machine_info
from stylisticbias_dev.bench.results import VALID_INFERENCE_TARGETS

log = logging.getLogger(__name__)

DIMS = {"gender": ("gender", (0.6, 0.4)), "ethnicity": ("ethnicity", (0.4, 0.25, 0.2, 0.15))}
S = 25
SD_PERSON = 0.5
SD_IMAGE = 0.3
ALPHAS = (0.05, 0.01)


def _groups(n: int, shares: tuple[float, ...], rng: np.random.Generator) -> np.ndarray:
    sizes = np.floor(np.asarray(shares) * n).astype(int)
    sizes[0] += n - sizes.sum()
    return rng.permutation(np.repeat(np.arange(len(shares)), sizes))


def _truth_tau(intercept: np.ndarray, eff: np.ndarray, ddof: int) -> float:
    """Population squared spread ``mean_s sum_g (mu_gs - mubar_s)^2 / (K - ddof)``."""
    x, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()
    mu = (expit(intercept[None, :, None] + eff[:, :, None] + SD_PERSON * x) * w).sum(-1)
    k = mu.shape[0]
    return float((((mu - mu.mean(0)) ** 2).sum(0) / (k - ddof)).mean())


def replicate(r: int, faces: int, delta: float, n_answers: int, n_boot: int, n_perm: int):
    """One replicate: the scores frame's tests and intervals against the truth."""
    rng = np.random.default_rng(10_000 + r)
    labels = {d: _groups(faces, sh, rng) for d, (_, sh) in DIMS.items()}
    intercept = rng.normal(0.0, 0.6, S)
    u = rng.normal(0.0, SD_PERSON, faces)
    effs = {}
    logit = intercept[None, :] + u[:, None]
    for d, (_, sh) in DIMS.items():
        e = delta * rng.choice([-1.0, 1.0], size=(len(sh), S))
        e = e - e.mean(0) if delta else np.zeros((len(sh), S))
        effs[d] = e
        logit = logit + e[labels[d]]
    base = rng.binomial(n_answers, expit(logit)) / n_answers
    var_logit = logit + delta + rng.normal(0.0, SD_IMAGE, faces)[:, None]
    var = rng.binomial(n_answers, expit(var_logit)) / n_answers
    f = np.repeat(np.arange(faces), S)
    s = np.tile(np.arange(S), faces)
    frame = pd.DataFrame(
        {
            "model": "m",
            "face_id": [f"F{i:04d}" for i in f],
            "scenario_id": s + 1,
            "is_base": True,
            "phi": base.ravel(),
            **{col: labels[d][f].astype(str) for d, (col, _) in DIMS.items()},
        }
    )
    groups = {d: c for d, (c, _) in DIMS.items()}
    kw = {"ddof": 0, "n_resamples": n_boot, "seed": r, "n_permutations": n_perm}
    vs = variation_strength(frame, groups, **kw)
    old = variation_strength(frame, groups, **kw, boundary=False) if n_boot else vs
    out: dict[str, Any] = {}
    for d in DIMS:
        row = vs[vs["dimension"] == d].iloc[0]
        orow = old[old["dimension"] == d].iloc[0]
        tau = _truth_tau(intercept, effs[d], 0)
        true_vs = float(np.sqrt(tau))
        out[f"vs_permutation.{d}"] = float(row["pval"])
        out[f"vs_boundary.{d}"] = bool(row["debiased_ci_low"] <= true_vs <= row["debiased_ci_high"])
        out[f"vs_tib.{d}"] = bool(orow["debiased_ci_low"] <= true_vs <= orow["debiased_ci_high"])
        out[f"vs_boundary_excludes_0.{d}"] = bool(row["debiased_ci_low"] > 0)
    dt = demographic_tests(frame, {d: c for d, (c, _) in DIMS.items()}, method="none")
    for d in DIMS:
        out[f"demographic_tests.{d}"] = dt.loc[dt["dimension"] == d, "pval"].to_numpy()
    shift = (var - base).mean(axis=1)
    out["wilcoxon_faces"] = float(stats.wilcoxon(shift).pvalue)
    out["wilcoxon_faces_project"] = float(wilcoxon_faces(shift[:, None])[0][0])
    return out


#: ``--only vs_coverage``: every dimension of Table 2, unequal groups (a sub-design of its own).
VS_DIMS = {
    "gender": ("gender", (0.6, 0.4)),
    "age": ("age", (0.5, 0.3, 0.2)),
    "ethnicity": ("ethnicity", (0.4, 0.25, 0.2, 0.15)),
    "body": ("body_type", (0.55, 0.3, 0.15)),
}


def vs_replicate(
    r: int, faces: int, delta: float, n_answers: int, n_boot: int, n_perm: int
) -> dict[str, bool]:
    """One replicate of the VS interval study: base faces only, the four dimensions of
    :data:`VS_DIMS` planted at once (``delta`` on the logit, a random sign per group and
    scenario, centred), the person effect as in :func:`replicate` (seeds ``30_000 + r``).

    Per dimension: whether the default interval (boundary-aware, within-group face bootstrap)
    and the previous one (boundary-aware, ordinary face bootstrap) hold the true spread, and
    whether the default excludes 0.
    """
    rng = np.random.default_rng(30_000 + r)
    labels = {d: _groups(faces, sh, rng) for d, (_, sh) in VS_DIMS.items()}
    intercept = rng.normal(0.0, 0.6, S)
    logit = intercept[None, :] + rng.normal(0.0, SD_PERSON, faces)[:, None]
    effs = {}
    for d, (_, sh) in VS_DIMS.items():
        e = delta * rng.choice([-1.0, 1.0], size=(len(sh), S))
        effs[d] = e - e.mean(0) if delta else np.zeros((len(sh), S))
        logit = logit + effs[d][labels[d]]
    base = rng.binomial(n_answers, expit(logit)) / n_answers
    f = np.repeat(np.arange(faces), S)
    frame = pd.DataFrame(
        {
            "model": "m",
            "face_id": [f"F{i:04d}" for i in f],
            "scenario_id": np.tile(np.arange(S), faces) + 1,
            "is_base": True,
            "phi": base.ravel(),
            **{col: labels[d][f].astype(str) for d, (col, _) in VS_DIMS.items()},
        }
    )
    groups = {d: c for d, (c, _) in VS_DIMS.items()}
    kw = {"ddof": 0, "n_resamples": n_boot, "seed": r, "n_permutations": n_perm}
    new = variation_strength(frame, groups, **kw).set_index("dimension")
    old = variation_strength(frame, groups, **kw, stratified=False).set_index("dimension")
    out: dict[str, bool] = {}
    for d in VS_DIMS:
        truth = float(np.sqrt(_truth_tau(intercept, effs[d], 0)))
        for key, v in (("vs_boundary", new), ("vs_boundary_unstratified", old)):
            out[f"{key}.{d}"] = bool(
                v.at[d, "debiased_ci_low"] <= truth <= v.at[d, "debiased_ci_high"]
            )
        out[f"vs_boundary_excludes_0.{d}"] = bool(new.at[d, "debiased_ci_low"] > 0)
    return out


def vs_coverage_study(
    replicates: int, faces: int, delta: float, n_answers: int, n_boot: int, n_perm: int
) -> dict[str, Any]:
    """Coverage of the VS intervals at a true spread of 0 and at the planted spread, per
    dimension of :data:`VS_DIMS` (Clopper-Pearson intervals), and the default's power to
    exclude 0 at the planted spread."""
    run = (faces, 0.0, n_answers, n_boot, n_perm)
    null = [vs_replicate(r, *run) for r in range(replicates)]
    eff = [vs_replicate(r, faces, delta, *run[2:]) for r in range(replicates)]
    cover = {
        k: {
            "true_spread_0": _rate(sum(x[k] for x in null), len(null)),
            "planted_spread": _rate(sum(x[k] for x in eff), len(eff)),
        }
        for k in null[0]
        if not k.startswith("vs_boundary_excludes_0")
    }
    excl = {
        k: _rate(sum(x[k] for x in eff), len(eff))
        for k in eff[0]
        if k.startswith("vs_boundary_excludes_0")
    }
    return {"coverage": cover, "vs_boundary_excludes_0_power": excl}


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = proportion_confint(k, n, alpha=0.05, method="beta")
    return {"rate": k / n, "k": int(k), "n": int(n), "ci95": [float(lo), float(hi)]}


def summarise(
    null: list[dict], eff: list[dict], null_tests: list[dict] | None = None
) -> dict[str, Any]:
    """Rates with Clopper-Pearson intervals: null false positives, power, coverage.

    ``null_tests``: extra null replicates of the tests alone (their false-positive rates pool
    them with ``null``; coverage keeps ``null``).
    """
    pooled = null + (null_tests or [])
    tests: dict[str, Any] = {}
    keys = [
        k
        for k in null[0]
        if k.startswith(("vs_permutation", "demographic_tests", "wilcoxon_faces"))
    ]
    for k in keys:
        pn = np.concatenate([np.atleast_1d(x[k]) for x in pooled])
        pe = np.concatenate([np.atleast_1d(x[k]) for x in eff])
        pn, pe = pn[np.isfinite(pn)], pe[np.isfinite(pe)]
        tests[k] = {
            f"alpha_{a}": {
                "null_false_positive": _rate(int((pn < a).sum()), pn.size),
                "power": _rate(int((pe < a).sum()), pe.size),
            }
            for a in ALPHAS
        }
    cover: dict[str, Any] = {}
    for k in [k for k in null[0] if k.startswith(("vs_boundary.", "vs_tib."))]:
        cover[k] = {
            "true_spread_0": _rate(sum(x[k] for x in null), len(null)),
            "planted_spread": _rate(sum(x[k] for x in eff), len(eff)),
        }
    excl = {
        k: _rate(sum(x[k] for x in eff), len(eff))
        for k in eff[0]
        if k.startswith("vs_boundary_excludes_0")
    }
    return {"tests": tests, "coverage": cover, "vs_boundary_excludes_0_power": excl}


def _passed(summary: dict[str, Any]) -> bool:
    ok = True
    for k, t in summary["tests"].items():
        if k == "wilcoxon_faces_project":
            continue
        a5 = t["alpha_0.05"]["null_false_positive"]
        a1 = t["alpha_0.01"]["null_false_positive"]
        ok &= a5["ci95"][1] <= 0.08 and a5["rate"] <= 0.07 and a1["rate"] <= 0.02
    for k, c in summary["coverage"].items():
        if k.startswith("vs_boundary."):  # the default interval (not the previous one beside it)
            for v in c.values():
                ok &= 0.93 <= v["rate"] <= 0.97
    return bool(ok)


def main(argv: list[str] | None = None) -> int:
    """Run the calibration and merge it into ``reports/bench/calibration.json``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--faces", type=int, default=80)
    ap.add_argument("--delta", type=float, default=0.25)
    ap.add_argument("--answers", type=int, default=12)
    ap.add_argument("--bootstrap", type=int, default=400)
    ap.add_argument("--permutations", type=int, default=999)
    ap.add_argument(
        "--null-test-replicates",
        type=int,
        default=0,
        help="null replicates of the false-positive rates (tests only beyond --replicates)",
    )
    ap.add_argument("--out", type=Path, default=Path("reports/bench/calibration.json"))
    ap.add_argument(
        "--only",
        choices=["vs_coverage"],
        default=None,
        help="vs_coverage: only the VS intervals' coverage, four dimensions (vs_coverage_study)",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    t0 = time.time()
    if args.only == "vs_coverage":
        return _write_vs_coverage(args, argv, t0)
    run = (args.faces, args.answers, args.bootstrap, args.permutations)
    null = [replicate(r, run[0], 0.0, *run[1:]) for r in range(args.replicates)]
    eff = [replicate(r, run[0], args.delta, *run[1:]) for r in range(args.replicates)]
    extra = [
        replicate(r, run[0], 0.0, run[1], 0, run[3])
        for r in range(args.replicates, args.null_test_replicates)
    ]
    summary = summarise(null, eff, extra)
    result = {
        "design": {
            "faces": args.faces,
            "scenarios": S,
            "answers_per_phi": args.answers,
            "group_shares": {d: list(sh) for d, (_, sh) in DIMS.items()},
            "person_sd_logit": SD_PERSON,
            "image_appeal_sd_logit": SD_IMAGE,
            "planted_delta_logit": args.delta,
            "bootstrap": args.bootstrap,
            "permutations": args.permutations,
            "replicates": args.replicates,
            "null_test_replicates": max(args.replicates, args.null_test_replicates),
        },
        **summary,
        "targets": dict(VALID_INFERENCE_TARGETS),
        "passed": _passed(summary),
        "command": "python -m stylisticbias_dev.bench.stylisticbias_validity "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine_info(),
        "date": datetime.now(UTC).date().isoformat(),
        "seconds": round(time.time() - t0, 1),
    }
    data = json.loads(args.out.read_text("utf-8")) if args.out.exists() else {}
    section = data.setdefault("protocols", {}).setdefault("stylisticbias", {})
    section.setdefault("valid_inference", {}).update(result)  # other benches' keys (tables) kept
    atomic_write_text(args.out, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    log.warning("valid_inference: passed=%s in %.0f s", result["passed"], result["seconds"])
    return 0


def _write_vs_coverage(args: argparse.Namespace, argv: list[str] | None, t0: float) -> int:
    """``--only vs_coverage``: :func:`vs_coverage_study`, merged into ``valid_inference``: its
    ``coverage`` entries of the boundary-aware interval (per dimension, replacing the main run's
    two), the previous interval's beside them, the power to exclude 0, and ``vs_coverage_study``
    (design and provenance); the tests and the ``vs_tib`` (``official``) entries are kept."""
    noisy = logging.getLogger("stylisticbias.analysis")
    level = noisy.level
    noisy.setLevel(logging.ERROR)  # per-replicate warnings, only while the study runs
    try:
        run = (args.faces, args.delta, args.answers, args.bootstrap, args.permutations)
        res = vs_coverage_study(args.replicates, *run)
    finally:
        noisy.setLevel(level)
    meta = {
        "design": {
            "faces": args.faces,
            "scenarios": S,
            "answers_per_phi": args.answers,
            "group_shares": {d: list(sh) for d, (_, sh) in VS_DIMS.items()},
            "person_sd_logit": SD_PERSON,
            "planted_delta_logit": args.delta,
            "bootstrap": args.bootstrap,
            "permutations": args.permutations,
            "replicates": args.replicates,
        },
        "intervals": {
            "vs_boundary": "the default: boundary-aware, within-group face bootstrap",
            "vs_boundary_unstratified": "the previous default: ordinary face bootstrap",
        },
        "note": "vs_boundary.* and vs_boundary_unstratified.* coverage and "
        "vs_boundary_excludes_0_power come from this run (seeds 30_000 + r, all four "
        "dimensions planted at once); tests and vs_tib.* from the main run",
        "command": "python -m stylisticbias_dev.bench.stylisticbias_validity "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine_info(),
        "date": datetime.now(UTC).date().isoformat(),
        "seconds": round(time.time() - t0, 1),
    }
    data = json.loads(args.out.read_text("utf-8")) if args.out.exists() else {}
    section = data.setdefault("protocols", {}).setdefault("stylisticbias", {})
    vi = section.setdefault("valid_inference", {})
    cover = {k: v for k, v in vi.get("coverage", {}).items() if k.startswith("vs_tib.")}
    vi["coverage"] = {**cover, **res["coverage"]}
    vi["vs_boundary_excludes_0_power"] = res["vs_boundary_excludes_0_power"]
    vi["vs_coverage_study"] = meta
    if "tests" in vi:
        vi["passed"] = _passed(vi)
    atomic_write_text(args.out, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    log.warning("vs_coverage: %.0f s", meta["seconds"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
