"""Valid inference of a paired-variation protocol: false-positive rates, power and coverage of
every test and interval of the family's tables, on planted designs with the structure real data
has. Written into ``reports/bench/calibration.json`` under
``protocols.beauty-and-the-bias.valid_inference`` (read-modify-write: other keys are kept).

**Designs** (:class:`Design`). Each replicate draws ``n_persons`` people with unequal group sizes
(every demographic column drawn independently from unequal shares), and per person, scenario
and image the answer probability on the logit scale

    eta = mu_s + lam_s * A_p + B_ps + C_pvs + v * delta_s * (1 + x [p in the extra group])
          + beta_s * [p in the planted group]

with ``A_p`` the person's appeal (one value per person, loading ``lam_s``: 1 on the halo
scenarios, ``other_loading`` elsewhere: it correlates a person's answers across scenarios),
``B_ps`` the person x scenario effect, ``C_pvs`` the per-photo effect (independent between the
person's two images), ``delta_s`` the planted edit effect and ``beta_s`` the planted group effect
(the scenario's stereotyped group on its axis, or men elsewhere); ``x`` (``edit_extra``) makes
the edit stronger in one subgroup (W^attr's and Table 4's alternative). phi is the share of
``n_answers`` Bernoulli(expit(eta)) answers. ``mu_s`` and which scenarios are planted are fixed
per design; everything else is drawn per replicate.

**What is measured** per test table (its null cells: the scenarios, or axes, where the test's
null holds by construction): the false-positive rate at alpha 0.05 and 0.01 with Clopper-Pearson
95% intervals, for the default (``analysis.definitions: paper``, one value per person) and the
paper's pooled test (``official``); the power on the planted cells; and the coverage of every
interval the tables report against the population truth (Gauss-Hermite expectation of phi under
the design). The cells of one replicate share people (and, through ``A_p``, are correlated), so
the replicate-level spread is recorded beside the pooled rate.

W^attr (``paired_subgroup_wilcoxon``) and Table 4 (``paired_group_bias_by_kind``): their null
(the edit moves the groups alike: equal mean shift phi(edited) - phi(original) in every
scenario) is decided per cell from the design (:func:`subgroup_truth`: every group's true shift,
Gauss-Hermite over the random effects). Where a group effect is planted together with an edit,
the same logit shift is a slightly different phi shift for that group, so those pairs (axes) are
small true differences, not nulls: they are reported as ``power_non_null`` with their true
difference, and only the exact-null cells enter the false-positive rates. Every pair's (axis's)
raw p-value is a cell, with the family-wise rate after Bonferroni per axis (per model) beside
it. The default halo interval is checked against its estimand, the true share theta of
halo-tagged scenarios with a positive mean shift (those with a planted edit), where theta < 1
(at theta = 1 it holds theta by construction: reported apart); the paper's bootstrap interval of
its rate against the rate's expectation at the design's size.

``--only subgroups`` recomputes just these three tables on every design (and the designs of
:data:`SUBGROUP_DESIGNS`) and merges them into the section already in the file. ``--only
rechecks`` measures the default cells of :data:`RECHECKS` (cells a run left beyond a target)
again with several times the replicates, replaces those cells (the paper's variant kept) and
records the run, with each cell's earlier value, under ``valid_inference.rechecks``.
``--only by_kind`` (``--designs`` to pick some) measures Table 4's default variant again on
every design, replaces that cell (the paper's variant kept), adds a design of
:data:`SUBGROUP_DESIGNS` the file lacks with all three tables, and records each design's run
under ``valid_inference.by_kind_run`` (:func:`merge_by_kind`).

``python -m stylisticbias_dev.bench.paired_valid_inference --replicates 200``
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import expit
from statsmodels.stats.proportion import proportion_confint

from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.families.paired_variation.analysis.counts import (
    DERIVED_DECIMALS,
    Bootstrap,
    PairedData,
    axis_groups,
)
from stylisticbias.families.paired_variation.analysis.groups import (
    GROUP_TEST,
    group_tests,
    stereotype_groups,
)
from stylisticbias.families.paired_variation.analysis.subgroups import (
    BY_KIND_TEST,
    SUBGROUP_TEST,
    by_kind_permutation,
    group_bias_by_kind,
    subgroup_variation_bias,
)
from stylisticbias.families.paired_variation.analysis.variation import (
    HALO_INTERVAL,
    VARIATION_TEST,
    halo_rate,
    variation_bias,
)
from stylisticbias.outputs import atomic_write_text
from stylisticbias_dev.bench.machine import machine_info
from stylisticbias_dev.bench.summed_kruskal import midranks, sum_kruskal

log = logging.getLogger(__name__)

PROTOCOL = "beauty-and-the-bias"
ALPHAS = (0.05, 0.01)
#: Unequal shares of each demographic column's groups (protocol order), as in face sets such as
#: the Chicago Face Database (few Indian and mixed-race faces, more men than women).
UNEQUAL_SHARES: dict[str, tuple[float, ...]] = {
    "gender": (0.6, 0.4),
    "age": (0.5, 0.3, 0.2),
    "ethnicity": (0.12, 0.3, 0.06, 0.14, 0.06, 0.32),
}


@dataclass(frozen=True)
class Design:
    """One planted Beauty design (module docstring); effects on the logit scale."""

    name: str
    n_persons: int = 108
    person_sd: float = 0.8
    other_loading: float = 0.5
    person_scenario_sd: float = 0.8
    photo_sd: float = 0.3
    edit_effect: float = 0.0
    edit_share: float = 0.0
    group_effect: float = 0.0
    group_share: float = 0.0
    edit_extra: float = 0.0
    extra_group: tuple[str, str] = ("gender", "female")
    scenario_sd: float = 0.7
    n_answers: int = 12
    shares: dict[str, tuple[float, ...]] = field(default_factory=lambda: dict(UNEQUAL_SHARES))
    seed: int = 0


#: The designs of the benchmark: a null design, and planted designs at two sizes.
DESIGNS: tuple[Design, ...] = (
    Design("null_strong_person", edit_effect=0.0, group_effect=0.0, seed=1),
    Design(
        "planted_strong_person",
        edit_effect=0.5,
        edit_share=0.5,
        group_effect=0.6,
        group_share=0.4,
        seed=2,
    ),
    Design(
        "planted_weak_person_300",
        n_persons=300,
        person_sd=0.4,
        person_scenario_sd=0.4,
        photo_sd=0.5,
        edit_effect=0.3,
        edit_share=0.5,
        group_effect=0.35,
        group_share=0.4,
        seed=3,
    ),
)


#: Designs for W^attr, Table 4 and the halo interval only (their truth of the other tables is
#: not computed): the exact phi-scale null with an edit effect in every scenario (where the
#: paper's W^attr over-rejects most), and the edit 1.2 times as strong for women (power).
SUBGROUP_DESIGNS: tuple[Design, ...] = (
    Design("subgroup_null_edit_everywhere", edit_effect=0.5, edit_share=1.0, seed=4),
    Design("subgroup_planted_female_x1.2", edit_effect=0.5, edit_share=0.5, edit_extra=0.2, seed=5),
    Design(
        "subgroup_planted_female_x1.2_300",
        n_persons=300,
        person_sd=0.4,
        person_scenario_sd=0.4,
        photo_sd=0.5,
        edit_effect=0.3,
        edit_share=0.5,
        edit_extra=0.2,
        seed=6,
    ),
    # Table 4's heteroscedastic null: a group effect (+2 logits, half the scenarios) and no
    # edit, so a person's two images are alike and every group's mean shift is 0, but the
    # planted group's differences spread less (answers near the bound): a test that pools the
    # groups' spreads (the summed Kruskal-Wallis H) over-rejects.
    Design("subgroup_null_group_main_effect", group_effect=2.0, group_share=0.5, seed=11),
)

#: The design of the fast W^attr check (``tests/families/paired_variation/
#: test_paired_valid_inference.py``): the edit moves every person alike, subgroups unequal.
CHECK_SUBGROUP_DESIGN = Design("check_subgroup_null", edit_effect=0.5, edit_share=1.0, seed=8)

#: The design of the suite's fast check (``tests/families/paired_variation/
#: test_paired_valid_inference.py``): a null design where pooling over-rejects several times.
CHECK_DESIGN = Design(
    "check_null_pooling", n_persons=60, person_sd=1.0, person_scenario_sd=1.0, photo_sd=0.2, seed=7
)


#: The design of the fast Table 4 check (``tests/families/paired_variation/
#: test_paired_valid_inference.py``): a strong group effect (+3 logits on every scenario of the
#: axis) and no edit, so every group's mean shift is 0 but the groups' differences spread
#: unequally; 80 people, 60/40 gender.
CHECK_BY_KIND_DESIGN = Design(
    "check_by_kind_group_main_effect", n_persons=80, group_effect=3.0, group_share=1.0, seed=12
)


@dataclass(frozen=True)
class Plan:
    """What a design fixes for every replicate: scenario baselines, loadings, planted effects."""

    mu: np.ndarray  # (S,)
    loading: np.ndarray  # (S,)
    delta: np.ndarray  # (S,) edit effect
    beta: np.ndarray  # (S,) group effect
    group_axis: tuple[str, ...]  # (S,) the column of the planted group
    group_name: tuple[str, ...]  # (S,) the planted group


def plan(design: Design, benchmark: Benchmark) -> Plan:
    """The fixed part of a design (seeded by ``design.seed``)."""
    rng = np.random.default_rng(10_000 + design.seed)
    scen = benchmark.scenarios
    halo = np.array([benchmark.statistics.halo_tag in s.tags for s in scen])
    mu = rng.normal(0.0, design.scenario_sd, len(scen))
    loading = np.where(halo, 1.0, design.other_loading)
    edited = rng.random(len(scen)) < design.edit_share
    grouped = rng.random(len(scen)) < design.group_share
    axes, names = [], []
    for s in scen:
        st = s.stereotype
        axes.append(st.axis if st is not None else "gender")
        names.append(st.positive if st is not None else "male")
    return Plan(
        mu=mu,
        loading=loading,
        delta=np.where(edited, design.edit_effect, 0.0),
        beta=np.where(grouped, design.group_effect, 0.0),
        group_axis=tuple(axes),
        group_name=tuple(names),
    )


def draw(design: Design, benchmark: Benchmark, p: Plan, replicate: int) -> PairedData:
    """One replicate's data as the family's :class:`PairedData` (what ``paired_data`` builds
    from the scores of one model)."""
    rng = np.random.default_rng([design.seed, replicate])
    n, s_n = design.n_persons, len(benchmark.scenarios)
    labels = {
        col: np.array(benchmark.demographics[col])[
            rng.choice(len(shares), size=n, p=np.asarray(shares) / np.sum(shares))
        ]
        for col, shares in design.shares.items()
    }
    member = np.stack(
        [labels[a] == g for a, g in zip(p.group_axis, p.group_name, strict=True)], axis=1
    )  # (P, S)
    a = rng.normal(0.0, design.person_sd, (n, 1)) * p.loading
    b = rng.normal(0.0, design.person_scenario_sd, (n, s_n))
    c = rng.normal(0.0, design.photo_sd, (n, s_n, 2))
    extra = 1.0 + design.edit_extra * (labels[design.extra_group[0]] == design.extra_group[1])
    edit = (extra[:, None] * p.delta)[..., None] * [0.0, 1.0]  # (P, S, 2)
    eta = (p.mu + a + b + p.beta * member)[..., None] + c + edit
    k = rng.binomial(design.n_answers, expit(eta))  # (P, S, 2)
    present, k_ix = np.unique(k, return_inverse=True)
    counts = np.zeros((n, s_n, 2, len(present)))
    np.put_along_axis(counts, k_ix.reshape(k.shape)[..., None], 1.0, axis=-1)
    faces = tuple(f"p{i:04d}" for i in range(n))
    scen = tuple(s.id for s in benchmark.scenarios)
    return PairedData(faces, scen, present / design.n_answers, counts, labels)


def _expit_mean(mu: np.ndarray, sd: np.ndarray, nodes: int = 80) -> np.ndarray:
    """E[expit(mu + sd Z)], Z standard normal (Gauss-Hermite)."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    return (expit(mu[..., None] + sd[..., None] * x) * w).sum(axis=-1) / w.sum()


def truth(design: Design, benchmark: Benchmark, p: Plan) -> dict[str, Any]:
    """Population means of phi: per scenario and kind, and per scenario, axis and group."""
    sd = np.sqrt(
        (p.loading * design.person_sd) ** 2 + design.person_scenario_sd**2 + design.photo_sd**2
    )
    shares = {c: np.asarray(v) / np.sum(v) for c, v in design.shares.items()}
    groups = {c: list(benchmark.demographics[c]) for c in shares}
    # share of the population in each scenario's planted group
    q = np.array(
        [shares[a][groups[a].index(g)] for a, g in zip(p.group_axis, p.group_name, strict=True)]
    )
    m_in = np.stack([_expit_mean(p.mu + p.beta + v * p.delta, sd) for v in (0, 1)], axis=-1)
    m_out = np.stack([_expit_mean(p.mu + v * p.delta, sd) for v in (0, 1)], axis=-1)
    kind = q[:, None] * m_in + (1 - q[:, None]) * m_out  # (S, 2)
    by_group: dict[str, np.ndarray] = {}
    for col, gs in groups.items():
        out = np.empty((len(p.mu), len(gs)))
        for g, name in enumerate(gs):
            share_in = np.array(
                [
                    (name == gn) if ax == col else qs
                    for ax, gn, qs in zip(p.group_axis, p.group_name, q, strict=True)
                ],
                dtype=float,
            )
            both = share_in[:, None] * m_in + (1 - share_in[:, None]) * m_out
            out[:, g] = both.mean(axis=1)  # both kinds, one image each per person
        by_group[col] = out
    return {"kind": kind, "by_group": by_group}


def group_shifts(design: Design, benchmark: Benchmark, p: Plan) -> dict[str, np.ndarray]:
    """True mean within-person shift phi(edited) - phi(original) per scenario and group:
    ``{column: (S, G)}`` (groups in protocol order), exact under the design (Gauss-Hermite over
    the person, person x scenario and photo effects; the demographic columns are independent, so
    each group is a known mixture of the cells of the other columns)."""
    sd = np.sqrt(
        (p.loading * design.person_sd) ** 2 + design.person_scenario_sd**2 + design.photo_sd**2
    )
    cols = list(design.shares)
    shares = [np.asarray(design.shares[c]) / np.sum(design.shares[c]) for c in cols]
    names = [list(benchmark.demographics[c]) for c in cols]
    cells = list(itertools.product(*[range(len(n)) for n in names]))
    weight = np.array([np.prod([sh[i] for sh, i in zip(shares, c, strict=True)]) for c in cells])
    shift = np.empty((len(cells), len(p.mu)))
    ex_col, ex_name = design.extra_group
    for k, c in enumerate(cells):
        lab = {col: names[j][c[j]] for j, col in enumerate(cols)}
        member = np.array(
            [lab[a] == g for a, g in zip(p.group_axis, p.group_name, strict=True)], dtype=float
        )
        extra = 1.0 + design.edit_extra * (lab.get(ex_col) == ex_name)
        base = p.mu + p.beta * member
        shift[k] = _expit_mean(base + extra * p.delta, sd) - _expit_mean(base, sd)
    out: dict[str, np.ndarray] = {}
    for j, col in enumerate(cols):
        idx = np.array([c[j] for c in cells])
        out[col] = np.stack(
            [
                (weight[idx == g, None] * shift[idx == g]).sum(axis=0) / weight[idx == g].sum()
                for g in range(len(names[j]))
            ],
            axis=1,
        )
    return out


#: Two groups' true shifts closer than this in every scenario count as equal (an exact null).
NULL_TOLERANCE = 1e-9


def _rate(sig: np.ndarray) -> dict[str, Any]:
    k, n = int(np.sum(sig)), int(np.size(sig))
    if n == 0:
        return {"rate": None, "n": 0}
    lo, hi = proportion_confint(k, n, alpha=0.05, method="beta")
    return {"rate": round(k / n, 5), "k": k, "n": n, "cp95": [round(lo, 5), round(hi, 5)]}


def _rates(p: np.ndarray, rep: np.ndarray) -> dict[str, Any]:
    """FPR (or power) at each alpha with its CP interval and the replicate-level SD."""
    p = np.nan_to_num(np.asarray(p, dtype=float), nan=1.0)
    out: dict[str, Any] = {}
    for a in ALPHAS:
        sig = p < a
        r = _rate(sig)
        per = [sig[rep == i].mean() for i in np.unique(rep)] if len(sig) else []
        r["replicate_sd"] = round(float(np.std(per, ddof=1)), 5) if len(per) > 1 else None
        out[f"alpha_{a:g}"] = r
    return out


def _coverage(covered: list[np.ndarray]) -> dict[str, Any]:
    c = np.concatenate([np.ravel(x) for x in covered]) if covered else np.array([])
    c = c[~np.isnan(c)]
    r = _rate(c.astype(bool))
    return {"coverage": r["rate"], "k": r.get("k"), "n": r["n"], "cp95": r.get("cp95")}


#: The two variants of every table: the default (one value per person) and the paper's tests.
VARIANTS = (("person (default)", False), ("pooled_images (paper)", True))


def _covers(lo: np.ndarray, hi: np.ndarray, true: np.ndarray) -> np.ndarray:
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    return np.where(np.isnan(lo) | np.isnan(hi), np.nan, (lo <= true) & (true <= hi)).ravel()


def subgroup_truth(design: Design, benchmark: Benchmark, p: Plan) -> dict[str, dict[Any, float]]:
    """The true effect behind every W^attr pair and Table 4 axis (from :func:`group_shifts`):
    ``pair[(axis, a, b)]`` = mean over scenarios of o_s (shift_a - shift_b), o_s the sign of the
    population shift (what the default test's ``effect_a - effect_b`` estimates), and
    ``axis[axis]`` = the largest deviation of a group's shift from the axis's mean shift in
    any scenario (how far the groups' gaps change with the edit); ``pair_null``/``axis_null``
    say where the test's null holds exactly (every group's shift equal in every scenario)."""
    spec = benchmark.statistics
    shifts = group_shifts(design, benchmark, p)
    shares = {c: np.asarray(v) / np.sum(v) for c, v in design.shares.items()}
    pop = next(iter(shifts.values())) @ next(iter(shares.values()))  # (S,) population shift
    o = np.sign(np.where(np.abs(pop) < NULL_TOLERANCE, 0.0, pop))
    out: dict[str, dict[Any, float]] = {"pair": {}, "pair_null": {}, "axis": {}, "axis_null": {}}
    for axis in spec.group_tests:
        col = spec.column(axis)
        g = shifts[col]
        names = list(benchmark.demographics[col])
        for i, j in itertools.combinations(range(len(names)), 2):
            key = (axis, names[i], names[j])
            out["pair"][key] = float((o * (g[:, i] - g[:, j])).mean())
            out["pair_null"][key] = bool(np.abs(g[:, i] - g[:, j]).max() < NULL_TOLERANCE)
        dev = float(np.abs(g - g.mean(axis=1, keepdims=True)).max())
        out["axis"][axis] = dev
        out["axis_null"][axis] = dev < NULL_TOLERANCE
    return out


def _subgroup_cells(
    data: PairedData,
    benchmark: Benchmark,
    sub: dict[str, dict[Any, float]],
    boot: Bootstrap,
    paper: bool,
    add: Any,
    tables: tuple[str, ...] = (),
) -> None:
    """W^attr, Table 4 and the halo rate of one replicate and variant (``tables``: only those
    of :data:`SUBGROUP_TABLES`; empty = all); a cell is a true null where
    :func:`subgroup_truth` says so (``*_null``), else its true effect is ``*_true``."""
    spec = benchmark.statistics
    tables = tables or SUBGROUP_TABLES
    if spec.halo_tag and "paired_halo" in tables:
        h = halo_rate(data, benchmark, spec, boot, paper)
        add("halo", np.array([[h["halo_rate"], h["halo_rate_low"], h["halo_rate_high"]]]))
    if "paired_subgroup_wilcoxon" in tables:
        w = subgroup_variation_bias(data, benchmark, spec, paper_tests=paper)[1]
        keys = list(zip(w["axis"], w["group_a"], w["group_b"], strict=True))
        add("w_p", w["pval"].to_numpy())
        add("w_pb", w["pval_bonferroni"].to_numpy())
        add("w_axis", w["axis"].to_numpy())
        add("w_null", np.array([sub["pair_null"][k] for k in keys], dtype=bool))
        add("w_true", np.array([sub["pair"][k] for k in keys]))
    if "paired_group_bias_by_kind" not in tables:
        return
    k = group_bias_by_kind(data, benchmark, spec, paper_tests=paper, boot=boot)
    add("k_p", k["pval"].to_numpy())
    add("k_pb", k["pval_bonferroni"].to_numpy())
    add("k_axis", k["axis"].to_numpy())
    add("k_null", np.array([sub["axis_null"][ax] for ax in k["axis"]], dtype=bool))
    add("k_true", np.array([sub["axis"][ax] for ax in k["axis"]]))


def _replicate(
    data: PairedData,
    benchmark: Benchmark,
    pl: Plan,
    tr: dict[str, Any],
    boot: Bootstrap,
    paper: bool,
    add: Any,
) -> None:
    """One replicate's p-values, null flags and interval coverage of one variant (the tables
    but W^attr, Table 4 and the halo rate: :func:`_subgroup_cells`)."""
    spec = benchmark.statistics
    pos = {s.id: i for i, s in enumerate(benchmark.scenarios)}
    bias = variation_bias(data, benchmark, spec, boot, paper)
    kt = tr["kind"]
    add("var_p", bias["pval"].to_numpy())
    add("var_null", pl.delta == 0)
    add("cov_mean_base", _covers(bias["mean_base_low"], bias["mean_base_high"], kt[:, 0]))
    add(
        "cov_mean_variation",
        _covers(bias["mean_variation_low"], bias["mean_variation_high"], kt[:, 1]),
    )
    add("cov_shift", _covers(bias["shift_low"], bias["shift_high"], kt[:, 1] - kt[:, 0]))
    tests, means = group_tests(data, benchmark, spec, boot, paper)
    add("grp_p", tests["pval"].to_numpy())
    add("grp_axis", tests["axis"].to_numpy())
    add(
        "grp_null",
        np.array(
            [
                pl.beta[pos[int(sid)]] == 0 or pl.group_axis[pos[int(sid)]] != spec.column(ax)
                for sid, ax in zip(tests["scenario_id"], tests["axis"], strict=True)
            ]
        ),
    )
    for axis in spec.group_tests:
        col = spec.column(axis)
        groups = axis_groups(data, benchmark, col)
        gi = [list(benchmark.demographics[col]).index(g) for g in groups]
        t = tr["by_group"][col][:, gi]  # (S, G)
        m = means[means["axis"] == axis]
        cov = _covers(
            m["mean_low"].to_numpy().reshape(t.shape), m["mean_high"].to_numpy().reshape(t.shape), t
        )
        add("cov_group_mean", cov)
        add(f"cov_group_mean_{axis}", cov)
    st = stereotype_groups(data, benchmark, spec, paper)
    add("st_p", st["pval"].to_numpy())
    add("st_null", pl.beta[[pos[int(s)] for s in st["scenario_id"]]] == 0)


def _family_wise(pb: np.ndarray, null: np.ndarray, axis: np.ndarray, rep: np.ndarray) -> dict:
    """Per Bonferroni family (replicate x ``axis`` label) with a true-null cell: whether any of
    its true-null cells is significant after Bonferroni, at each alpha (CP intervals)."""
    pb = np.nan_to_num(np.asarray(pb, dtype=float), nan=1.0)
    out: dict[str, Any] = {}
    keys = sorted({(int(r), str(a)) for r, a, n in zip(rep, axis, null, strict=True) if n})
    for a in ALPHAS:
        hit = [bool(((pb < a) & null & (rep == r) & (axis == ax)).any()) for r, ax in keys]
        out[f"alpha_{a:g}"] = _rate(np.array(hit, dtype=bool))
    return out


#: What the default halo interval estimates (``paired_halo`` of the bench).
HALO_ESTIMAND = (
    "theta: the share of the halo-tagged scenarios whose true mean shift phi(edited) - "
    "phi(original) is positive (here: those with a planted edit; the others' shift is exactly 0)"
)
#: What the paper's halo interval (face bootstrap of the rate) estimates.
PAPER_HALO_ESTIMAND = (
    "the expectation of the paper's halo rate (significant and positive scenarios) at this "
    "number of people: the mean of the rate over the replicates"
)


def _halo_section(h: np.ndarray, theta: float, paper: bool) -> dict[str, Any]:
    """Coverage of one variant's halo interval against its own estimand (``h``: ``(R, 3)``
    rate, low, high per replicate). The default's estimand is theta; where theta is 1 its upper
    bound is 1 by construction (no scenario is found negative) and the lower bound cannot
    exceed 1, so the interval holds theta always: that boundary is reported apart, not as a
    coverage. The paper's interval is a bootstrap of its rate, whose estimand is the rate's
    expectation at this size; it is held against theta only to show it is not an interval for
    it."""
    expected = float(h[:, 0].mean())
    out: dict[str, Any] = {
        "interval": HALO_INTERVAL[paper],
        "estimand": PAPER_HALO_ESTIMAND if paper else HALO_ESTIMAND,
        "true_positive_share": round(theta, 5),
        "expected_halo_rate": round(expected, 5),
        "mean_low": round(float(h[:, 1].mean()), 5),
        "mean_high": round(float(h[:, 2].mean()), 5),
    }
    if paper:
        own = _coverage([_covers(h[:, 1], h[:, 2], expected)])
        out["coverage_of_expected_halo_rate"] = own
        held = _coverage([_covers(h[:, 1], h[:, 2], theta)])
        out["not_its_estimand"] = {
            "share_holding_true_positive_share": held["coverage"],
            "k": held["k"],
            "n": held["n"],
        }
        return out
    cov = _coverage([_covers(h[:, 1], h[:, 2], theta)])
    if theta >= 1.0:
        out["boundary_theta_1"] = {
            "share_holding_theta": cov["coverage"],
            "k": cov["k"],
            "n": cov["n"],
            "why": "theta = 1: the upper bound is 1 unless a scenario is found negative "
            "(family-wise 0.005) and the lower bound cannot pass 1, so the interval holds "
            "theta by construction; not a coverage measurement",
        }
    else:
        out["coverage_of_true_positive_share"] = cov
    return out


def _subgroup_tables(
    c: dict[str, np.ndarray],
    halo: list[np.ndarray],
    theta: float,
    paper: bool,
) -> dict[str, Any]:
    """The measured rates of W^attr, Table 4 and the halo interval of one variant (the tables
    whose cells ``c`` and ``halo`` hold)."""
    out: dict[str, Any] = {}
    for key, table, names in (
        ("w", "paired_subgroup_wilcoxon", SUBGROUP_TEST),
        ("k", "paired_group_bias_by_kind", BY_KIND_TEST),
    ):
        if f"{key}_p" not in c:
            continue
        p, null, rep, axis = c[f"{key}_p"], c[f"{key}_null"], c[f"{key}_rep"], c[f"{key}_axis"]
        true = c[f"{key}_true"]
        per_axis = {}
        for ax in np.unique(axis):
            sel = (axis == ax) & null
            if sel.any():
                per_axis[str(ax)] = _rates(p[sel], rep[sel])
        alt: dict[str, Any] | None = None
        if (~null).any():
            alt = {
                "cells": sorted({str(x) for x in axis[~null]}),  # the axes with a non-null cell
                "true_difference_phi": {
                    "mean_abs": round(float(np.abs(true[~null]).mean()), 6),
                    "max_abs": round(float(np.abs(true[~null]).max()), 6),
                },
                "rejection_rate": _rates(p[~null], rep[~null]),
                "rejection_rate_bonferroni": _rates(c[f"{key}_pb"][~null], rep[~null]),
            }
        out[table] = {
            "test": names[paper][0],
            "unit": names[paper][1],
            "null": "cells whose groups' true mean shift is equal in every scenario (exact, "
            "from the design); the others are alternatives (power_non_null, their true "
            "difference on the phi scale beside)",
            "null_false_positive_rate": _rates(p[null], rep[null]) if null.any() else None,
            "null_false_positive_rate_by_axis": per_axis,
            # the Bonferroni family: W^attr the pairs of an axis, Table 4 the axes
            "family_wise_rate_bonferroni": _family_wise(
                c[f"{key}_pb"], null, axis if key == "w" else np.full(len(axis), "all"), rep
            ),
            "power_non_null": alt,
        }
    if halo:
        out["paired_halo"] = _halo_section(np.concatenate(halo), theta, paper)
    return out


#: Tables :func:`_subgroup_cells` measures (``--only subgroups`` replaces just these).
SUBGROUP_TABLES = ("paired_subgroup_wilcoxon", "paired_group_bias_by_kind", "paired_halo")


def run_design(
    design: Design, benchmark: Benchmark, replicates: int, boot: Bootstrap, full: bool = True
) -> dict[str, Any]:
    """Every replicate of one design: the test p-values and intervals of both variants
    (``full=False``: only W^attr, Table 4 and the halo rate)."""
    spec = benchmark.statistics
    pl = plan(design, benchmark)
    tr = truth(design, benchmark, pl) if full else {}
    sub = subgroup_truth(design, benchmark, pl)
    halo_ix = np.array([spec.halo_tag in s.tags for s in benchmark.scenarios])
    acc: dict[str, dict[str, list[Any]]] = {label: {} for label, _ in VARIANTS}

    def adder(store: dict[str, list[Any]], r: int) -> Any:
        def add(key: str, value: Any) -> None:
            store.setdefault(key, []).append(value)
            if key.endswith("_p"):
                store.setdefault(key[:-2] + "_rep", []).append(np.full(len(value), r))

        return add

    for r in range(replicates):
        data = draw(design, benchmark, pl, r)
        for label, paper in VARIANTS:
            if full:
                _replicate(data, benchmark, pl, tr, boot, paper, adder(acc[label], r))
            _subgroup_cells(data, benchmark, sub, boot, paper, adder(acc[label], r))
        if r % 20 == 19:
            log.info("%s: replicate %d/%d", design.name, r + 1, replicates)

    def fpr_power(c: dict[str, np.ndarray], key: str, sel: np.ndarray | None = None) -> dict:
        p, null, rep = c[f"{key}_p"], c[f"{key}_null"], c[f"{key}_rep"]
        if sel is not None:
            p, null, rep = p[sel], null[sel], rep[sel]
        return {
            "null_false_positive_rate": _rates(p[null], rep[null]),
            "power_planted": _rates(p[~null], rep[~null]) if (~null).any() else None,
        }

    out: dict[str, Any] = {"design": dict(asdict(design))}
    out["design"]["planted_edit_scenarios"] = int((pl.delta != 0).sum())
    out["design"]["planted_group_scenarios"] = int((pl.beta != 0).sum())
    theta = float((pl.delta[halo_ix] > 0).mean()) if halo_ix.any() else float("nan")
    tables: dict[str, dict[str, Any]] = (
        {
            k: {}
            for k in (
                "paired_variation_bias",
                "paired_group_tests",
                "paired_group_means",
                "paired_stereotype_groups",
                *SUBGROUP_TABLES,
            )
        }
        if full
        else {k: {} for k in SUBGROUP_TABLES}
    )
    for label, paper in VARIANTS:
        a = acc[label]
        c = {k: np.concatenate(v) for k, v in a.items() if k != "halo"}
        for table, section in _subgroup_tables(c, a.get("halo", []), theta, paper).items():
            tables[table][label] = section
        if not full:
            continue
        tables["paired_variation_bias"][label] = {
            "test": VARIATION_TEST[paper][0],
            "unit": VARIATION_TEST[paper][1],
            **fpr_power(c, "var"),
            "intervals": {
                k: _coverage(a[f"cov_{k}"]) for k in ("mean_base", "mean_variation", "shift")
            },
        }
        gt: dict[str, Any] = {
            "test": GROUP_TEST[paper][0],
            "unit": GROUP_TEST[paper][1],
            "all_axes": fpr_power(c, "grp"),
        }
        for axis in spec.group_tests:
            gt[axis] = fpr_power(c, "grp", c["grp_axis"] == axis)
        tables["paired_group_tests"][label] = gt
        tables["paired_group_means"][label] = {
            "interval": "Student-t over person means" if not paper else "face bootstrap",
            "all_axes": _coverage(a["cov_group_mean"]),
            **{axis: _coverage(a[f"cov_group_mean_{axis}"]) for axis in spec.group_tests},
        }
        tables["paired_stereotype_groups"][label] = {
            "test": GROUP_TEST[paper][0],
            "unit": GROUP_TEST[paper][1],
            **fpr_power(c, "st"),
        }
    tables["paired_halo"]["n_halo_scenarios_planted"] = int((pl.delta[halo_ix] != 0).sum())
    tables["paired_halo"]["truth"] = (
        "true_positive_share: the share of halo-tagged scenarios with a planted edit (their "
        "mean shift is positive, the others' exactly 0), the default interval's estimand; "
        "expected_halo_rate: the mean of the paper's rate over the replicates (its expectation "
        "at this size), the paper's interval's estimand"
    )
    out.update(tables)
    return out


def null_rates(
    design: Design, benchmark: Benchmark, replicates: int
) -> dict[str, dict[str, dict[float, float]]]:
    """Rejection rates of the default (``person``) and the paper's (``paper``) tests on a null
    design (no planted effect), per table and alpha: the suite's fast check (no bootstrap)."""
    spec = benchmark.statistics
    pl = plan(design, benchmark)
    if (pl.delta != 0).any() or (pl.beta != 0).any():
        raise ValueError(f"design {design.name}: not a null design")
    one = Bootstrap(1, 0.95, 0)
    p: dict[str, dict[str, list[np.ndarray]]] = {}
    for r in range(replicates):
        data = draw(design, benchmark, pl, r)
        for label, paper in (("person", False), ("paper", True)):
            got = {
                "paired_variation_bias": variation_bias(data, benchmark, spec, one, paper),
                "paired_group_tests": group_tests(data, benchmark, spec, one, paper)[0],
                "paired_stereotype_groups": stereotype_groups(data, benchmark, spec, paper),
            }
            for table, df in got.items():
                p.setdefault(table, {}).setdefault(label, []).append(df["pval"].to_numpy())
    out: dict[str, dict[str, dict[float, float]]] = {}
    for table, by in p.items():
        for label, parts in by.items():
            pv = np.nan_to_num(np.concatenate(parts), nan=1.0)
            out.setdefault(table, {})[label] = {a: float((pv < a).mean()) for a in ALPHAS}
    return out


def check_power(seeds: int = 40, replicates: int = 15) -> dict[str, Any]:
    """How often the suite's fast check catches a pooled group test (rate >= 3 alpha at 0.01)
    and passes the default (<= 0.02), over ``seeds`` other seeds of :data:`CHECK_DESIGN`."""
    from dataclasses import replace

    benchmark = load_benchmark(PROTOCOL)
    caught = passed = 0
    for i in range(seeds):
        r = null_rates(replace(CHECK_DESIGN, seed=1000 + i), benchmark, replicates)
        tables = ("paired_group_tests", "paired_stereotype_groups")
        caught += all(r[t]["paper"][0.01] >= 0.03 for t in tables)
        passed += all(r[t]["person"][0.01] <= 0.02 for t in tables)
    return {
        "seeds": seeds,
        "replicates": replicates,
        "pooled_caught": caught,
        "default_passed": passed,
    }


def subgroup_null_rates(design: Design, benchmark: Benchmark, replicates: int) -> dict[str, float]:
    """W^attr on a design where the edit moves every subgroup alike: the share of subgroup pairs
    the default rejects at 0.05 (raw p) and after Bonferroni, and the paper's after Bonferroni
    (the suite's fast check; no bootstrap)."""
    spec = benchmark.statistics
    pl = plan(design, benchmark)
    if design.edit_extra or (pl.beta != 0).any():
        raise ValueError(f"design {design.name}: not a W^attr null design")
    raw, bonf, paper = [], [], []
    for r in range(replicates):
        data = draw(design, benchmark, pl, r)
        w = subgroup_variation_bias(data, benchmark, spec)[1]
        raw.append(w["pval"].to_numpy())
        bonf.append(w["pval_bonferroni"].to_numpy())
        paper.append(
            subgroup_variation_bias(data, benchmark, spec, paper_tests=True)[1][
                "pval_bonferroni"
            ].to_numpy()
        )
    share = {
        k: float((np.nan_to_num(np.concatenate(v), nan=1.0) < 0.05).mean())
        for k, v in (
            ("default_raw", raw),
            ("default_bonferroni", bonf),
            ("paper_bonferroni", paper),
        )
    }
    return share


def by_kind_null_rates(
    design: Design,
    benchmark: Benchmark,
    replicates: int,
    axis: str = "gender",
    n_permutations: int = 200,
) -> dict[str, dict[float, float]]:
    """Table 4 on one axis of a design where its null holds: the share of replicates whose
    p-value is below each alpha, for the default (:func:`by_kind_permutation`) and for the
    summed Kruskal-Wallis H with the same permutations (the earlier default; the suite's fast
    check)."""
    spec = benchmark.statistics
    pl = plan(design, benchmark)
    if not subgroup_truth(design, benchmark, pl)["axis_null"][axis]:
        raise ValueError(f"design {design.name}: Table 4's null does not hold on {axis}")
    col = spec.column(axis)
    p: dict[str, list[float]] = {"default": [], "kruskal": []}
    for r in range(replicates):
        data = draw(design, benchmark, pl, r)
        d = np.round(data.person_differences(), DERIVED_DECIMALS)
        groups = axis_groups(data, benchmark, col)
        member = data.group_index(col, groups)
        p["default"].append(by_kind_permutation(d, member, len(groups), n_permutations, r)[1])
        keep = member >= 0
        ranks, tie = midranks(d[keep])
        present = (~np.isnan(d[keep])).astype(np.float64)
        m = member[keep]
        perm = np.random.default_rng(r).permuted(np.tile(m, (n_permutations, 1)), axis=1)
        onehot = (perm[:, None, :] == np.arange(len(groups))[None, :, None]).astype(np.float64)
        obs = sum_kruskal(ranks, present, tie, (m == np.arange(len(groups))[:, None]) * 1.0)
        null = sum_kruskal(ranks, present, tie, onehot)
        hits = float((null >= obs - 1e-9 * obs).sum())
        p["kruskal"].append((1.0 + hits) / (1 + n_permutations))
    return {k: {a: float((np.asarray(v) < a).mean()) for a in ALPHAS} for k, v in p.items()}


def check_subgroup_power(seeds: int = 40, replicates: int = 8) -> dict[str, Any]:
    """How often the fast W^attr check catches the paper's test (Bonferroni rate >= 3 x 0.05)
    and passes the default (raw rate <= 0.1, Bonferroni rate <= 0.05) over ``seeds`` other
    seeds of :data:`CHECK_SUBGROUP_DESIGN`, with the default's largest rates."""
    from dataclasses import replace

    benchmark = load_benchmark(PROTOCOL)
    caught = passed = 0
    worst = [0.0, 0.0]
    for i in range(seeds):
        r = subgroup_null_rates(
            replace(CHECK_SUBGROUP_DESIGN, seed=2000 + i), benchmark, replicates
        )
        caught += r["paper_bonferroni"] >= 3 * 0.05
        passed += r["default_raw"] <= 0.1 and r["default_bonferroni"] <= 0.05
        worst = [max(worst[0], r["default_raw"]), max(worst[1], r["default_bonferroni"])]
    return {
        "seeds": seeds,
        "replicates": replicates,
        "paper_caught": caught,
        "default_passed": passed,
        "default_max_raw_bonferroni": worst,
    }


def pooled_over_designs(designs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """W^attr's and Table 4's false-positive rates per axis pooled over every design's exact
    null cells (the counts of each design's ``null_false_positive_rate_by_axis`` summed): each
    design's per-axis rate rests on a few hundred cells, so one of them beyond its target can
    be chance; the pooled rate says whether the test is off."""
    out: dict[str, Any] = {}
    for table in ("paired_subgroup_wilcoxon", "paired_group_bias_by_kind"):
        for label, _ in VARIANTS:
            acc: dict[str, dict[str, list[int]]] = {}
            for d in designs.values():
                sec = (d.get(table) or {}).get(label) or {}
                for axis, rates in (sec.get("null_false_positive_rate_by_axis") or {}).items():
                    for a, r in rates.items():
                        if r.get("n"):
                            kn = acc.setdefault(axis, {}).setdefault(a, [0, 0])
                            kn[0] += r["k"]
                            kn[1] += r["n"]
            out.setdefault(table, {})[label] = {
                axis: {a: _rate(np.arange(n) < k) for a, (k, n) in by.items()}
                for axis, by in acc.items()
            }
    return out


def run(
    replicates: int,
    n_resamples: int,
    designs: tuple[Design, ...] = DESIGNS,
    subgroup_designs: tuple[Design, ...] = SUBGROUP_DESIGNS,
    full: bool = True,
) -> dict[str, Any]:
    """The ``valid_inference`` section: every design (``full=False``: only W^attr, Table 4 and
    the halo interval, of every design and of ``subgroup_designs``)."""
    benchmark = load_benchmark(PROTOCOL)
    boot = Bootstrap(n_resamples, 0.95, 0)
    out = {d.name: run_design(d, benchmark, replicates, boot, full) for d in designs}
    out.update(
        {d.name: run_design(d, benchmark, replicates, boot, False) for d in subgroup_designs}
    )
    return {
        "designs": out,
        "subgroup_null_rates_pooled_over_designs": pooled_over_designs(out),
        "settings": {
            "replicates": replicates,
            "n_resamples": n_resamples,
            "ci": 0.95,
            "alphas": list(ALPHAS),
            "cp": "Clopper-Pearson 95% (cells pooled)",
            "targets": {
                "fpr_0.05": [0.03, 0.07],
                "fpr_0.05_cp_upper": 0.08,
                "fpr_0.01": "<= 0.02",
                "coverage": [0.93, 0.97],
            },
        },
    }


@dataclass(frozen=True)
class Recheck:
    """One design's table whose default (``person``) cells are measured again with more
    replicates than the run that put them in the file (``--only rechecks``): replicates
    ``0 .. replicates - 1``, so the run's first replicates are the earlier run's."""

    design: str
    table: str  # one of SUBGROUP_TABLES
    replicates: int
    why: str


#: The default cells a 600-replicate run left beyond a target, measured again (the family's
#: README, "Tests and their calibration": both were chance).
RECHECKS: tuple[Recheck, ...] = (
    Recheck(
        "planted_weak_person_300",
        "paired_group_bias_by_kind",
        2400,
        "age (the design's only null axis) at alpha 0.05: 0.063 [0.045, 0.086] in 600 "
        "replicates, Clopper-Pearson upper bound above 0.08",
    ),
    Recheck(
        "subgroup_planted_female_x1.2",
        "paired_halo",
        4800,
        "coverage of theta 0.972 [0.955, 0.983] in 600 replicates, above 0.97",
    ),
)

#: The label of the default variant in every table (:data:`VARIANTS`).
DEFAULT_LABEL = VARIANTS[0][0]


def recheck_section(
    rc: Recheck, benchmark: Benchmark, boot: Bootstrap, design: Design | None = None
) -> dict[str, Any]:
    """The default variant's section of ``rc.table`` on ``rc.design`` (``design``: that
    design, else looked up by name in :data:`DESIGNS` and :data:`SUBGROUP_DESIGNS`) over
    ``rc.replicates`` replicates (what :func:`run_design` puts under ``person (default)``),
    with ``replicates`` and ``run: rechecks`` added."""
    designs = {d.name: d for d in (*DESIGNS, *SUBGROUP_DESIGNS)}
    if (design is None and rc.design not in designs) or rc.table not in SUBGROUP_TABLES:
        raise ValueError(f"recheck {rc}: design or table unknown")
    design = design or designs[rc.design]
    pl = plan(design, benchmark)
    sub = subgroup_truth(design, benchmark, pl)
    halo_ix = np.array([benchmark.statistics.halo_tag in s.tags for s in benchmark.scenarios])
    theta = float((pl.delta[halo_ix] > 0).mean()) if halo_ix.any() else float("nan")
    acc: dict[str, list[Any]] = {}

    def add(key: str, value: Any, r: int = 0) -> None:
        acc.setdefault(key, []).append(value)
        if key.endswith("_p"):
            acc.setdefault(key[:-2] + "_rep", []).append(np.full(len(value), r))

    for r in range(rc.replicates):
        data = draw(design, benchmark, pl, r)
        _subgroup_cells(
            data, benchmark, sub, boot, False, lambda k, v, r=r: add(k, v, r), (rc.table,)
        )
        if r % 200 == 199:
            log.info("%s %s: replicate %d/%d", rc.design, rc.table, r + 1, rc.replicates)
    c = {k: np.concatenate(v) for k, v in acc.items() if k != "halo"}
    section = _subgroup_tables(c, acc.get("halo", []), theta, False)[rc.table]
    return {**section, "replicates": rc.replicates, "run": "rechecks"}


def _headline(section: dict[str, Any]) -> str | None:
    """The cell a recheck is about, in one line for its record (a line, not a cell, so a
    reader of the file's cells meets each cell once): the null rate at each alpha (pooled over
    the null axes) or the coverage of theta, with Clopper-Pearson intervals and n."""

    def one(r: dict[str, Any]) -> str:
        return f"{r['rate']} {r['cp95']} (k {r['k']}, n {r['n']})"

    cov = section.get("coverage_of_true_positive_share")
    if cov:
        return f"coverage_of_true_positive_share {one({**cov, 'rate': cov['coverage']})}"
    fpr = section.get("null_false_positive_rate")
    if fpr:
        return "null_false_positive_rate " + "; ".join(
            f"{a.replace('_', ' ')}: {one(r)}" for a, r in fpr.items()
        )
    return None


def merge_rechecks(path: Path, sections: dict[Recheck, dict[str, Any]], record: dict) -> None:
    """Replace each recheck's ``designs.<design>.<table>.person (default)`` in the
    ``valid_inference`` section of the bench file (the paper's variant and every other key
    kept), and record the run (with each cell's earlier value and the W^attr / Table 4 rates
    pooled over the designs again) under ``valid_inference.rechecks``."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    vi = doc["protocols"][PROTOCOL]["valid_inference"]
    earlier = (vi.get("rechecks") or {}).get("cells", {})
    cells = {}
    for rc, section in sections.items():
        table = vi["designs"][rc.design][rc.table]
        old = table.get(DEFAULT_LABEL, {})
        key = f"{rc.design}/{rc.table}"
        # a cell rechecked before keeps the value of the run that first put it in the file
        rerun = old.get("run") == "rechecks" and key in earlier
        before = earlier[key]["before"] if rerun else _headline(old)
        table[DEFAULT_LABEL] = section
        cells[key] = {
            "replicates": rc.replicates,
            "why": rc.why,
            "before": before,
            "after": _headline(section),
        }
    vi["rechecks"] = {
        **record,
        "cells": cells,
        "subgroup_null_rates_pooled_over_designs": pooled_over_designs(vi["designs"]),
    }
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


def by_kind_design(
    design: Design, benchmark: Benchmark, replicates: int, boot: Bootstrap, new: bool
) -> dict[str, Any]:
    """Table 4 on one design for ``--only by_kind``: a design the file has gets its default
    variant's section (what :func:`run_design` puts under ``person (default)``, with
    ``replicates`` and ``run: by_kind``); a ``new`` one the whole :func:`run_design` entry of
    :data:`SUBGROUP_TABLES` (both variants)."""
    if new:
        return run_design(design, benchmark, replicates, boot, full=False)
    rc = Recheck(design.name, "paired_group_bias_by_kind", replicates, "by_kind")
    return {**recheck_section(rc, benchmark, boot, design), "run": "by_kind"}


def merge_by_kind(
    path: Path,
    results: dict[str, tuple[dict[str, Any], bool]],
    record: dict,
    table: str = "paired_group_bias_by_kind",
) -> None:
    """Merge ``--only by_kind`` (``table`` Table 4) or ``--only wattr`` (``table`` W^attr)
    into the ``valid_inference`` section of the bench file (read-modify-write; every other key
    kept): per design (``results[name] = (section, new)``) replace ``designs.<name>.<table>.
    person (default)`` or add the new design's entry, and record the run per design (with the
    cell's earlier value) under ``valid_inference.by_kind_run`` / ``wattr_run``, with the
    W^attr / Table 4 rates pooled over the designs again."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    vi = doc["protocols"][PROTOCOL]["valid_inference"]
    by_kind = table == "paired_group_bias_by_kind"
    run_rec = vi.setdefault("by_kind_run" if by_kind else "wattr_run", {})
    for name, (section, new) in results.items():
        if new:
            vi["designs"][name] = section
            before, after = None, _headline(section[table][DEFAULT_LABEL])
        else:
            cell = vi["designs"][name][table]
            before = _headline(cell.get(DEFAULT_LABEL, {}))
            cell[DEFAULT_LABEL] = section
            after = _headline(section)
        run_rec.setdefault("designs", {})[name] = {
            **record,
            "test": (BY_KIND_TEST if by_kind else SUBGROUP_TEST)[False][0],
            "new_design": new,
            "before": before,
            "after": after,
        }
    run_rec["subgroup_null_rates_pooled_over_designs"] = pooled_over_designs(vi["designs"])
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


def merge_valid_inference(
    path: Path, section: dict[str, Any], only_subgroups: bool = False
) -> None:
    """Set ``protocols.beauty-and-the-bias.valid_inference`` of the bench file (others kept);
    ``only_subgroups``: replace only :data:`SUBGROUP_TABLES` of each design (and the
    ``subgroups_run`` record), keeping the rest of the section."""
    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    proto = doc.setdefault("protocols", {}).setdefault(PROTOCOL, {})
    if only_subgroups and "valid_inference" in proto:
        old = proto["valid_inference"]
        for name, d in section["designs"].items():
            target = old.setdefault("designs", {}).setdefault(name, {"design": d["design"]})
            target.update({k: d[k] for k in SUBGROUP_TABLES})
        old["subgroups_run"] = {k: v for k, v in section.items() if k != "designs"}
    else:
        proto["valid_inference"] = section
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


def _designs_to_run(arg: str) -> tuple[dict[str, Design], list[str]]:
    """``--designs`` (comma-separated; empty: every design): every design by name and the
    names to run; an unknown name exits with the valid choices."""
    every = {d.name: d for d in (*DESIGNS, *SUBGROUP_DESIGNS)}
    names = [n for n in arg.split(",") if n] or list(every)
    unknown = sorted(set(names) - set(every))
    if unknown:
        raise SystemExit(f"--designs: unknown {unknown}; choose from {sorted(every)}")
    return every, names


def _command(argv: list[str] | None) -> str:
    """The command line a record names."""
    return "python -m stylisticbias_dev.bench.paired_valid_inference " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )


def _run_record(command: str, t_start: float) -> dict[str, Any]:
    """A run's record: its command, machine, date and seconds since ``t_start``."""
    return {
        "command": command,
        "machine": machine_info(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - t_start, 1),
    }


def _main_wattr(args: argparse.Namespace, argv: list[str] | None) -> int:
    """``--only wattr``: W^attr's default variant on every design the bench file has (or
    ``--designs``), ``--replicates`` each, merged by :func:`merge_by_kind`."""
    benchmark = load_benchmark(PROTOCOL)
    boot = Bootstrap(args.n_resamples, 0.95, 0)
    every, names = _designs_to_run(args.designs)
    command = _command(argv)
    table = "paired_subgroup_wilcoxon"
    for name in names:
        t1 = time.perf_counter()
        rc = Recheck(name, table, args.replicates, "wattr")
        section = {**recheck_section(rc, benchmark, boot, every[name]), "run": "wattr"}
        record = {**_run_record(command, t1), "replicates": args.replicates}
        merge_by_kind(Path(args.out), {name: (section, False)}, record, table=table)
        log.info("%s: W^attr merged into %s", name, args.out)
    return 0


def main(argv: list[str] | None = None) -> int:
    """CLI: measure and merge into reports/bench/calibration.json."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.paired_valid_inference")
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--n-resamples", type=int, default=1000, help="face bootstrap resamples")
    ap.add_argument("--out", default="reports/bench/calibration.json")
    ap.add_argument(
        "--check-power", action="store_true", help="only the fast checks' power over 40 seeds"
    )
    ap.add_argument(
        "--only",
        choices=("all", "subgroups", "rechecks", "by_kind", "wattr"),
        default="all",
        help="subgroups: only W^attr, Table 4 and the halo interval (merged); rechecks: the "
        "default cells of RECHECKS with their own replicate counts (merged); by_kind: Table "
        "4's default on every design (--designs), a design the file lacks in full (merged); "
        "wattr: W^attr's default on every design the file has (--designs; merged)",
    )
    ap.add_argument("--designs", default="", help="by_kind: comma-separated design names")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("stylisticbias.analysis.bootstrap").setLevel(logging.ERROR)
    if args.check_power:
        log.info("fast check, W^attr: %s", check_subgroup_power())
        log.info("fast check: %s", check_power())
        return 0
    t0 = time.perf_counter()
    if args.only == "rechecks":
        benchmark = load_benchmark(PROTOCOL)
        boot = Bootstrap(args.n_resamples, 0.95, 0)
        sections = {rc: recheck_section(rc, benchmark, boot) for rc in RECHECKS}
        record = {**_run_record(_command(argv), t0), "n_resamples": args.n_resamples}
        merge_rechecks(Path(args.out), sections, record)
        log.info("rechecks merged into protocols.%s.valid_inference of %s", PROTOCOL, args.out)
        return 0
    if args.only == "wattr":
        return _main_wattr(args, argv)
    if args.only == "by_kind":
        benchmark = load_benchmark(PROTOCOL)
        boot = Bootstrap(args.n_resamples, 0.95, 0)
        every, names = _designs_to_run(args.designs)
        doc = json.loads(Path(args.out).read_text(encoding="utf-8"))
        have = doc["protocols"][PROTOCOL]["valid_inference"]["designs"]
        command = _command(argv)
        for name in names:
            t1 = time.perf_counter()
            new = name not in have
            section = by_kind_design(every[name], benchmark, args.replicates, boot, new)
            record = {
                **_run_record(command, t1),
                "replicates": args.replicates,
                "n_resamples": args.n_resamples,
            }
            merge_by_kind(Path(args.out), {name: (section, new)}, record)
            log.info("%s: Table 4 merged into %s", name, args.out)
        return 0
    section = run(args.replicates, args.n_resamples, full=args.only == "all")
    section["command"] = "python -m stylisticbias_dev.bench.paired_valid_inference " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    section["machine"] = machine_info()
    section["date"] = datetime.now(UTC).strftime("%Y-%m-%d")
    section["seconds"] = round(time.perf_counter() - t0, 1)
    merge_valid_inference(Path(args.out), section, only_subgroups=args.only == "subgroups")
    log.info("wrote protocols.%s.valid_inference of %s", PROTOCOL, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
