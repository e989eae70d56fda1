"""The answer-diagnostic tables' tests and intervals (``position_bias``, ``letter_bias``,
``invalid_rates``) and the released code's base-preference screen, on structured planted answers.

Each replicate is one "model" whose face-level answer sums are planted and handed to the
project's own :func:`stylisticbias.analysis.diagnostics.bias_tables` (all replicates of one
setting in one call) and the released code's screen
:func:`stylisticbias.analysis.official_analyses.preference.base_preference`.
Structure of the plant (logit scale):

* every face has an **unequal number of photos** (``2 + Poisson(6)``) and every photo an unequal
  number of answers per ordering (log-normal, median 40, sd 0.8 on the log scale), split over the
  protocol's four balanced orderings (first-written option x letter (a));
* the pole preference of each photo ``eta_i ~ N(0, 1)``; the position tendency
  ``t_i = b_pos + u_f + e_i`` and the letter tendency ``l_i = b_let + v_f + w_i`` with
  **per-face** (sd 0.3) and **per-photo** (sd 0.2) random effects; an answer picks the positive
  pole with probability ``expit(eta_i + t_i * [positive written first] + l_i * [positive is (a)])``
  (signs +-1);
* ``skewed``: the face effects of the position tendency are a centred skewed mixture (90 % of
  faces +0.1, 10 % -0.9): the mean tendency is 0 but the median face is biased;
* invalid answers: per face x scenario rate ``expit(logit(0.02) + c_s + z_f + g_fs)`` with fixed
  scenario effects ``c_s ~ N(0, 0.5^2)``, **per-face** ``z_f ~ N(0, 1)``, face x scenario
  ``g_fs ~ N(0, 0.5^2)``, unequal answers per face (log-normal face multiplier, sd 0.6); one
  setting with a moderate per-face sd 0.5, two with **rare** invalid answers (``logit(0.005)``:
  true rates 0.35-2.8 % per scenario, 1.0 % pooled; a quarter of the face x scenario cells
  without an invalid answer).

``null``: ``b_pos = b_let = 0`` (the true pooled share is 0.5 by symmetry). ``effect``: ``b_pos =
b_let = 0.1`` (power; the true pooled shares are computed from a large population draw).
Interval coverage: the share's interval at the true pooled share; the invalid rates' intervals
at the population rate of each scenario and of all scenarios pooled (by a large Monte-Carlo
draw of the same design): the expected invalid rate of a new face of the population, which the
answer-pooled rate estimates because a face's answer count does not depend on its rate.

``python -m stylisticbias_dev.bench.stylisticbias_answer_tables --replicates 800`` merges the
result into ``reports/bench/calibration.json`` under
``protocols.stylisticbias.valid_inference.answer_tables`` (other keys kept).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from stylisticbias.analysis.diagnostics import ResponseSums, bias_tables
from stylisticbias.analysis.official_analyses.preference import SCREEN_Z, base_preference
from stylisticbias.outputs import atomic_write_text
from stylisticbias_dev.bench.machine import machine_info
from stylisticbias_dev.bench.results import VALID_INFERENCE_TARGETS
from stylisticbias_dev.bench.stylisticbias_tables_validity import _rate

log = logging.getLogger(__name__)

SCENARIOS = 25
SD_FACE, SD_PHOTO, SD_POLE = 0.3, 0.2, 1.0
INVALID_BASE, SD_INV_FACE, SD_INV_CELL, SD_INV_SCEN = 0.02, 1.0, 0.5, 0.5
EFFECT = 0.1
CHUNK = 25
#: centres the skewed face effects so that the true pooled position share is 0.5 (bisection on a
#: large population draw; see ``population_truth``)
SKEW_SHIFT = -0.00338


@dataclass(frozen=True)
class Setting:
    """One planted design: faces per replicate, planted tendencies, face-effect shape."""

    name: str
    faces: int
    b: float  # position and letter tendency (logit)
    skewed: bool = False
    inv_face_sd: float = SD_INV_FACE  # per-face sd of the invalid rate (logit)
    inv_base: float = INVALID_BASE  # the invalid rate at zero effects (before the logit effects)


def _face_effects(rng: np.random.Generator, size: tuple[int, ...], skewed: bool) -> np.ndarray:
    if not skewed:
        return rng.normal(0.0, SD_FACE, size)
    big = rng.random(size) < 0.1
    return np.where(big, -0.9, 0.1) + SKEW_SHIFT  # mean ~0, median +0.1


def planted_sums(st: Setting, reps: int, seed: int) -> list[ResponseSums]:
    """``reps`` planted models' face-level sums of one setting."""
    rng = np.random.default_rng(seed)
    out = []
    scen = np.arange(1, SCENARIOS + 1)
    c_s = np.random.default_rng(12345).normal(0.0, SD_INV_SCEN, SCENARIOS)  # fixed design
    for r in range(reps):
        f = st.faces
        n_photo = 2 + rng.poisson(6.0, f)
        face = np.repeat(np.arange(f), n_photo)
        u = _face_effects(rng, (f,), st.skewed)[face]
        v = rng.normal(0.0, SD_FACE, f)[face]
        t = st.b + u + rng.normal(0.0, SD_PHOTO, face.size)
        lt = st.b + v + rng.normal(0.0, SD_PHOTO, face.size)
        eta = rng.normal(0.0, SD_POLE, face.size)
        first = np.zeros(f)
        let_a = np.zeros(f)
        valid = np.zeros(f)
        for pp in (1, -1):  # positive written first / second
            for la in (1, -1):  # positive is (a) / (b)
                n = np.maximum(1, np.rint(rng.lognormal(np.log(40.0), 0.8, face.size))).astype(int)
                k_pos = rng.binomial(n, expit(eta + pp * t + la * lt))
                fst = k_pos if pp == 1 else n - k_pos
                la_ = k_pos if la == 1 else n - k_pos
                first += np.bincount(face, weights=fst, minlength=f)
                let_a += np.bincount(face, weights=la_, minlength=f)
                valid += np.bincount(face, weights=n, minlength=f)
        mult = rng.lognormal(0.0, 0.6, f)
        total = np.maximum(1, rng.poisson(np.outer(mult, np.full(SCENARIOS, 380.0)))).astype(float)
        p = expit(
            logit(st.inv_base)
            + c_s[None, :]
            + rng.normal(0.0, st.inv_face_sd, (f, 1))
            + rng.normal(0.0, SD_INV_CELL, (f, SCENARIOS))
        )
        inv = rng.binomial(total.astype(int), p).astype(float)
        out.append(
            ResponseSums(
                model=f"rep{r}",
                faces=pd.Index([f"f{i}" for i in range(f)]),
                first=first,
                letter_a=let_a,
                valid=valid,
                invalid_fs=inv,
                total_fs=total,
                scenarios=scen,
                n_responses=int(valid.sum() + total.sum()),
            )
        )
    return out


def population_truth(st: Setting, n: int = 2_000_000, seed: int = 7) -> dict[str, Any]:
    """True pooled shares (answer-weighted) and invalid rates of a setting, by a large draw."""
    rng = np.random.default_rng(seed)
    u = _face_effects(rng, (n,), st.skewed) + rng.normal(0.0, SD_PHOTO, n)
    v = rng.normal(0.0, SD_FACE, n) + rng.normal(0.0, SD_PHOTO, n)
    t, lt = st.b + u, st.b + v
    eta = rng.normal(0.0, SD_POLE, n)
    first = let_a = 0.0
    for pp in (1, -1):
        for la in (1, -1):
            p = expit(eta + pp * t + la * lt)
            first += float(np.mean(p if pp == 1 else 1 - p))
            let_a += float(np.mean(p if la == 1 else 1 - p))
    c_s = np.random.default_rng(12345).normal(0.0, SD_INV_SCEN, SCENARIOS)
    z = rng.normal(0.0, st.inv_face_sd, n) + rng.normal(0.0, SD_INV_CELL, n)
    inv = np.array([float(expit(logit(st.inv_base) + c + z).mean()) for c in c_s])
    return {"position": first / 4, "letter": let_a / 4, "invalid": np.r_[inv.mean(), inv]}


def measure(st: Setting, reps: int, n_boot: int, seed: int) -> dict[str, Any]:
    """Run the real tables on one setting's replicates: rejections and coverage."""
    sums = planted_sums(st, reps, seed)
    # the tables draw one bootstrap matrix per call (per seed): a fresh one every CHUNK replicates
    parts = [
        bias_tables(sums[i : i + CHUNK], n_resamples=n_boot, ci=0.95, seed=seed + 1 + i)
        for i in range(0, reps, CHUNK)
    ]
    pos, let, inv = (pd.concat([p[j] for p in parts], ignore_index=True) for j in range(3))
    truth = population_truth(st)
    res: dict[str, Any] = {
        "faces": st.faces,
        "b_logit": st.b,
        "skewed": st.skewed,
        "invalid_face_sd_logit": st.inv_face_sd,
        "invalid_base": st.inv_base,
    }
    for name, df in (("position_bias", pos), ("letter_bias", let)):
        p = df["pval"].to_numpy(float)
        tv = truth["position" if name == "position_bias" else "letter"]
        cov = (df["ci_low"] <= tv) & (tv <= df["ci_high"])
        one = np.ones(len(p))
        res[name] = {
            "true_share": round(tv, 5),
            **{
                f"alpha_{a}": _rate((np.isfinite(p) & (p < a)).astype(float), one)
                for a in (0.05, 0.01)
            },
            "coverage": _rate(cov.to_numpy(float), one),
        }
    ti = pd.Series(truth["invalid"], index=np.r_[0, np.arange(1, SCENARIOS + 1)])
    tv = ti.loc[inv["scenario_id"].to_numpy()].to_numpy()
    cov = ((inv["ci_low"] <= tv) & (tv <= inv["ci_high"])).to_numpy(float)
    rep = inv["model"].to_numpy()
    pooled = inv["scenario_id"].to_numpy() == 0
    per_rep = pd.Series(cov[~pooled]).groupby(rep[~pooled]).agg(["sum", "size"])
    zero_cells = float(np.mean([(s.invalid_fs == 0).mean() for s in sums]))
    res["invalid_rates"] = {
        "true_rate_all_scenarios": round(float(ti.iloc[0]), 5),
        "true_rate_scenario_range": [
            round(float(ti.iloc[1:].min()), 5),
            round(float(ti.iloc[1:].max()), 5),
        ],
        "face_scenario_cells_without_invalid": round(zero_cells, 3),
        "median_relative_width_per_scenario": round(
            float(np.median(((inv["ci_high"] - inv["ci_low"]).to_numpy() / tv)[~pooled])), 3
        ),
        "coverage_per_scenario": _rate(
            per_rep["sum"].to_numpy(float), per_rep["size"].to_numpy(float)
        ),
        "coverage_all_scenarios": _rate(cov[pooled], np.ones(int(pooled.sum()))),
    }
    return res


def base_preference_null(reps: int, faces: int, seed: int) -> dict[str, Any]:
    """The released screen's z on the base faces' phi under mean phi = 0.5 (per cell)."""
    rng = np.random.default_rng(seed)
    n_rows = reps * SCENARIOS * faces
    # phi = share of 12 answers with a per-face appeal: bounded, discrete, mean 0.5
    phi = rng.binomial(12, expit(rng.normal(0.0, 1.0, n_rows))) / 12.0
    scores = pd.DataFrame(
        {
            "model": np.repeat([f"rep{r:04d}" for r in range(reps)], SCENARIOS * faces),
            "scenario_id": np.tile(np.repeat(np.arange(1, SCENARIOS + 1), faces), reps),
            "is_base": True,
            "phi": phi,
        }
    )
    bp = base_preference(scores)
    z = bp["z"].to_numpy(float)
    one = np.ones(len(z))
    per_rep = bp.groupby("model")["flagged"].agg(["sum", "size"])
    return {
        "faces": faces,
        "z_at_or_above_3.29_nominal_0.001": _rate((z >= SCREEN_Z).astype(float), one),
        "z_at_or_above_1.96_nominal_0.05": _rate((z >= 1.959964).astype(float), one),
        "flagged": _rate(per_rep["sum"].to_numpy(float), per_rep["size"].to_numpy(float)),
    }


def verdicts(settings: dict[str, Any]) -> dict[str, bool]:
    """Per null setting and table: within the targets (rate at 0.05 in [0.03, 0.07] with upper
    Clopper-Pearson bound <= 0.08, at 0.01 <= 0.02, coverage in [0.93, 0.97])."""
    ok: dict[str, bool] = {}
    for k, v in settings.items():
        if not k.startswith("null") or "position_bias" not in v:
            continue
        for t in ("position_bias", "letter_bias"):
            r5, r1, c = v[t]["alpha_0.05"], v[t]["alpha_0.01"], v[t]["coverage"]["rate"]
            ok[f"{k}.{t}"] = bool(
                0.03 <= r5["rate"] <= 0.07
                and r5["ci95"][1] <= 0.08
                and r1["rate"] <= 0.02
                and 0.93 <= c <= 0.97
            )
        for x, y in v["invalid_rates"].items():
            if x.startswith("coverage"):
                ok[f"{k}.invalid_rates.{x}"] = bool(0.93 <= y["rate"] <= 0.97)
    return ok


SETTINGS = (
    Setting("null_40_faces", 40, 0.0),
    Setting("null_100_faces", 100, 0.0),
    Setting("null_15_faces", 15, 0.0),
    Setting("null_40_faces_skewed_face_effects", 40, 0.0, skewed=True),
    Setting("null_40_faces_moderate_invalid_heterogeneity", 40, 0.0, inv_face_sd=0.5),
    Setting("effect_40_faces", 40, EFFECT),
    Setting("null_15_faces_rare_invalid", 15, 0.0, inv_base=0.005),
    Setting("null_40_faces_rare_invalid", 40, 0.0, inv_base=0.005),
)
#: the invalid-rate interval this run measures (see ``diagnostics.clustered_rate_ci``)
INVALID_METHOD = (
    "face-clustered log-scale t interval: lower t on Satterthwaite df nu_S, upper t on the "
    "kurtosis-adjusted df nu_K"
)


def main(argv: list[str] | None = None) -> int:
    """CLI: measure every setting and merge the result into the calibration JSON."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=800)
    ap.add_argument("--bootstrap", type=int, default=999)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("reports/bench/calibration.json"))
    args = ap.parse_args(argv)
    t0, c0 = time.time(), time.process_time()
    settings: dict[str, Any] = {}
    for i, st in enumerate(SETTINGS):
        settings[st.name] = measure(st, args.replicates, args.bootstrap, args.seed + 100 * i)
        log.info("%s: %s", st.name, json.dumps(settings[st.name])[:600])
    settings["base_preference_null_60_faces"] = base_preference_null(
        args.replicates, 60, args.seed + 999
    )
    result = {
        "design": {
            "scenarios": SCENARIOS,
            "photos_per_face": "2 + Poisson(6)",
            "answers_per_photo_ordering": "lognormal(log 40, 0.8)",
            "face_sd_logit": SD_FACE,
            "photo_sd_logit": SD_PHOTO,
            "pole_sd_logit": SD_POLE,
            "invalid": {
                "base": INVALID_BASE,
                "face_sd": SD_INV_FACE,
                "cell_sd": SD_INV_CELL,
                "scenario_sd": SD_INV_SCEN,
                "face_size_multiplier_sdlog": 0.6,
            },
            "effect_logit": EFFECT,
            "replicates_per_setting": args.replicates,
            "bootstrap": args.bootstrap,
        },
        "settings": settings,
        "targets": dict(VALID_INFERENCE_TARGETS),
        "command": "python -m stylisticbias_dev.bench.stylisticbias_answer_tables "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine_info(),
        "date": datetime.now(UTC).date().isoformat(),
        "seconds": round(time.time() - t0, 1),
        "cpu_seconds": round(time.process_time() - c0, 1),
    }
    ok = verdicts(settings)
    result["within_targets"] = ok
    result["failing"] = sorted(k for k, v in ok.items() if not v)
    data = json.loads(args.out.read_text("utf-8")) if args.out.exists() else {}  # read right
    vi = data.setdefault("protocols", {}).setdefault("stylisticbias", {})  # before writing
    vi = vi.setdefault("valid_inference", {})
    prev = vi.get("answer_tables", {})
    if "before_this_change" in prev:  # the former tests' run, kept
        result["before_this_change"] = prev["before_this_change"]
    result["invalid_rates_method"] = INVALID_METHOD
    if "invalid_rates_before_this_change" in prev:  # the former invalid-rate interval's run, kept
        result["invalid_rates_before_this_change"] = prev["invalid_rates_before_this_change"]
    elif prev.get("settings") and "invalid_rates_method" not in prev:
        result["invalid_rates_before_this_change"] = {
            "method": "symmetric face bootstrap-t on the log scale",
            "command": prev.get("command"),
            "date": prev.get("date"),
            "settings": {
                k: v["invalid_rates"] for k, v in prev["settings"].items() if "invalid_rates" in v
            },
        }
    vi["answer_tables"] = result
    atomic_write_text(args.out, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    log.info("answer tables: %.0f s", time.time() - t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
