"""The tables of the task-type protocols (REFLECT, VIGNETTE): one registry with a schema each.

The same contract as :mod:`.table_registry` (the forced-choice tables): every table is a
:class:`~.table_registry.TableSpec` whose columns are words of one vocabulary -- the shared
words (``model``, ``scenario_id``, ``ci_low``, ``ci_high``, ``pval``, ``n``, ``simulated``)
mean what they mean there, the task words are defined in :data:`TASK_VOCABULARY` -- and every
builder's output is validated against its pandera schema (:func:`validate_task_table`). The
builders take long tables of parsed answers (:mod:`.stats` documents their columns) and
put bootstrap intervals over the sampling unit (``unit``: the source photo, the image pair).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pandera.pandas as pa

from stylisticbias.analysis.table_registry import _P, _SIGNED, VOCABULARY, Col, TableSpec
from stylisticbias.families.tasks.analysis import stats as ts
from stylisticbias.families.tasks.analysis.vignette_tables import (
    VIGNETTE_TABLES,
    VIGNETTE_VOCABULARY,
)
from stylisticbias.registry import Registry
from stylisticbias.schemas import validate

_SHARE = (pa.Check.in_range(-1e-9, 1 + 1e-9),)
#: Task-table words beyond the shared vocabulary.
TASK_VOCABULARY: dict[str, Col] = {
    "group": Col("str", "a demographic group (REFLECT: race x gender, race or gender)", False),
    "identity": Col("str", "a VIGNETTE identity descriptor", nullable=False),
    "partner": Col("str", "the other identity of the pair (PairComp)", nullable=False),
    "opponent": Col("str", "the other group of the pair (win-rate matrix column)", False),
    "activity": Col("str", "a VIGNETTE activity (or question category)", nullable=False),
    "option": Col("str", "a choice_k option label", nullable=False),
    "trait_pair": Col("str", "a VIGNETTE contrastive trait pair (SSCM term pair id)", False),
    "win_rate": Col("float", "REFLECT WinRate(g): wins / retained pairs with g", checks=_P),
    "inconsistent_rate": Col("float", "share of pairs whose two orders disagree", checks=_P),
    "share": Col("float", "share of valid answers choosing the option", checks=_SHARE),
    "relative_mean_gap": Col("float", "(mu_g - mu_ref) / mu_ref of the option values"),
    "jsd": Col("float", "Jensen-Shannon divergence to the pooled distribution (bits)"),
    "jsd_ci_low": Col("float", "lower end of the JSD's unit-bootstrap interval (bits)"),
    "jsd_ci_high": Col("float", "upper end of the JSD's unit-bootstrap interval (bits)"),
    "jsd_chance": Col(
        "float",
        "the JSD expected with no group difference (bits; labels permuted within each unit)",
    ),
    "gap_pct": Col("float", "salary Gap% = (mu_g / mu_ref - 1) x 100"),
    "f_stat": Col("float", "cluster-robust Wald F statistic"),
    "selection_frequency": Col("float", "VIGNETTE S (percent)"),
    "log_odds": Col("float", "add-one smoothed log-odds ratio (natural log)"),
    "pair_comp": Col("float", "VIGNETTE PairComp (a difference of proportions)", checks=_SIGNED),
    "polarity": Col("float", "VIGNETTE polarity S_high - S_low (percent)"),
    "position_bias": Col("float", "share choosing slot 1 (left) minus 1/2", checks=_SIGNED),
    "effect": Col("str", "the tested effect (race, gender, race x gender)", nullable=False),
    "share_image": Col("float", "selection share with the image", checks=_P),
    "share_text": Col("float", "selection share in the text-only ablation", checks=_P),
    "delta": Col("float", "with-image minus text-only selection share", checks=_SIGNED),
    "z": Col("float", "the test's z (pooled) or t (cluster-robust) statistic"),
    "pval_fisher": Col("float", "the paper's Fisher exact p of the pooled 2x2 table", checks=_P),
}
_WORDS = {**VOCABULARY, **TASK_VOCABULARY, **VIGNETTE_VOCABULARY}


def _spec(name: str, description: str, keys: Sequence[str], stats: Sequence[str]) -> TableSpec:
    return TableSpec(name, description, tuple(keys), (*keys, *stats, "simulated"))


TASK_TABLES: tuple[TableSpec, ...] = (
    _spec(
        "reflect_win_rates",
        "REFLECT pairwise win rate per group (Sec. 3.1)",
        ("model", "scenario_id", "group"),
        ("win_rate", "ci_low", "ci_high", "inconsistent_rate", "n"),
    ),
    _spec(
        "reflect_win_matrix",
        "REFLECT win-rate matrix: the share of retained group-vs-"
        "opponent pairs the group wins (Sec. 3.1)",
        ("model", "scenario_id", "group", "opponent"),
        ("win_rate", "n"),
    ),
    _spec(
        "reflect_mcq_distribution",
        "REFLECT MCQ option shares per group and pooled",
        ("model", "scenario_id", "group", "option"),
        ("share", "n"),
    ),
    _spec(
        "reflect_mcq_gaps",
        "REFLECT relative mean gap vs the reference group and JSD vs "
        "the pooled distribution (Sec. 3.2)",
        ("model", "scenario_id", "group"),
        (
            "relative_mean_gap",
            "ci_low",
            "ci_high",
            "jsd",
            "jsd_ci_low",
            "jsd_ci_high",
            "jsd_chance",
            "n",
        ),
    ),
    _spec(
        "reflect_salary_gaps",
        "REFLECT salary Gap% vs the reference group (Sec. 3.3)",
        ("model", "scenario_id", "group"),
        ("gap_pct", "ci_low", "ci_high", "n"),
    ),
    _spec(
        "reflect_salary_tests",
        "REFLECT cluster-robust OLS joint Wald F tests per "
        "occupation and pooled (scenario_id 0) (Sec. 3.4)",
        ("model", "scenario_id", "effect"),
        ("f_stat", "pval", "test", "n"),
    ),
    _spec(
        "vignette_selection",
        "VIGNETTE selection frequency per identity (Sec. 4.1)",
        ("model", "scenario_id", "identity"),
        ("selection_frequency", "ci_low", "ci_high", "n"),
    ),
    _spec(
        "vignette_log_odds",
        "VIGNETTE add-one log-odds with the exact test stratified by "
        "instance and the paper's pooled Fisher p (Sec. 4.2)",
        ("model", "activity", "identity"),
        ("log_odds", "ci_low", "ci_high", "pval", "pval_fisher", "n"),
    ),
    _spec(
        "vignette_pair_comp",
        "VIGNETTE PairComp with the instance-clustered test and the "
        "paper's pooled Fisher p (Sec. 4.3)",
        ("model", "identity", "partner"),
        ("pair_comp", "pval", "pval_fisher", "test", "n"),
    ),
    _spec(
        "vignette_polarity",
        "VIGNETTE polarity per identity and trait pair with the exact "
        "test stratified by instance and the paper's pooled Fisher p (Sec. 4.4)",
        ("model", "identity", "trait_pair"),
        ("polarity", "pval", "pval_fisher", "n"),
    ),
    _spec(
        "vignette_text_vs_image",
        "VIGNETTE with-image vs text-only selection shares and the "
        "pooled two-proportion z-test (Sec. 4.5)",
        ("model", "scenario_id", "identity"),
        ("share_image", "share_text", "delta", "z", "pval", "test", "n"),
    ),
    _spec(
        "task_position_bias",
        "left/right (slot 1) bias the swapped orders expose",
        ("model", "scenario_id"),
        ("position_bias", "ci_low", "ci_high", "pval", "n"),
    ),
    *VIGNETTE_TABLES,  # the per-paradigm tables (vignette_tables.py)
)
TASK_REGISTRY: Registry[TableSpec] = Registry("task table", {t.name: t for t in TASK_TABLES})


def task_schema(name: str) -> pa.DataFrameSchema:
    """The pandera schema of task table ``name``; unknown names list the valid ones."""
    t = TASK_REGISTRY.lookup(name)
    return pa.DataFrameSchema(
        {c: _WORDS[c].column() for c in t.columns}, strict=True, ordered=True, name=t.name
    )


def validate_task_table(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` checked against task table ``name``'s schema (one-line error otherwise)."""
    return validate(df, task_schema(name), f"task table {name}")


def _frame(name: str, rows: list[dict], simulated: bool) -> pd.DataFrame:
    cols = TASK_REGISTRY[name].columns
    df = pd.DataFrame(rows, columns=list(cols[:-1]))
    df["simulated"] = simulated
    return validate_task_table(name, df)


def _ratio_ci(per_unit: np.ndarray, stat: Callable[[np.ndarray], float], n_boot: int, seed: int):
    return ts.unit_bootstrap_ci(per_unit, stat, n_boot, seed) if len(per_unit) else (math.nan,) * 2


def _jsd_ci(per_unit: np.ndarray, stat: Callable[[np.ndarray], float], n_boot: int, seed: int):
    """The JSD's unit-bootstrap interval (:func:`~.stats.jsd_interval`)."""
    return ts.jsd_interval(per_unit, stat, n_boot, seed) if len(per_unit) else (math.nan,) * 2


def pairwise_tables(
    answers: pd.DataFrame,
    model: str,
    scenario_id: int,
    *,
    n_boot: int = 500,
    seed: int = 0,
    simulated: bool = False,
) -> dict[str, pd.DataFrame]:
    """``reflect_win_rates``, ``reflect_win_matrix`` and ``task_position_bias`` of one pairwise
    scenario.

    ``answers``: ``unit``, ``first``, ``second`` (groups), ``variant``, ``choice``.
    """
    pairs = ts.consolidate_pairs(answers)
    kept = pairs[(pairs["status"] == "consistent") & (pairs["first"] != pairs["second"])]
    units = sorted(answers["unit"].unique())
    incons = ts.inconsistent_rate(pairs)
    # one row per (retained pair, group in it): per unit, the group's wins and appearances
    first, second = kept["first"].to_numpy(object), kept["second"].to_numpy(object)
    winner, unit = kept["winner"].to_numpy(object), kept["unit"].to_numpy()
    per_group = (
        pd.DataFrame(
            {
                "g": np.concatenate([first, second]),
                "unit": np.concatenate([unit, unit]),
                "w": np.concatenate([winner == first, winner == second]),
                "a": 1,
            }
        )
        .groupby(["g", "unit"])[["w", "a"]]
        .sum()
    )
    rows = []
    for g, wr in ts.win_rates(pairs).items():
        per = per_group.loc[g].reindex(units, fill_value=0).to_numpy(float)
        lo, hi = _ratio_ci(per, lambda s: s[0] / s[1] if s[1] else math.nan, n_boot, seed)
        rows.append(
            {
                "model": model,
                "scenario_id": scenario_id,
                "group": g,
                "win_rate": wr,
                "ci_low": lo,
                "ci_high": hi,
                "inconsistent_rate": incons,
                "n": int(per[:, 1].sum()),
            }
        )
    valid = answers[answers["choice"] != ts.INVALID]
    slot1 = ts.left_chosen(valid)
    per = (
        pd.DataFrame({"unit": valid["unit"], "k": slot1, "n": 1})
        .groupby("unit")[["k", "n"]]
        .sum()
        .reindex(units, fill_value=0)
        .to_numpy(float)
    )
    bias, p, n = ts.position_bias(answers)
    lo, hi = _ratio_ci(per, lambda s: s[0] / s[1] - 0.5 if s[1] else math.nan, n_boot, seed)
    pb = [
        {
            "model": model,
            "scenario_id": scenario_id,
            "position_bias": bias,
            "ci_low": lo,
            "ci_high": hi,
            "pval": p,
            "n": n,
        }
    ]
    matrix = ts.win_rate_matrix(pairs)
    n_pairs, _ = ts.pair_counts(pairs)
    cells = []
    for g in matrix.index:
        for o in matrix.columns:
            if g == o or math.isnan(matrix.loc[g, o]):
                continue
            cells.append(
                {
                    "model": model,
                    "scenario_id": scenario_id,
                    "group": g,
                    "opponent": o,
                    "win_rate": float(matrix.loc[g, o]),
                    "n": int(n_pairs[(g, o)]),
                }
            )
    return {
        "reflect_win_rates": _frame("reflect_win_rates", rows, simulated),
        "reflect_win_matrix": _frame("reflect_win_matrix", cells, simulated),
        "task_position_bias": _frame("task_position_bias", pb, simulated),
    }


def mcq_tables(
    answers: pd.DataFrame,
    model: str,
    scenario_id: int,
    labels: Sequence[str],
    values: Sequence[float],
    ref: str,
    *,
    n_boot: int = 500,
    seed: int = 0,
    simulated: bool = False,
    paper_tests: bool = False,
) -> dict[str, pd.DataFrame]:
    """``reflect_mcq_distribution`` and ``reflect_mcq_gaps`` of one choice_k scenario.

    ``answers``: ``unit``, ``group``, ``choice``; ``ref``: the reference group of the gaps.
    The gap's interval resamples units: studentized (:func:`~.stats.ratio_of_means_interval`;
    with ``paper_tests`` the earlier BCa interval). The JSD gets its basic unit-bootstrap
    interval (:func:`~.stats.jsd_interval`) and its chance level
    (:func:`~.stats.permutation_chance_jsd`) beside it.
    """
    dist = ts.option_distribution(answers, "group", labels)
    valid = answers[answers["choice"].isin(labels)]
    n_g = valid.groupby("group").size()
    rows = [
        {
            "model": model,
            "scenario_id": scenario_id,
            "group": g,
            "option": o,
            "share": float(dist.loc[g, o]),
            "n": int(n_g.sum() if g == "pooled" else n_g[g]),
        }
        for g in dist.index
        for o in labels
    ]
    groups = [g for g in dist.index if g != "pooled"]
    units = sorted(answers["unit"].unique())
    k = len(labels)
    counts = np.zeros((len(units), len(groups), k))
    uix, gix = {u: i for i, u in enumerate(units)}, {g: i for i, g in enumerate(groups)}
    for u, g, c in valid[["unit", "group", "choice"]].itertuples(index=False):
        counts[uix[u], gix[g], list(labels).index(c)] += 1
    flat = counts.reshape(len(units), -1)
    opt_code = {c: i for i, c in enumerate(labels)}
    chance = (
        ts.permutation_chance_jsd(
            valid["unit"].to_numpy(),
            valid["group"].map(gix).to_numpy(),
            valid["choice"].map(opt_code).to_numpy(),
            len(groups),
            k,
            seed=seed,
        )
        if len(valid)
        else np.full(len(groups), math.nan)
    )
    gaps = []
    for g in groups:
        if g == ref:
            continue

        def stat(s: np.ndarray, gi: int = gix[g]) -> float:
            c = s.reshape(len(groups), k)
            a, b = c[gi], c[gix[ref]]
            if a.sum() == 0 or b.sum() == 0:
                return math.nan
            return ts.relative_mean_gap(a / a.sum(), b / b.sum(), values)

        def jstat(s: np.ndarray, gi: int = gix[g]) -> float:
            c = s.reshape(len(groups), k)
            pooled = c.sum(axis=0)
            return float(ts.jsd_rows(c[gi][None], pooled / pooled.sum())[0])

        if paper_tests:
            lo, hi = _ratio_ci(flat, stat, n_boot, seed)
        else:  # mu_g / mu_ref - 1: a ratio of two groups' means of the option values
            mean_parts = [counts[:, gi] @ np.asarray(values, float) for gi in (gix[g], gix[ref])]
            per = np.column_stack(
                [
                    mean_parts[0],
                    counts[:, gix[g]].sum(axis=1),
                    mean_parts[1],
                    counts[:, gix[ref]].sum(axis=1),
                ]
            )
            lo, hi = (b - 1 for b in ts.ratio_of_means_interval(per, n_boot, seed))
        j_lo, j_hi = _jsd_ci(flat, jstat, n_boot, seed)
        gaps.append(
            {
                "model": model,
                "scenario_id": scenario_id,
                "group": g,
                "relative_mean_gap": ts.relative_mean_gap(dist.loc[g], dist.loc[ref], values),
                "ci_low": lo,
                "ci_high": hi,
                "jsd": ts.jsd(dist.loc[g], dist.loc["pooled"]),
                "jsd_ci_low": j_lo,
                "jsd_ci_high": j_hi,
                "jsd_chance": float(chance[gix[g]]),
                "n": int(n_g[g]),
            }
        )
    return {
        "reflect_mcq_distribution": _frame("reflect_mcq_distribution", rows, simulated),
        "reflect_mcq_gaps": _frame("reflect_mcq_gaps", gaps, simulated),
    }


def salary_tables(
    answers: pd.DataFrame,
    model: str,
    scenario_id: int,
    ref: str,
    *,
    n_boot: int = 500,
    seed: int = 0,
    simulated: bool = False,
    paper_tests: bool = False,
) -> dict[str, pd.DataFrame]:
    """``reflect_salary_gaps`` and ``reflect_salary_tests`` of one numeric scenario.

    ``answers``: ``unit``, ``group``, ``value`` (NaN for an invalid answer). Tests
    (:func:`salary_test_rows`): ``paper_tests`` the paper's joint Wald F of the group
    (F(q, G - 1) reference), else the wild cluster bootstrap per effect. The Gap% interval
    resamples the units (source photos): by default studentized
    (:func:`~.stats.ratio_of_means_interval`), with ``paper_tests`` the earlier BCa interval.
    """
    valid = answers.dropna(subset=["value"])
    groups = sorted(valid["group"].unique())
    units = sorted(answers["unit"].unique())
    sums = np.zeros((len(units), len(groups), 2))
    uix, gix = {u: i for i, u in enumerate(units)}, {g: i for i, g in enumerate(groups)}
    for u, g, v in valid[["unit", "group", "value"]].itertuples(index=False):
        sums[uix[u], gix[g]] += (v, 1)
    means = valid.groupby("group")["value"].mean()
    rows = []
    for g in groups:
        if g == ref:
            continue

        def stat(s: np.ndarray, gi: int = gix[g]) -> float:
            c = s.reshape(len(groups), 2)
            r = c[gix[ref]]
            return ts.gap_pct(c[gi, 0] / c[gi, 1], r[0] / r[1]) if c[gi, 1] and r[1] else math.nan

        if paper_tests:  # the interval as before (BCa, expanded)
            lo, hi = _ratio_ci(sums.reshape(len(units), -1), stat, n_boot, seed)
        else:  # bootstrap-t of the ratio of the two groups' means over source photos
            per = np.concatenate([sums[:, gix[g]], sums[:, gix[ref]]], axis=1)
            lo, hi = (100 * (b - 1) for b in ts.ratio_of_means_interval(per, n_boot, seed))
        rows.append(
            {
                "model": model,
                "scenario_id": scenario_id,
                "group": g,
                "gap_pct": ts.gap_pct(means[g], means[ref]),
                "ci_low": lo,
                "ci_high": hi,
                "n": int((valid["group"] == g).sum()),
            }
        )
    test_rows = salary_test_rows(
        valid, model, scenario_id, ref, n_boot=n_boot, seed=seed, paper_tests=paper_tests
    )
    return {
        "reflect_salary_gaps": _frame("reflect_salary_gaps", rows, simulated),
        "reflect_salary_tests": _frame("reflect_salary_tests", test_rows, simulated),
    }


def _race_gender(groups: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """The race and gender of each ``<race>-<gender>`` group label, when every label splits
    and the groups cross every race with every gender (else None: one joint group test)."""
    parts = [str(g).rsplit("-", 1) for g in groups]
    if any(len(p) != 2 for p in parts):
        return None
    races, genders = [p[0] for p in parts], [p[1] for p in parts]
    cells = set(zip(races, genders))
    if len(set(races)) < 2 or len(set(genders)) < 2:
        return None
    if len(cells) != len(set(races)) * len(set(genders)):
        return None
    return races, genders


def salary_test_rows(
    valid: pd.DataFrame,
    model: str,
    scenario_id: int,
    ref: str,
    *,
    n_boot: int = 500,
    seed: int = 0,
    paper_tests: bool = False,
    pooled: bool = False,
) -> list[dict]:
    """The ``reflect_salary_tests`` rows of the valid answers ``valid`` (``unit``, ``group``,
    ``value``; ``scenario`` too when ``pooled``: occupation fixed effects, ``scenario_id`` 0).

    ``paper_tests`` (``analysis.definitions: official``): the paper's test exactly as before,
    the cluster-robust (CR1) Wald F of the 9 group dummies against F(q, G - 1)
    (:func:`~.stats.cluster_ols`), one row ``group``. Default: the OLS of the value on race and
    gender with their interaction (deviation coding, :func:`~.stats.factor_design`), clusters =
    units (source photos), and per effect -- ``group`` (every group contrast), ``race``,
    ``gender``, ``race x gender`` -- the CR1 Wald F with its wild cluster bootstrap p
    (:func:`~.stats.wild_cluster_wald`, ``n_boot`` draws). Labels not of the form
    ``<race>-<gender>`` (or not fully crossed) give the ``group`` row only.
    """
    n = len(valid)
    if paper_tests:
        groups = sorted(valid["group"].unique())
        terms = [f"C(group, Treatment('{ref}'))[T.{g}]" for g in groups if g != ref]
        _, tests = ts.cluster_ols(
            valid, f"value ~ C(group, Treatment('{ref}'))", "unit", {"group": terms}
        )
        f_stat, pval = tests["group"]
        return [
            {
                "model": model,
                "scenario_id": scenario_id,
                "effect": "group",
                "f_stat": f_stat,
                "pval": pval,
                "test": ts.PAPER_WALD_F,
                "n": n,
            }
        ]
    groups = valid["group"].astype(str).to_numpy()
    split = _race_gender(sorted(set(groups))) if n else None
    fixed = valid["scenario"].to_numpy() if pooled else None
    if split is None:
        x, blocks = ts.factor_design({"group": groups}, {"group": ref}, fixed=fixed)
    else:
        race = {g: r for g, r in zip(sorted(set(groups)), split[0])}
        gender = {g: r for g, r in zip(sorted(set(groups)), split[1])}
        rr, rg = ref.rsplit("-", 1) if "-" in ref else (split[0][0], split[1][0])
        x, blocks = ts.factor_design(
            {"race": [race[g] for g in groups], "gender": [gender[g] for g in groups]},
            {"race": rr, "gender": rg},
            ("race", "gender"),
            fixed=fixed,
        )
        blocks = {"group": sorted(i for b in blocks.values() for i in b), **blocks}
    res = ts.wild_cluster_wald(
        valid["value"].to_numpy(float),
        x,
        valid["unit"].to_numpy(),
        blocks,
        n_boot=n_boot,
        seed=seed,
    )
    return [
        {
            "model": model,
            "scenario_id": scenario_id,
            "effect": name,
            "f_stat": f,
            "pval": p,
            "test": ts.WILD_CLUSTER,
            "n": n,
        }
        for name, (f, p, _) in res.items()
    ]


def salary_pooled_tests(
    answers: Sequence[tuple[int, pd.DataFrame]],
    model: str,
    ref: str,
    *,
    n_boot: int = 500,
    seed: int = 0,
    simulated: bool = False,
) -> pd.DataFrame:
    """``reflect_salary_tests`` pooled over occupations (``scenario_id`` 0; the paper's pooled
    row of Table 3): ``answers`` the (scenario id, answer table) of every numeric scenario,
    the tests of :func:`salary_test_rows` with occupation (scenario) fixed effects."""
    valid = pd.concat(
        [a.dropna(subset=["value"]).assign(scenario=sid) for sid, a in answers], ignore_index=True
    )
    rows = salary_test_rows(valid, model, 0, ref, n_boot=n_boot, seed=seed, pooled=True)
    return _frame("reflect_salary_tests", rows, simulated)


def vignette_tables(
    options: pd.DataFrame,
    model: str,
    scenario_id: int,
    *,
    n_boot: int = 500,
    seed: int = 0,
    simulated: bool = False,
    paper_tests: bool = False,
) -> dict[str, pd.DataFrame]:
    """``vignette_selection``, ``vignette_log_odds`` and ``vignette_pair_comp`` (its ``pval``:
    the instance-clustered test, the paper's pooled Fisher test with ``paper_tests``).

    ``options``: one row per (answer, identity shown) with ``unit``, ``identity``,
    ``partner``, ``activity`` and ``selected`` (invalid answers left out).
    """
    sel = ts.selection_frequency(options)
    units = sorted(options["unit"].unique())
    rows = []
    activities = sorted(options["activity"].unique())
    for ident, s in sel.items():
        g = options[options["identity"] == ident]
        acts = [a for a in activities if (g["activity"] == a).any()]
        # per unit: (selected, shown) per activity; S is the mean of the activities' shares
        per = np.concatenate(
            [
                g[g["activity"] == a]
                .assign(one=1)
                .groupby("unit")[["selected", "one"]]
                .sum()
                .reindex(units, fill_value=0)
                .to_numpy(float)
                for a in acts
            ],
            axis=1,
        )
        lo, hi = _ratio_ci(per, _macro_share, n_boot, seed)
        rows.append(
            {
                "model": model,
                "scenario_id": scenario_id,
                "identity": ident,
                "selection_frequency": float(s),
                "ci_low": lo,
                "ci_high": hi,
                "n": len(g),
            }
        )
    lo_df = ts.log_odds(options).assign(model=model)
    pc_df = ts.pair_comp(options, paper_tests=paper_tests).assign(model=model)
    return {
        "vignette_selection": _frame("vignette_selection", rows, simulated),
        "vignette_log_odds": _frame("vignette_log_odds", lo_df.to_dict("records"), simulated),
        "vignette_pair_comp": _frame("vignette_pair_comp", pc_df.to_dict("records"), simulated),
    }


def _macro_share(x: np.ndarray) -> float:
    """100 x the mean over activities of selected / shown (pairs of columns of ``x``)."""
    sel, shown = x[0::2], x[1::2]
    return 100 * float(np.mean(sel / shown)) if (shown > 0).all() else math.nan


def polarity_counts(high: pd.DataFrame, low: pd.DataFrame, trait_pair: str) -> pd.DataFrame:
    """The counts :func:`polarity_table` reads, one row per (identity, unit): ``high``/``low``
    are the option tables (``unit``, ``identity``, ``selected``) of the trait pair's high- and
    low-valence term; a unit missing from one term counts 0 there."""

    def per(opts: pd.DataFrame) -> pd.DataFrame:
        return opts.groupby(["identity", "unit"])["selected"].agg(["sum", "count"])

    both = per(high).join(per(low), how="outer", lsuffix="_h", rsuffix="_l").fillna(0)
    return pd.DataFrame(
        {
            "identity": both.index.get_level_values("identity"),
            "trait_pair": trait_pair,
            "unit": both.index.get_level_values("unit"),
            **{
                f"{x}_{v}": both[f"{c}_{v[0]}"].astype(int).to_numpy()
                for v in ("high", "low")
                for x, c in (("x", "sum"), ("n", "count"))
            },
        }
    )


def polarity_table(counts: pd.DataFrame, model: str, *, simulated: bool = False) -> pd.DataFrame:
    """``vignette_polarity`` from ``counts``: ``identity``, ``trait_pair``, ``x_high``,
    ``n_high``, ``x_low``, ``n_low`` (selections and appearances per valence), one row per
    sampling unit when a ``unit`` column is given (the strata of the exact test), else one
    row per identity and trait pair."""
    rows = []
    for (ident, pair), g in counts.groupby(["identity", "trait_pair"], sort=True):
        s, p, p_fisher = ts.polarity(g["x_high"], g["n_high"], g["x_low"], g["n_low"])
        rows.append(
            {
                "model": model,
                "identity": ident,
                "trait_pair": pair,
                "polarity": s,
                "pval": p,
                "pval_fisher": p_fisher,
                "n": int(g["n_high"].sum() + g["n_low"].sum()),
            }
        )
    return _frame("vignette_polarity", rows, simulated)


def text_vs_image_table(
    image: pd.DataFrame,
    text: pd.DataFrame,
    model: str,
    scenario_id: int,
    *,
    simulated: bool = False,
    paper_tests: bool = False,
) -> pd.DataFrame:
    """``vignette_text_vs_image``: per identity, the share of valid answers choosing it with the
    image and in the text-only ablation, their difference and its test: by default clustered
    by ``unit`` (the instance; :func:`~.stats.cluster_diff_test`, ``z`` its t), with
    ``paper_tests`` the paper's pooled two-proportion z-test.

    ``image``/``text``: option tables as for :func:`vignette_tables` (``identity``,
    ``selected``, ``unit``) of the same question asked both ways.
    """
    rows = []
    for ident in sorted(set(image["identity"]) | set(text["identity"])):
        a, b = image[image["identity"] == ident], text[text["identity"] == ident]
        x1, n1, x2, n2 = int(a["selected"].sum()), len(a), int(b["selected"].sum()), len(b)
        if not (n1 and n2):
            continue
        if paper_tests or "unit" not in a or "unit" not in b:
            (z, p), test = ts.two_proportion_z(x1, n1, x2, n2), ts.PAPER_Z
        else:
            ca = a.groupby("unit")["selected"].agg(["sum", "count"])
            cb = b.groupby("unit")["selected"].agg(["sum", "count"])
            both = ca.join(cb, how="outer", lsuffix="_i", rsuffix="_t").fillna(0)
            _, z, p = ts.cluster_diff_test(
                both["sum_i"], both["count_i"], both["sum_t"], both["count_t"]
            )
            test = ts.CLUSTER_T
        rows.append(
            {
                "model": model,
                "scenario_id": scenario_id,
                "identity": ident,
                "share_image": x1 / n1,
                "share_text": x2 / n2,
                "delta": x1 / n1 - x2 / n2,
                "z": z,
                "pval": p,
                "test": test,
                "n": n1 + n2,
            }
        )
    return _frame("vignette_text_vs_image", rows, simulated)
