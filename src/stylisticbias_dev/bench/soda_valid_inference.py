"""Valid inference of the SODA tables under planted designs with the structure real audits have:
``protocols.soda.valid_inference`` of ``reports/bench/calibration.json`` (read, updated and
written at once; every other key kept).

**Design** (:class:`Design`): every object has its own attribute distributions (a Dirichlet
draw per attribute, 3-8 values, most mass on a few), a latent style per image shared by all its
attributes (labels of one image are correlated), unequal images per prompt (a refusal rate per
(object, condition) drawn uniform on ``refuse``; the base prompt ``refuse_base``), invalid
answers per (object, condition) at a rate drawn uniform on ``missing`` (that image then has no
label for that attribute). The soda stage draws every image with its own seed (a hash of the
seed, object, condition and index; the stand-in likewise), so images of one prompt share no
latent draw beyond the prompt itself: the image is the unit, and the prompt (the condition of
one object) is what a test compares. The planted effect: a shifted group (women, elderly,
Black, Latinx) moves ``shift_weight`` of two attributes' mass to one value; a mitigated prompt
moves ``mitigation_back`` of that shift back to base.

**Studies** (each with the project's functions: :func:`~stylisticbias.soda.metrics.
permutation_test`, :func:`~stylisticbias.soda.metrics.cds`, :func:`~stylisticbias.soda.metrics.
vac`, :func:`~stylisticbias.soda.stage.mitigation_table`, and the MLflow headline of
:func:`~stylisticbias.report.soda_tracking.soda_metrics`):

* ``soda_bds``: the BDS permutation p of every (object, group), ``paper`` and ``official``
  definitions; null: no group shift; power: the shifted groups. The interval over tests counts
  only one test per object (the tests of one object share its base images); the rate over all
  tests is beside it.
* ``soda_mitigation``: every row (CDS per dimension and pooled, group VAC); null: the groups are
  shifted but the mitigated prompt draws as the original; power: the mitigation moves the shift
  back.
* ``intervals``: coverage of every headline interval (``bds``, ``bds.<dimension>``, ``cds``,
  ``vac``, ``significant_share``) of the expected value of its estimate over the object
  population (the grand mean over all replicates' objects), on the planted-effect design;
  ``--only-intervals`` measures them alone (no mitigation test) on more replicates, with the
  alternatives beside them (``intervals_alternatives``: ``vac``'s corrected interval for the
  means that keep the Student t, the Student t for ``vac``, Clopper-Pearson over the tests for
  ``significant_share``).

The bench file's numbers (2 shared cores; ~8, ~4, ~6 and ~13 min of one core, the last ~23 min
of wall time)::

    python -m stylisticbias_dev.bench.soda_valid_inference --designs structured \
        --null-objects 1000 --power-objects 250 --replicates 800 --power-replicates 150 \
        --n-perm 499 --n-perm-mitigation 299
    python -m stylisticbias_dev.bench.soda_valid_inference --designs refusal_shift \
        --null-objects 500 --power-objects 150 --replicates 600 --power-replicates 100 \
        --n-perm 499 --n-perm-mitigation 299
    python -m stylisticbias_dev.bench.soda_valid_inference --only-mitigation \
        --designs refusal_shift --replicates 1200 --power-replicates 100 --n-perm-mitigation 299
    python -m stylisticbias_dev.bench.soda_valid_inference --only-intervals --replicates 2500

``--check-power``: the power of the test suite's fast check (:func:`check_power`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from stylisticbias.outputs import atomic_write_text
from stylisticbias.report.soda_tracking import mean_ci, share_ci, skew_mean_ci
from stylisticbias.report.soda_tracking import soda_metrics as headline
from stylisticbias.soda.metrics import (
    DEFAULT_JS,
    RELEASED_JS,
    Labels,
    bds,
    cds,
    permutation_seed,
    permutation_test,
    vac,
)
from stylisticbias.soda.protocol import BASE, Condition, SodaProtocol, load_soda
from stylisticbias.soda.stage import mitigation_table
from stylisticbias.spec.soda import SodaSpec
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)

PROTOCOL = "soda"
KEY = "valid_inference"
MITIGATION = "anti_stereotype"
#: the groups with a planted shift (as ``conf/soda/planted.yaml``)
SHIFTED = ("women", "elderly", "Black", "Latinx")
ALPHAS = (0.05, 0.01)


@dataclass(frozen=True)
class Design:
    """A planted SODA audit (module docstring)."""

    name: str = "structured"
    objects: int = 8
    images_per_prompt: int = 20
    attributes: tuple[tuple[str, int], ...] = (
        ("product_color", 8),
        ("shape", 3),
        ("material", 4),
        ("background_color", 5),
        ("text_presence", 3),
    )
    dirichlet: float = 0.8
    style_share: float = 0.5
    refuse: tuple[float, float] = (0.0, 0.35)
    refuse_base: float = 0.02
    refuse_mitigated: tuple[float, float] | None = None
    missing: tuple[float, float] = (0.0, 0.25)
    shift_weight: float = 0.4
    shifted_attributes: int = 2
    mitigation_back: float = 0.7


#: the main design; ``refusal_shift`` also has mitigated prompts refused less than the originals
DESIGNS = {
    "structured": Design(),
    "refusal_shift": Design(name="refusal_shift", refuse=(0.15, 0.45), refuse_mitigated=(0.0, 0.1)),
}


def draw_object(
    design: Design,
    proto: SodaProtocol,
    rng: np.random.Generator,
    effect: bool,
    mitigation_effect: bool = False,
) -> dict[str, Labels]:
    """condition id -> the labels of one object's images under every prompt condition."""
    comp = {a: rng.dirichlet(np.full(k, design.dirichlet), size=2) for a, k in design.attributes}
    names = [a for a, _ in design.attributes]
    shift: dict[str, dict[str, np.ndarray]] = {}
    for g in SHIFTED:
        picked = rng.choice(len(names), design.shifted_attributes, replace=False)
        shift[g] = {}
        for i in picked:
            k = design.attributes[int(i)][1]
            shift[g][names[int(i)]] = np.eye(k)[rng.integers(k)]
    out: dict[str, Labels] = {}
    for cond in proto.conditions(MITIGATION):
        if cond.dimension == BASE:
            r = design.refuse_base
        elif cond.variant != "original" and design.refuse_mitigated is not None:
            r = rng.uniform(*design.refuse_mitigated)
        else:
            r = rng.uniform(*design.refuse)
        m = rng.uniform(*design.missing)
        n = max(2, int(rng.binomial(design.images_per_prompt, 1 - r)))
        style = rng.random(n) < design.style_share
        labels: dict[str, list[str | None]] = {}
        for a, k in design.attributes:
            p = np.where(style[:, None], comp[a][1], comp[a][0])
            if effect and a in shift.get(cond.group, {}):
                w = design.shift_weight
                if mitigation_effect and cond.variant != "original":
                    w *= 1 - design.mitigation_back
                p = (1 - w) * p + w * shift[cond.group][a]
            v = np.minimum((rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(1), k - 1)
            miss = rng.random(n) < m
            if not miss.all():  # as the stage: an attribute without a label is left out
                labels[a] = [None if miss[i] else f"v{v[i]}" for i in range(n)]
        out[cond.id] = labels
    return out


#: the test suite's fast check (tests/soda/test_soda_valid_inference.py): four objects, three
#: attributes, mitigated prompts refused less than the originals, no mitigation effect
CHECK_DESIGN = Design(
    name="check",
    objects=4,
    attributes=(("product_color", 6), ("shape", 3), ("background_color", 4)),
    refuse=(0.2, 0.5),
    refuse_mitigated=(0.0, 0.05),
    missing=(0.0, 0.1),
)


def check_rates(
    design: Design = CHECK_DESIGN, replicates: int = 30, seed: int = 0, n_perm: int = 99
) -> dict[str, float]:
    """Null rejection rates at alpha 0.05 of the pooled CDS mitigation row (``cds.all``) over
    ``replicates`` planted audits: the default swap-permutation test (``paper``) and the
    paper's paired t-test (``official``)."""
    proto = load_soda("soda")
    rows, _ = mitigation_study(design, proto, replicates, False, seed, False, 0, n_perm)
    cds_all = rows[(rows["metric"] == "cds") & (rows["dimension"] == "all")]
    return {
        d: float((g["pval"] < 0.05).mean()) for d, g in cds_all.groupby("definitions", sort=True)
    }


def check_power(seeds: int = 20, replicates: int = 15) -> dict[str, Any]:
    """How often the fast check, over ``seeds`` other seeds, catches the paired t-test (its
    rate >= 0.3, 6 x alpha) and passes the default (its rate <= 0.2): the test's bounds."""
    caught = passed = 0
    for s in range(1, seeds + 1):
        r = check_rates(seed=1000 + s, replicates=replicates)
        caught += r["official"] >= 0.3
        passed += r["paper"] <= 0.2
    return {"seeds": seeds, "replicates": replicates, "caught": caught, "default_passed": passed}


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = proportion_confint(k, n, alpha=0.05, method="beta") if n else (np.nan, np.nan)
    return {"rate": k / n if n else None, "k": int(k), "n": int(n), "ci95": [float(lo), float(hi)]}


def _rates(p: np.ndarray, first: np.ndarray | None = None) -> dict[str, Any]:
    """Rejection rate at each alpha; ``first``: the tests counted in the interval (independent)."""
    out: dict[str, Any] = {}
    for a in ALPHAS:
        sel = p if first is None else p[first]
        out[f"alpha_{a}"] = _rate(int((sel < a).sum()), len(sel))
        if first is not None:
            out[f"alpha_{a}"]["all_tests"] = _rate(int((p < a).sum()), len(p))
    return out


def audit_spec(n_perm: int, definitions: str) -> SodaSpec:
    """The soda section of a planted audit (``soda.mitigation``: anti_stereotype)."""
    return SodaSpec(
        protocol="soda",
        objects=[],
        images_per_prompt=20,
        discovery_per_condition=1,
        generator="standin",
        planted="conf/soda/planted.yaml",
        annotator="simulated-annotator",
        mitigation=MITIGATION,
        n_perm=n_perm,
        alpha=0.05,
        js_base=2.0,
        js_distance=False,
        definitions=definitions,
        seed=0,
        image_size=64,
    )


def bds_pvalues(
    design: Design, proto: SodaProtocol, objects: int, effect: bool, n_perm: int, seed: int
) -> dict[str, dict[str, np.ndarray]]:
    """definitions -> {"p": p per test, "first": one test per object, "shifted": planted}."""
    rng = np.random.default_rng(seed)
    groups = [Condition(d, g) for d, gs in proto.dimensions.items() for g in gs]
    res: dict[str, dict[str, list[Any]]] = {
        d: {"p": [], "first": [], "shifted": []} for d in ("paper", "official")
    }
    for o in range(objects):
        labels = draw_object(design, proto, rng, effect)
        rot = o % len(groups)
        for i, cond in enumerate(groups):
            shifted = cond.group in SHIFTED
            if effect and not shifted:
                continue
            for d, s in (("paper", DEFAULT_JS), ("official", RELEASED_JS)):
                _, p = permutation_test(
                    labels[BASE],
                    labels[cond.id],
                    n_perm,
                    permutation_seed(seed, str(o), cond.id),
                    s,
                )
                res[d]["p"].append(p)
                res[d]["first"].append(i == rot if not effect else i == rot % 4)
                res[d]["shifted"].append(shifted)
    return {d: {k: np.asarray(v) for k, v in r.items()} for d, r in res.items()}


def audit_tables(
    design: Design,
    proto: SodaProtocol,
    rng: np.random.Generator,
    effect: bool,
    mitigation_effect: bool,
    n_perm: int,
    seed: int,
    variants: tuple[str, ...] = ("original", MITIGATION),
) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, Labels]]]:
    """The soda_bds / soda_cds / soda_vac tables of one planted audit (paper definitions) and
    its labels (object -> condition -> labels); CDS of the prompt ``variants``."""
    bds_rows, cds_rows, vac_rows = [], [], []
    samples: dict[str, dict[str, Labels]] = {}
    for o in range(design.objects):
        obj = f"object{o}"
        labels = samples[obj] = draw_object(design, proto, rng, effect, mitigation_effect)
        for dim, groups in proto.dimensions.items():
            for g in groups:
                cid = Condition(dim, g).id
                if n_perm < 0:  # no BDS wanted
                    continue
                if n_perm:
                    obs, p = permutation_test(
                        labels[BASE], labels[cid], n_perm, permutation_seed(seed, obj, cid)
                    )
                else:
                    obs, p = bds(labels[BASE], labels[cid]), np.nan
                bds_rows.append(
                    {"object": obj, "dimension": dim, "group": g, "bds": obs, "pval": p}
                )
            for variant in variants:
                gs = {g: labels[Condition(dim, g, variant).id] for g in groups}
                cds_rows.append(
                    {
                        "object": obj,
                        "dimension": dim,
                        "variant": variant,
                        "attribute": "all",
                        "cds": cds(gs),
                    }
                )
        for cid, lab in labels.items():
            vac_rows.append({"object": obj, "condition": cid, "vac": vac(lab)})
    return {
        "soda_bds": pd.DataFrame(bds_rows, columns=["object", "dimension", "group", "bds", "pval"]),
        "soda_cds": pd.DataFrame(cds_rows),
        "soda_vac": pd.DataFrame(vac_rows),
    }, samples


def mitigation_study(
    design: Design,
    proto: SodaProtocol,
    replicates: int,
    mitigation_effect: bool,
    seed: int,
    intervals: bool,
    n_perm_share: int,
    n_perm: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(mitigation rows with ``replicate``, headline metrics per replicate)."""
    rng = np.random.default_rng(seed)
    spec = audit_spec(n_perm, "paper")
    rows, heads = [], []
    for r in range(replicates):
        tables, samples = audit_tables(
            design, proto, rng, True, mitigation_effect, n_perm_share if intervals else -1, seed + r
        )
        m = mitigation_table(tables, proto, replace(spec, seed=seed + r), samples)
        official = mitigation_table(tables, proto, spec)
        rows.append(m.assign(replicate=r, definitions="paper"))
        rows.append(official.assign(replicate=r, definitions="official"))
        if intervals:
            tables["soda_mitigation"] = m
            head, _ = headline(tables, {}, 0.05, 0.95)
            heads.append({"replicate": r, **head})
    return pd.concat(rows, ignore_index=True), pd.DataFrame(heads)


def alternatives(tables: dict[str, pd.DataFrame]) -> dict[str, float]:
    """The intervals not adopted, on one audit's tables: ``vac``'s skewness- and
    kurtosis-corrected interval (``<name>.hall``) for the means that keep the Student t, the
    Student t of ``vac`` (``vac.student_t``, the previous default) and Clopper-Pearson over
    the tests of ``significant_share`` (``significant_share.clopper_pearson``, the previous
    default)."""
    out: dict[str, float] = {}
    b = tables["soda_bds"]
    out |= skew_mean_ci("bds.hall", b.groupby("object")["bds"].mean(), 0.95)
    for dim, rows in b.groupby("dimension", sort=True):
        out |= skew_mean_ci(f"bds.{dim}.hall", rows.groupby("object")["bds"].mean(), 0.95)
    c = tables["soda_cds"]
    c = c[(c["attribute"] == "all") & (c["variant"] == "original")]
    out |= skew_mean_ci("cds.hall", c.groupby("object")["cds"].mean(), 0.95)
    out |= mean_ci("vac.student_t", tables["soda_vac"].groupby("object")["vac"].mean(), 0.95)
    tested = b["pval"].notna()
    hits = int((b["pval"] < 0.05).sum())
    out |= share_ci("significant_share.clopper_pearson", hits, int(tested.sum()), 0.95)
    return out


def interval_study(
    design: Design, proto: SodaProtocol, replicates: int, seed: int, n_perm: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(headline metrics per replicate, :func:`alternatives` per replicate) of planted-effect
    audits (as :func:`mitigation_study`'s intervals, without the mitigation table)."""
    rng = np.random.default_rng(seed)
    heads, alts = [], []
    for r in range(replicates):
        tables, _ = audit_tables(design, proto, rng, True, False, n_perm, seed + r, ("original",))
        tables["soda_mitigation"] = pd.DataFrame()
        head, _ = headline(tables, {}, 0.05, 0.95)
        heads.append({"replicate": r, **head})
        alts.append({"replicate": r, **alternatives(tables)})
    return pd.DataFrame(heads), pd.DataFrame(alts)


def coverage(heads: pd.DataFrame) -> dict[str, Any]:
    """Per headline interval: the share of replicates whose interval covers the grand mean."""
    out: dict[str, Any] = {}
    for col in heads.columns:
        if not col.endswith(".ci_low"):
            continue
        name = col.removesuffix(".ci_low")
        truth = float(heads[name].mean())
        ok = (heads[col] <= truth) & (heads[f"{name}.ci_high"] >= truth)
        out[name] = {
            "truth": truth,
            **_rate(int(ok.sum()), len(ok)),
            "mean_width": float((heads[f"{name}.ci_high"] - heads[col]).mean()),
        }
    return out


def _ok_null(r: dict[str, Any]) -> bool:
    """The acceptance of a null rate: [0.03, 0.07] with CP upper <= 0.08 at 0.05, <= 0.02 at
    0.01."""
    a, b = r["alpha_0.05"], r["alpha_0.01"]
    return bool(0.03 <= a["rate"] <= 0.07 and a["ci95"][1] <= 0.08 and b["rate"] <= 0.02)


def acceptance(sec: dict[str, Any]) -> dict[str, bool]:
    """Per default test and interval of a design: whether it meets the targets."""
    out = {"soda_bds": _ok_null(sec["soda_bds"]["paper"]["null"])}
    for key, r in sec["soda_mitigation"]["paper"].items():
        if key != "test":
            out[f"soda_mitigation.{key}"] = _ok_null(r["null"])
    for key, r in sec.get("intervals", {}).items():
        out[f"interval.{key}"] = bool(0.93 <= r["rate"] <= 0.97)
    return out


def only_intervals(
    path: Path, designs: list[str], replicates: int, n_perm: int, command: str
) -> None:
    """Re-measure every headline interval alone on each design (``intervals``, with the
    alternatives in ``intervals_alternatives``; its section's other studies kept)."""
    proto = load_soda("soda")
    done = {}
    for name in designs:
        t0 = time.perf_counter()
        heads, alts = interval_study(DESIGNS[name], proto, replicates, 41, n_perm)
        done[name] = {
            "intervals": coverage(heads),
            "intervals_alternatives": coverage(alts),
            "intervals_run": {
                "command": command,
                "machine": machine_info(),
                "date": datetime.now(UTC).strftime("%Y-%m-%d"),
                "seconds": round(time.perf_counter() - t0, 1),
                "replicates": replicates,
                "n_perm": n_perm,
            },
        }
        log.info("%s intervals: %s", name, done[name]["intervals"])
        log.info("%s alternatives: %s", name, done[name]["intervals_alternatives"])
    doc = json.loads(path.read_text(encoding="utf-8"))  # read, updated, written at once
    tops = doc["protocols"][PROTOCOL][KEY]
    for name, new in done.items():
        tops["designs"][name].pop("intervals_more", None)  # the previous default's vac
        tops["designs"][name].update(new)
        tops["designs"][name]["passed"] = acceptance(tops["designs"][name])
    tops["passed"] = all(all(d.get("passed", {}).values()) for d in tops["designs"].values())
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


def mitigation_section(
    design: Design, proto: SodaProtocol, replicates: int, power_replicates: int, n_perm: int
) -> tuple[dict[str, Any], pd.DataFrame]:
    """``soda_mitigation``'s null rates and power per definitions and row, and the headline
    metrics of the null replicates (when ``intervals``)."""
    m_null, heads = mitigation_study(design, proto, replicates, False, 21, False, 0, n_perm)
    m_pow, _ = mitigation_study(design, proto, power_replicates, True, 22, False, 0, n_perm)
    mit: dict[str, Any] = {}
    keys = ["definitions", "metric", "dimension"]
    for (defs, metric, dim), rows in m_null.groupby(keys, sort=False):
        prow = m_pow[
            (m_pow["definitions"] == defs)
            & (m_pow["metric"] == metric)
            & (m_pow["dimension"] == dim)
        ]
        mit.setdefault(defs, {"test": str(rows["test"].iloc[0])})[f"{metric}.{dim}"] = {
            "null": _rates(rows["pval"].to_numpy()),
            "power": _rates(prow["pval"].to_numpy()),
        }
    return mit, heads


def only_mitigation(
    path: Path,
    designs: list[str],
    replicates: int,
    power_replicates: int,
    n_perm: int,
    command: str,
) -> None:
    """Re-measure ``soda_mitigation`` alone on each design (its section's other studies kept)."""
    proto = load_soda("soda")
    done = {}
    for name in designs:
        t0 = time.perf_counter()
        mit, _ = mitigation_section(DESIGNS[name], proto, replicates, power_replicates, n_perm)
        done[name] = {
            "soda_mitigation": mit,
            "mitigation_run": {
                "command": command,
                "machine": machine_info(),
                "date": datetime.now(UTC).strftime("%Y-%m-%d"),
                "seconds": round(time.perf_counter() - t0, 1),
            },
        }
        log.info("%s mitigation: %s", name, mit)
    doc = json.loads(path.read_text(encoding="utf-8"))
    tops = doc["protocols"][PROTOCOL][KEY]
    for name, new in done.items():
        tops["designs"][name].update(new)
        tops["designs"][name]["passed"] = acceptance(tops["designs"][name])
    tops["passed"] = all(all(d.get("passed", {}).values()) for d in tops["designs"].values())
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


def run(
    designs: list[str],
    null_objects: int,
    power_objects: int,
    replicates: int,
    power_replicates: int,
    n_perm: int,
    n_perm_mitigation: int,
    intervals: bool = True,
) -> dict[str, Any]:
    """Every study on every design (module docstring)."""
    proto = load_soda("soda")
    out: dict[str, Any] = {"designs": {}}
    for name in designs:
        design = DESIGNS[name]
        t0 = time.perf_counter()
        sec: dict[str, Any] = {"design": asdict(design)}
        null = bds_pvalues(design, proto, null_objects, False, n_perm, 11)
        power = bds_pvalues(design, proto, power_objects, True, n_perm, 12)
        sec["soda_bds"] = {
            d: {"null": _rates(null[d]["p"], null[d]["first"]), "power": _rates(power[d]["p"])}
            for d in ("paper", "official")
        }
        log.info("%s soda_bds: %s", name, sec["soda_bds"])
        m_null, heads = mitigation_study(
            design, proto, replicates, False, 21, intervals, 199, n_perm_mitigation
        )
        m_pow, _ = mitigation_study(
            design, proto, power_replicates, True, 22, False, 0, n_perm_mitigation
        )
        mit: dict[str, Any] = {}
        keys = ["definitions", "metric", "dimension"]
        for (defs, metric, dim), rows in m_null.groupby(keys, sort=False):
            prow = m_pow[
                (m_pow["definitions"] == defs)
                & (m_pow["metric"] == metric)
                & (m_pow["dimension"] == dim)
            ]
            mit.setdefault(defs, {"test": str(rows["test"].iloc[0])})[f"{metric}.{dim}"] = {
                "null": _rates(rows["pval"].to_numpy()),
                "power": _rates(prow["pval"].to_numpy()),
            }
        sec["soda_mitigation"] = mit
        if intervals:
            sec["intervals"] = coverage(heads)
        sec["passed"] = acceptance(sec)
        sec["seconds"] = round(time.perf_counter() - t0, 1)
        log.info("%s mitigation: %s", name, mit)
        log.info("%s intervals: %s", name, sec.get("intervals"))
        out["designs"][name] = sec
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: measure and merge into reports/bench/calibration.json."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.soda_valid_inference")
    ap.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=list(DESIGNS))
    ap.add_argument("--null-objects", type=int, default=1000)
    ap.add_argument("--power-objects", type=int, default=250)
    ap.add_argument("--replicates", type=int, default=1000, help="null audits (mitigation)")
    ap.add_argument("--power-replicates", type=int, default=200, help="audits (mitigation)")
    ap.add_argument("--n-perm", type=int, default=999, help="BDS permutation test")
    ap.add_argument("--n-perm-mitigation", type=int, default=499)
    ap.add_argument("--out", default="reports/bench/calibration.json")
    ap.add_argument("--dry-run", action="store_true", help="measure, do not write")
    ap.add_argument("--check-power", action="store_true", help="only the fast check's power")
    ap.add_argument(
        "--only-intervals",
        action="store_true",
        help="only: re-measure the headline intervals (--replicates audits, 199 shuffles)",
    )
    ap.add_argument(
        "--only-mitigation", action="store_true", help="only: re-measure soda_mitigation"
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    command = "python -m stylisticbias_dev.bench.soda_valid_inference " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    if args.only_mitigation:
        only_mitigation(
            Path(args.out),
            args.designs,
            args.replicates,
            args.power_replicates,
            args.n_perm_mitigation,
            command,
        )
        return 0
    if args.only_intervals:
        only_intervals(Path(args.out), args.designs, args.replicates, 199, command)
        return 0
    if args.check_power:
        log.info("fast check: %s", check_power())
        return 0
    t0 = time.perf_counter()
    section = run(
        args.designs,
        args.null_objects,
        args.power_objects,
        args.replicates,
        args.power_replicates,
        args.n_perm,
        args.n_perm_mitigation,
    )
    section["command"] = command
    section["machine"] = machine_info()
    section["date"] = datetime.now(UTC).strftime("%Y-%m-%d")
    section["seconds"] = round(time.perf_counter() - t0, 1)
    for sec in section["designs"].values():
        sec.update({k: section[k] for k in ("command", "machine", "date")})
    if not args.dry_run:
        merge(Path(args.out), section["designs"])
        log.info("wrote protocols.%s.%s of %s", PROTOCOL, KEY, args.out)
    return 0


def merge(path: Path, designs: dict[str, Any]) -> None:
    """Set ``protocols.soda.valid_inference.designs.<name>`` of the bench file for each design
    run (the others, and every other key of the file, kept): read, updated, written at once."""
    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    sec = doc.setdefault("protocols", {}).setdefault(PROTOCOL, {}).setdefault(KEY, {})
    sec.setdefault("designs", {}).update(designs)
    sec["about"] = __doc__.split("\n\n")[0].replace("\n", " ")
    sec["targets"] = {
        "null_0.05": "[0.03, 0.07], CP upper <= 0.08",
        "null_0.01": "<= 0.02",
        "coverage": "[0.93, 0.97]",
    }
    sec["passed"] = all(all(d.get("passed", {}).values()) for d in sec["designs"].values())
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
