"""The contract for every table the ``analyze`` stage writes: one registry, one column vocabulary.

Each table under ``reports/tables/`` has one :class:`TableSpec` here: its file, a description,
its key columns and its columns, every one drawn from :data:`VOCABULARY` -- so a name means the
same quantity (and has the same type and range) in every table: ``sbs`` is always a mean
Delta of a group of faces (the paper's SBS), ``ci_low``/``ci_high`` its bootstrap interval,
``pval``/``pval_corr`` the raw and corrected p-value, ``model_x``/``model_y`` the two models of a
pair, and so on. The pandera schema of a table is built from its spec (:func:`schema`).

The writer (:func:`write_table`, used by :mod:`stylisticbias.analysis.run`) validates every
table against its schema before writing it and refuses a table that is not registered; the
report reads every table through :func:`read_table`; tests check that the registry covers
exactly the files the analysis writes. docs/statistics.md explains each column in prose.

Its length is the list itself: one declarative :class:`TableSpec` per table plus the
vocabulary they share, and the few functions that read them. It holds one purpose and stays one
module (a new table is one entry here), although it is longer than the 400 lines other modules
are split at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pandera.pandas as pa

from stylisticbias.errors import StylisticBiasError
from stylisticbias.outputs import atomic_path
from stylisticbias.registry import Registry
from stylisticbias.schemas import validate

#: Dimensions of the demographic tables (the paper's names; ``body`` is the body type).
DIMENSIONS: tuple[str, ...] = ("age", "gender", "ethnicity", "body")


@dataclass(frozen=True)
class Col:
    """One word of the column vocabulary: its type, whether it may be empty, its checks."""

    dtype: str  # "str" | "float" | "int" | "bool" | "count" (a float or int number)
    doc: str
    nullable: bool = True
    checks: tuple[pa.Check, ...] = ()

    def column(self, required: bool = True) -> pa.Column:
        """The pandera column (CSV-tolerant: integers that may be empty read as floats)."""
        if self.dtype in ("float", "count"):  # numbers keep their dtype: int64 stays int64
            return pa.Column(
                None, [_NUMERIC, *self.checks], nullable=self.nullable, required=required
            )
        dtype = {"str": str, "int": "int64", "bool": bool}[self.dtype]
        return pa.Column(
            dtype, list(self.checks), nullable=self.nullable, required=required, coerce=True
        )


_NUMERIC = pa.Check(
    lambda s: (
        bool(s.isna().all())  # an empty table or an all-empty column has no type
        or (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s))
    ),
    element_wise=False,
    name="is_numeric",
)
#: Floating-point slack of the range checks (a cumulative share may sum to 1 + 2e-16).
EPS = 1e-9
_P = (pa.Check.in_range(-EPS, 1.0 + EPS),)
_SHARE = _P
_UNIT = _P
_SIGNED = (pa.Check.in_range(-1.0 - EPS, 1.0 + EPS),)
_COUNT = (pa.Check.ge(-EPS),)
_DIM = (pa.Check.isin([*DIMENSIONS, ""]),)  # "" (or empty) = not by dimension

#: The one column vocabulary of the analysis tables.
VOCABULARY: dict[str, Col] = {
    # --- keys ---
    "model": Col(
        "str",
        "judged model (display name); All = pooled over models, Average = "
        "the paper's mean of the model rows",
        nullable=False,
    ),
    "model_x": Col("str", "first model of a pair (all = every model)", nullable=False),
    "model_y": Col("str", "second model of a pair (all = every model)", nullable=False),
    "scenario_id": Col(
        "int", "scenario number (Table 1); 0 = all scenarios", nullable=False, checks=_COUNT
    ),
    "scenario_category": Col("str", "scenario category (Table 1)"),
    "positive": Col("str", "the scenario's positive pole"),
    "negative": Col("str", "the scenario's negative pole"),
    "category": Col("str", "attribute category of a variation (Table 10); all = every one"),
    "attribute": Col("str", "attribute of a variation"),
    "value": Col("str", "value of the attribute (a variation)"),
    "variation": Col("str", "variation label as the paper prints it"),
    "dimension": Col("str", "demographic dimension: age, gender, ethnicity, body", checks=_DIM),
    "group": Col("str", "demographic group within the dimension (or elderly_minus_young)"),
    "group_abbrev": Col("str", "the group's Table 12 column abbreviation"),
    "measure": Col(
        "str", "agreement measure (spearman, kendall_w, icc_2_1, icc_3_1)", nullable=False
    ),
    "term": Col("str", "a mixed-model fixed effect, variance component or R^2", nullable=False),
    "factor": Col("str", "the factor an effect size belongs to", nullable=False),
    "model_kind": Col(
        "str",
        "mixed (face x category means; mixed_cluster_wald: its face-clustered Wald F, the "
        "default) or one_way (face means)",
    ),
    "method": Col(
        "str",
        "how the model was fitted (mixedlm, or ols at face variance 0); +cr1_face: SE and p "
        "face-clustered (CR1, t on faces - 1 df; the default)",
    ),
    "pair": Col("str", "a positive/negative variation pair", nullable=False),
    "table": Col("str", "the paper table a test belongs to", nullable=False),
    "cohens_d_pooled": Col("float", "Cohen's d of two groups of faces (pooled SD, ddof 1)"),
    "group_x": Col("str", "first group of a two-group comparison"),
    "group_y": Col("str", "second group of a two-group comparison"),
    "positive_variation": Col("str", "the pair's positive variation (attribute / value)"),
    "negative_variation": Col("str", "the pair's negative variation (attribute / value)"),
    "metric": Col("str", "quantity compared (sbs, zero_rate, ...)", nullable=False),
    "test": Col("str", "the statistical test used", nullable=False),
    "rank": Col("int", "rank by |SBS| (1 = largest)", nullable=False, checks=(pa.Check.ge(1),)),
    # --- effects ---
    "sbs": Col(
        "float",
        "SBS: mean Delta over the group's (face, scenario) cells",
        checks=_SIGNED,
    ),
    "abs_sbs": Col("float", "|SBS| of the group", checks=_UNIT),
    "mean_abs_delta": Col("float", "mean |Delta| over the group's cells", checks=_UNIT),
    "cum_abs_sbs": Col("float", "cumulative |SBS| in rank order", checks=_COUNT),
    "cum_share": Col("float", "cumulative share of the total |SBS|", checks=_SHARE),
    "mean_sbs": Col("float", "mean over models of the per-model SBS"),
    "delta": Col(
        "float",
        "Table 12: mean Delta of a variation within one demographic group",
        checks=_SIGNED,
    ),
    "abs_delta": Col("float", "|delta|", checks=_UNIT),
    "vs": Col(
        "float", "VS: mean over scenarios of the std of group mean phi (Table 2)", checks=_COUNT
    ),
    "vs_debiased": Col("float", "VS minus its noise floor"),
    "range_low": Col(
        "float",
        "lower end of the paper VS's face-bootstrap range (not a confidence interval)",
        checks=_COUNT,
    ),
    "range_high": Col(
        "float",
        "upper end of the paper VS's face-bootstrap range (not a confidence interval)",
        checks=_COUNT,
    ),
    "noise_floor": Col("float", "VS expected from sampling error alone", checks=_COUNT),
    "cohens_d": Col("float", "Cohen's d of the face-level mean shifts (Table 7)"),
    "zero_rate": Col("float", "share of |Delta| <= zero_tol (Table 7)", checks=_SHARE),
    "large_shift_rate": Col("float", "share of |Delta| >= large_shift (Table 7)", checks=_SHARE),
    "pct_scenarios_significant": Col(
        "float",
        "percent of scenarios with a significant demographic effect (Table 11)",
        checks=(pa.Check.in_range(0.0, 100.0),),
    ),
    "variance": Col("float", "cross-model variance of the per-scenario SBS", checks=_COUNT),
    "sd": Col("float", "cross-model sd of the per-scenario SBS", checks=_COUNT),
    "slope": Col("float", "OLS slope of model_y on model_x"),
    "intercept": Col("float", "OLS intercept of model_y on model_x"),
    "r": Col("float", "Pearson r", checks=_SIGNED),
    "estimate": Col("float", "the agreement measure's value"),
    "statistic": Col("float", "the test statistic"),
    "share": Col("float", "share of responses choosing the first / letter-a option", checks=_SHARE),
    "bias": Col("float", "share - 0.5"),
    "invalid_rate": Col("float", "share of invalid responses", checks=_SHARE),
    "undecided_mean": Col("float", "mean undecided (pruned) mass per row", checks=_SHARE),
    "undecided_max": Col("float", "largest undecided mass of a row", checks=_SHARE),
    "sbs_low": Col("float", "SBS had all undecided mass gone negative"),
    "sbs_high": Col("float", "SBS had all undecided mass gone positive"),
    "max_shift": Col("float", "largest possible move of any SBS by undecided mass", checks=_COUNT),
    "paper": Col("float", "value under the paper's 12-draw estimator"),
    "exact": Col("float", "value under the exact expectation"),
    "difference": Col("float", "paper - exact"),
    # --- uncertainty and tests ---
    "ci_low": Col("float", "lower bound of the bootstrap CI (analysis.ci)"),
    "ci_high": Col("float", "upper bound of the bootstrap CI (analysis.ci)"),
    "d_ci_low": Col("float", "lower bound of the CI of cohens_d"),
    "d_ci_high": Col("float", "upper bound of the CI of cohens_d"),
    "debiased_ci_low": Col("float", "lower bound of the CI of vs_debiased"),
    "debiased_ci_high": Col("float", "upper bound of the CI of vs_debiased"),
    "pval": Col("float", "p-value", checks=_P),
    "pval_corr": Col(
        "float", "p-value corrected within its family (analysis.correction)", checks=_P
    ),
    "significance": Col("str", "the paper's mark: p<strong_alpha, p<alpha, ns; empty = untested"),
    "significant": Col("bool", "pval_corr < analysis.alpha", nullable=False),
    "applicable": Col("bool", "the variation applies to the group (Table 12)", nullable=False),
    "top_quartile": Col("bool", "variance in the top disagreement_quantile", nullable=False),
    "within_threshold": Col(
        "bool", "rank within the pareto_share of cumulative |SBS|", nullable=False
    ),
    # --- sizes ---
    "n": Col("count", "number of (face, scenario) cells or responses", checks=_COUNT),
    "n_faces": Col("count", "number of faces", checks=_COUNT),
    "n_cells": Col("count", "number of Table 12 cells averaged", checks=_COUNT),
    "n_groups": Col("count", "number of demographic groups", checks=_COUNT),
    "n_scenarios": Col("count", "number of scenarios", checks=_COUNT),
    "n_tested": Col("count", "number of scenarios tested", checks=_COUNT),
    "n_scenarios_significant_derived": Col(
        "float", "number of significant scenarios", checks=_COUNT
    ),
    "n_models": Col("int", "number of models", nullable=False, checks=_COUNT),
    "n_rows": Col("int", "number of score rows", nullable=False, checks=_COUNT),
    "n_excluded": Col("int", "rows excluded for undecided mass", nullable=False, checks=_COUNT),
    "n_variations_threshold": Col(
        "int", "variations reaching pareto_share of |SBS|", nullable=False, checks=_COUNT
    ),
    "sign_reversals": Col(
        "int",
        "scenarios whose SBS changes sign between the two models",
        nullable=False,
        checks=_COUNT,
    ),
    "std_err": Col("float", "standard error of the estimate", checks=_COUNT),
    "partial_eta2": Col("float", "partial eta squared: SS / (SS + SSR_full)", checks=_UNIT),
    "df_num": Col("count", "numerator degrees of freedom of F", checks=_COUNT),
    "df_den": Col("count", "denominator degrees of freedom of F", checks=_COUNT),
    "median_abs_pos": Col("float", "median |Delta| of the positive variation", checks=_UNIT),
    "median_abs_neg": Col("float", "median |Delta| of the negative variation", checks=_UNIT),
    "ratio": Col("float", "median |Delta_neg| / median |Delta_pos|", checks=_COUNT),
    "mean_phi": Col("float", "mean phi over the base faces", checks=_UNIT),
    "phi_sd": Col("float", "SD (ddof 1) of phi over the base faces", checks=_COUNT),
    "z": Col("float", "|mean phi - 0.5| / (SD / sqrt(n))", checks=_COUNT),
    "flagged": Col("bool", "z >= 3.29, |mean phi - 0.5| >= 0.20 and n >= 50", nullable=False),
    "n_flagged": Col("count", "number of flagged cells", checks=_COUNT),
    "bias_rate": Col("float", "share of screened cells flagged", checks=_SHARE),
    "tail_rate_50": Col("float", "share of Delta rows with |Delta| >= 0.5", checks=_SHARE),
    "tail_rate_75": Col("float", "share of Delta rows with |Delta| >= 0.75", checks=_SHARE),
    "simulated": Col("bool", "the row comes from a simulated judge", nullable=False),
    # --- paired-variation protocols (statistics.suite: paired_variation) ---
    "subcategory": Col("str", "the scenario's subcategory (the protocol's results grouping)"),
    "halo": Col("bool", "the scenario is tagged statistics.halo_tag", nullable=False),
    "axis": Col("str", "demographic axis as the protocol names it (gender, age, race)"),
    "bias_test": Col("str", "which bias: variation (base vs variation) or a demographic axis"),
    "unit": Col(
        "str",
        "what one observation of the test is: person (one value per person) or "
        "image (every image as if independent, the paper's pooling)",
    ),
    "n_base": Col("count", "base images with a valid phi", checks=_COUNT),
    "n_variation": Col("count", "variation images with a valid phi", checks=_COUNT),
    "mean_base": Col("float", "mean phi of the base images", checks=_UNIT),
    "mean_base_low": Col("float", "lower bootstrap bound of mean_base (faces resampled)"),
    "mean_base_high": Col("float", "upper bootstrap bound of mean_base"),
    "mean_variation": Col("float", "mean phi of the variation images", checks=_UNIT),
    "mean_variation_low": Col("float", "lower bootstrap bound of mean_variation"),
    "mean_variation_high": Col("float", "upper bootstrap bound of mean_variation"),
    "shift": Col("float", "mean_variation - mean_base", checks=_SIGNED),
    "shift_low": Col("float", "lower bootstrap bound of shift (faces resampled)"),
    "shift_high": Col("float", "upper bootstrap bound of shift"),
    "mean": Col("float", "mean phi of the group", checks=_UNIT),
    "mean_low": Col("float", "lower bootstrap bound of mean (faces resampled)"),
    "mean_high": Col("float", "upper bootstrap bound of mean"),
    "h": Col("float", "Kruskal-Wallis H (tie-corrected; empty when every phi is equal)"),
    "significant_alpha": Col(
        "bool",
        "pval (pval_bonferroni where given) < the protocol's statistics.alpha",
        nullable=False,
    ),
    "direction": Col("str", "which kind of image has the higher mean phi (or tie)"),
    "highest_group": Col("str", "group with the highest mean phi"),
    "lowest_group": Col("str", "group with the lowest mean phi"),
    "group_stereotyped": Col("str", "the group the stereotyped choice is stereotyped towards"),
    "group_other": Col("str", "the other choice's group (others = every other group)"),
    "mean_stereotyped_group": Col("float", "mean phi of group_stereotyped", checks=_UNIT),
    "mean_other_group": Col("float", "mean phi of group_other", checks=_UNIT),
    "stereotyped_direction": Col(
        "bool",
        "significant and group_stereotyped leans to the stereotyped choice",
        nullable=False,
    ),
    "group_a": Col("str", "first group of a pair"),
    "group_b": Col("str", "second group of a pair"),
    "mean_h_a": Col("float", "mean over scenarios of group_a's H"),
    "mean_h_b": Col("float", "mean over scenarios of group_b's H"),
    "mean_h_base": Col("float", "mean over scenarios of H on the base images"),
    "mean_h_variation": Col("float", "mean over scenarios of H on the variation images"),
    "stronger": Col("str", "the group with the larger effect (official: mean H), or tie"),
    "pval_bonferroni": Col("float", "pval x n_comparisons, capped at 1", checks=_P),
    "n_comparisons": Col("count", "size of the Bonferroni family", checks=_COUNT),
    "n_significant": Col("count", "number of significant scenarios", checks=_COUNT),
    "n_halo": Col("count", "significant scenarios leaning to the stereotyped trait", checks=_COUNT),
    "n_opposite": Col("count", "significant scenarios leaning the other way", checks=_COUNT),
    "halo_rate": Col("float", "n_halo / n_scenarios (halo-tagged scenarios)", checks=_SHARE),
    "halo_rate_low": Col(
        "float",
        "lower confidence bound (halo_interval says of what: default "
        "the share of tagged scenarios with a positive true shift; official "
        "a face-bootstrap bound of halo_rate)",
    ),
    "halo_rate_high": Col("float", "upper confidence bound (see halo_rate_low)"),
    "halo_interval": Col("str", "what halo_rate_low/high bound and how", nullable=False),
    "effect_a": Col("float", "group_a's mean oriented edit effect per person (phi scale)"),
    "effect_b": Col("float", "group_b's mean oriented edit effect per person (phi scale)"),
    "significant_rate": Col("float", "n_significant / n_scenarios", checks=_SHARE),
    "share_significant": Col("float", "share of the scenarios that are significant", checks=_SHARE),
}

#: Columns of every SBS profile table after its keys.
SBS_STATS: tuple[str, ...] = (
    "sbs",
    "abs_sbs",
    "mean_abs_delta",
    "ci_low",
    "ci_high",
    "pval",
    "pval_corr",
    "n",
    "n_faces",
)
_TEST = ("significance", "ci_low", "ci_high", "pval", "pval_corr", "n")


@dataclass(frozen=True)
class TableSpec:
    """One table the analysis writes to ``reports/tables/<name>.csv``.

    ``columns`` are vocabulary words in the order written (long tables). ``written`` says when
    the table has rows: ``always``, ``two_models`` (cross-model tables: written, empty, for one
    model), ``judgments`` (response diagnostics: written only when judgment tables exist),
    ``estimators`` (written when the scores carry both estimators).
    Paper-layout tables (``layout=True``) hold printed cells under the paper's headers, given in
    ``columns`` (``open_columns``: further headers come from the benchmark or the settings).
    """

    name: str
    description: str
    keys: tuple[str, ...]
    columns: tuple[str, ...]
    written: str = "always"
    paper_table: str | None = None  # "Table 2" ...
    layout: bool = False
    open_columns: bool = False

    @property
    def file(self) -> str:
        """The file name under reports/tables/."""
        return f"{self.name}.csv"

    @property
    def built_columns(self) -> list[str]:
        """The columns a table builder returns, in order: all but ``simulated`` (added when the
        tables are labelled for writing)."""
        return [c for c in self.columns if c != "simulated"]


def _long(
    name: str, description: str, keys: Iterable[str], stats: Iterable[str], **kw: object
) -> TableSpec:
    keys = tuple(keys)
    return TableSpec(name, description, keys, (*keys, *stats, "simulated"), **kw)  # type: ignore[arg-type]


_SCEN = ("scenario_id", "scenario_category", "positive", "negative")

TABLES: tuple[TableSpec, ...] = (
    # --- the paper's tables, long (the reference CSVs' format) ---
    _long(
        "vs_by_model",
        "VS per model and demographic dimension (Average rows)",
        ("model", "dimension"),
        (
            "vs",
            "significance",
            "range_low",
            "range_high",
            "pval",
            "pval_corr",
            "n",
            "n_groups",
            "n_scenarios",
            "vs_debiased",
            "debiased_ci_low",
            "debiased_ci_high",
            "noise_floor",
        ),
        paper_table="Table 2",
    ),
    _long(
        "sbs_category_by_demographic",
        "SBS per attribute category and dimension",
        ("category", "dimension"),
        ("sbs", *_TEST, "n_faces", "n_cells"),
        paper_table="Table 3",
    ),
    _long(
        "sbs_fashion_by_age",
        "SBS per fashion style and age group (+ elderly_minus_young)",
        ("variation", "group"),
        ("sbs", *_TEST),
        paper_table="Table 4",
    ),
    _long(
        "tattoo_sbs",
        "Facial tattoo SBS per demographic group",
        ("variation", "dimension", "group"),
        ("sbs", *_TEST),
        paper_table="Table 5",
    ),
    _long(
        "sbs_fashion_by_body",
        "SBS per fashion style and body type",
        ("variation", "group"),
        ("sbs", *_TEST),
        paper_table="Table 6",
    ),
    _long(
        "per_model_effects",
        "overall SBS, Cohen's d, zero and large-shift shares per model",
        ("model",),
        (
            "sbs",
            "cohens_d",
            "zero_rate",
            "large_shift_rate",
            "ci_low",
            "ci_high",
            "d_ci_low",
            "d_ci_high",
            "pval",
            "pval_corr",
            "n",
            "n_faces",
        ),
        paper_table="Table 7",
    ),
    _long(
        "significance_rate_by_model",
        "share of scenarios with a significant demographic effect",
        ("model", "dimension"),
        ("pct_scenarios_significant", "n_scenarios_significant_derived", "n_scenarios", "n_tested"),
        paper_table="Table 11",
    ),
    _long(
        "shift_by_variation_demographic",
        "mean Delta per variation x demographic group",
        ("category", "variation", "dimension", "group"),
        (
            "group_abbrev",
            "delta",
            "significance",
            "applicable",
            "ci_low",
            "ci_high",
            "pval",
            "pval_corr",
            "n",
            "n_faces",
            "abs_delta",
            "mean_abs_delta",
            "attribute",
            "value",
        ),
        paper_table="Table 12",
    ),
    # --- tests behind Table 11 ---
    _long(
        "demographic_tests",
        "per model x dimension x scenario test of the base faces",
        ("model", "dimension", "scenario_id"),
        ("test", "statistic", "n_groups", "n", "pval", "pval_corr", "significant"),
    ),
    # --- beyond the paper: SBS profiles (per model and model = All) ---
    _long("sbs_overall", "overall SBS per model", ("model",), SBS_STATS),
    _long(
        "sbs_by_scenario",
        "SBS per model and scenario (Figs. 3, 4, 8)",
        ("model", *_SCEN),
        SBS_STATS,
    ),
    _long(
        "sbs_by_scenario_category_model",
        "SBS per model and scenario category (Fig. 5)",
        ("model", "scenario_category"),
        SBS_STATS,
    ),
    _long(
        "sbs_by_category_model",
        "SBS per model and attribute category (Fig. 6)",
        ("model", "category"),
        SBS_STATS,
    ),
    _long(
        "sbs_by_variation_model",
        "SBS per model and variation",
        ("model", "category", "variation", "attribute", "value"),
        SBS_STATS,
    ),
    _long(
        "pareto",
        "variations by |SBS| with the cumulative share (Fig. 2)",
        ("model", "rank"),
        (
            "variation",
            "category",
            "abs_sbs",
            "cum_abs_sbs",
            "cum_share",
            "within_threshold",
            "n_variations_threshold",
        ),
    ),
    _long(
        "cross_model_variance",
        "cross-model variance of the per-scenario SBS (Fig. 7)",
        _SCEN,
        ("variance", "sd", "mean_sbs", "n_models", "top_quartile"),
        written="two_models",
    ),
    _long(
        "model_pair_regressions",
        "OLS of one model's per-scenario SBS on another's (Fig. 8)",
        ("model_x", "model_y"),
        (
            "slope",
            "intercept",
            "r",
            "pval",
            "pval_corr",
            "ci_low",
            "ci_high",
            "n",
            "sign_reversals",
        ),
        written="two_models",
    ),
    _long(
        "profile_agreement",
        "agreement of the models' variation profiles",
        ("measure", "model_x", "model_y"),
        ("estimate", "ci_low", "ci_high", "statistic", "pval", "pval_corr", "n"),
        written="two_models",
    ),
    # --- beyond the paper: the released code's analyses (analysis/official_analyses/) ---
    _long(
        "mixed_model",
        "random-intercept model of Delta: fixed effects, variance components, R^2",
        ("term",),
        ("estimate", "std_err", "pval", "method", "n", "n_faces"),
    ),
    _long(
        "effect_sizes",
        "partial eta^2 of variation/scenario category (nested OLS) and demographics (one-way)",
        ("factor",),
        (
            "model_kind",
            "partial_eta2",
            "ci_low",
            "ci_high",
            "statistic",
            "df_num",
            "df_den",
            "pval",
            "pval_corr",
            "n",
        ),
    ),
    _long(
        "negativity_asymmetry",
        "|Delta| of negative vs positive variation pairs (one-sided Wilcoxon)",
        ("pair",),
        (
            "positive_variation",
            "negative_variation",
            "n_faces",
            "median_abs_pos",
            "median_abs_neg",
            "ratio",
            "ci_low",
            "ci_high",
            "statistic",
            "pval",
            "pval_corr",
        ),
    ),
    _long(
        "scenario_agreement",
        "agreement of the models' per-scenario SBS (Kendall's W, ICC, Spearman)",
        ("measure", "model_x", "model_y"),
        ("estimate", "ci_low", "ci_high", "statistic", "pval", "pval_corr", "n"),
        written="two_models",
    ),
    _long(
        "interaction_tests",
        "style x demographic interaction tests behind Tables 4-6",
        ("table", "test", "variation", "dimension"),
        (
            "group_x",
            "group_y",
            "statistic",
            "df_num",
            "df_den",
            "partial_eta2",
            "cohens_d_pooled",
            "pval",
            "pval_corr",
            "n",
            "n_faces",
        ),
    ),
    _long(
        "base_preference",
        "absolute-preference screen of the base faces per model and scenario",
        ("model", "scenario_id"),
        ("mean_phi", "phi_sd", "n", "z", "flagged"),
    ),
    _long(
        "preference_summary",
        "bias rate of the screen and |Delta| tail rates per model",
        ("model",),
        ("n_cells", "n_flagged", "bias_rate", "tail_rate_50", "tail_rate_75", "n"),
    ),
    _long(
        "undecided_mass",
        "undecided (pruned) answer mass and the SBS range it allows",
        ("model", "category"),
        (
            "undecided_mean",
            "undecided_max",
            "n_rows",
            "n_excluded",
            "sbs",
            "sbs_low",
            "sbs_high",
            "max_shift",
            "n",
        ),
    ),
    _long(
        "estimator_comparison",
        "the paper's 12-draw estimator next to the exact one",
        ("model", "metric", "dimension"),
        ("paper", "exact", "difference"),
        written="estimators",
    ),
    # --- response diagnostics ---
    _long(
        "position_bias",
        "share of first-position choices",
        ("model",),
        ("share", "bias", "ci_low", "ci_high", "pval", "n", "n_faces", "pval_corr"),
        written="judgments",
    ),
    _long(
        "letter_bias",
        "share of letter-a choices",
        ("model",),
        ("share", "bias", "ci_low", "ci_high", "pval", "n", "n_faces", "pval_corr"),
        written="judgments",
    ),
    _long(
        "invalid_rates",
        "invalid-response rate per model and scenario (0 = all)",
        ("model", "scenario_id"),
        ("invalid_rate", "ci_low", "ci_high", "n", "n_faces"),
        written="judgments",
    ),
    # --- the paper's layout (printed cells with the paper's marks) ---
    TableSpec(
        "table02_vs",
        "Table 2 as printed",
        ("Model",),
        ("Model", "Age", "Body", "Ethn.", "Gender"),
        paper_table="Table 2",
        layout=True,
    ),
    TableSpec(
        "table03_sbs_category",
        "Table 3 as printed",
        ("Category",),
        ("Category", "Age", "Gender", "Ethn.", "Body"),
        paper_table="Table 3",
        layout=True,
    ),
    TableSpec(
        "table04_fashion_age",
        "Table 4 as printed",
        ("Style",),
        ("Style", "Young", "Middle-aged", "Elderly", "Y-E"),
        paper_table="Table 4",
        layout=True,
    ),
    TableSpec(
        "table05_tattoo",
        "Table 5 as printed",
        ("Variation", "Dim.", "Group"),
        ("Variation", "Dim.", "Group", "SBS"),
        paper_table="Table 5",
        layout=True,
    ),
    TableSpec(
        "table06_fashion_body",
        "Table 6 as printed (one column per body type)",
        ("Variation",),
        ("Variation",),
        paper_table="Table 6",
        layout=True,
        open_columns=True,
    ),
    TableSpec(
        "table07_model_effects",
        "Table 7 as printed (+ the |Δ| ≥ large_shift share)",
        ("Model",),
        ("Model", "SBS", "Cohen's d", "Zero"),
        paper_table="Table 7",
        layout=True,
        open_columns=True,
    ),
    TableSpec(
        "table11_significance_rate",
        "Table 11 as printed",
        ("Model",),
        ("Model", "Age", "Body Type", "Ethnicity", "Gender"),
        paper_table="Table 11",
        layout=True,
    ),
    TableSpec(
        "table12_shift",
        "Table 12 as printed (one column per group abbreviation)",
        ("Category", "Variation"),
        ("Category", "Variation"),
        paper_table="Table 12",
        layout=True,
        open_columns=True,
    ),
)

_PAIRED_SCEN = ("scenario_id", "scenario_category", "subcategory", "positive", "negative")

#: The tables of a paired-variation protocol (``statistics.suite: paired_variation``,
#: :mod:`stylisticbias.families.paired_variation.analysis`); written instead of :data:`TABLES`.
PAIRED_TABLES: tuple[TableSpec, ...] = (
    _long(
        "paired_variation_bias",
        "per scenario: the variation test (signed-rank of within-person differences; paper: "
        "Kruskal-Wallis of base vs variation images), H, shift (Tables 10-16)",
        ("model", *_PAIRED_SCEN),
        (
            "halo",
            "test",
            "unit",
            "n_base",
            "n_variation",
            "mean_base",
            "mean_base_low",
            "mean_base_high",
            "mean_variation",
            "mean_variation_low",
            "mean_variation_high",
            "shift",
            "shift_low",
            "shift_high",
            "h",
            "pval",
            "significant_alpha",
            "direction",
        ),
        paper_table="Tables 10-16",
    ),
    _long(
        "paired_halo",
        "halo rate over the halo-tagged scenarios (the paper's), with a confidence interval "
        "(default: of the share with a positive true shift) (Table 2)",
        ("model",),
        (
            "n_scenarios",
            "n_significant",
            "n_halo",
            "n_opposite",
            "halo_rate",
            "halo_rate_low",
            "halo_rate_high",
            "halo_interval",
            "significant_rate",
        ),
        paper_table="Table 2",
    ),
    _long(
        "paired_category_rates",
        "share of significant scenarios per (sub)category and bias (Tables 2, 31-33)",
        ("model", "bias_test", "scenario_category", "subcategory"),
        ("n_scenarios", "n_significant", "share_significant"),
        paper_table="Tables 2, 31-33",
    ),
    _long(
        "paired_group_tests",
        "per scenario and axis: Kruskal-Wallis between the axis's groups of person means of phi "
        "(paper: of all images pooled)",
        ("model", "scenario_id", "axis"),
        (
            "test",
            "unit",
            "n_groups",
            "h",
            "pval",
            "significant_alpha",
            "highest_group",
            "lowest_group",
        ),
        paper_table="Tables 3, 31-33",
    ),
    _long(
        "paired_group_means",
        "per scenario, axis and group: mean phi with its bootstrap CI",
        ("model", "scenario_id", "axis", "group"),
        ("n", "mean", "mean_low", "mean_high"),
    ),
    _long(
        "paired_stereotype_groups",
        "scenarios with a stereotype: Kruskal-Wallis between its two groups (person means; "
        "paper: images pooled), and its direction",
        ("model", "scenario_id", "axis"),
        (
            "group_stereotyped",
            "group_other",
            "test",
            "unit",
            "mean_stereotyped_group",
            "mean_other_group",
            "h",
            "pval",
            "significant_alpha",
            "stereotyped_direction",
        ),
        paper_table="Tables 17-30",
    ),
    _long(
        "paired_subgroup_h",
        "the variation bias H and the mean within-person shift within each subgroup of an "
        "axis, per scenario",
        ("model", "axis", "group", "scenario_id"),
        ("h", "shift"),
        paper_table="Figs. 3-4",
    ),
    _long(
        "paired_subgroup_wilcoxon",
        "W^attr: Welch t of the persons' oriented edit effects between two subgroups (paper: "
        "Wilcoxon signed-rank of the subgroups' H across scenarios), Bonferroni",
        ("model", "axis", "group_a", "group_b"),
        (
            "test",
            "unit",
            "n_scenarios",
            "mean_h_a",
            "mean_h_b",
            "effect_a",
            "effect_b",
            "stronger",
            "statistic",
            "pval",
            "pval_bonferroni",
            "n_comparisons",
            "significant_alpha",
        ),
        paper_table="Tables 5, A, B",
    ),
    _long(
        "paired_group_bias_by_kind",
        "per axis: is the demographic bias the same on base and variation images? Permutation "
        "test of the summed Kruskal-Wallis H of the within-person differences between groups "
        "(paper: Wilcoxon of the demographic H base vs variation), Bonferroni",
        ("model", "axis"),
        (
            "test",
            "unit",
            "n_scenarios",
            "mean_h_base",
            "mean_h_variation",
            "statistic",
            "pval",
            "pval_bonferroni",
            "n_comparisons",
            "significant_alpha",
        ),
        paper_table="Table 4",
    ),
)

REGISTRY: Registry[TableSpec] = Registry(
    "analysis table", {t.name: t for t in (*TABLES, *PAIRED_TABLES)}
)
LONG_TABLES: tuple[str, ...] = tuple(t.name for t in TABLES if not t.layout)
LAYOUT_TABLES: tuple[str, ...] = tuple(t.name for t in TABLES if t.layout)
ALWAYS_WRITTEN: tuple[str, ...] = tuple(t.name for t in TABLES if t.written == "always")


def spec(name: str) -> TableSpec:
    """The registered table ``name``; an unregistered name is one line listing the valid ones."""
    return REGISTRY.lookup(name, "stylisticbias.analysis.table_registry")


def large_shift_header(large_shift: float) -> str:
    """Table 7's header of the large-shift share for ``analysis.large_shift``."""
    return f"|Δ| ≥ {large_shift:g}"


def schema(name: str) -> pa.DataFrameSchema:
    """The pandera schema of table ``name``, built from the vocabulary."""
    t = spec(name)
    if t.layout:
        cols = {
            c: pa.Column(str, nullable=True, required=c in t.keys, coerce=True) for c in t.columns
        }
        return pa.DataFrameSchema(cols, strict=not t.open_columns, name=t.name)
    return pa.DataFrameSchema(
        {c: VOCABULARY[c].column() for c in t.columns}, strict=True, ordered=True, name=t.name
    )


def check_columns(name: str, columns: Iterable[str], where: str | Path) -> None:
    """Raise one line naming the table and each missing or unexpected column."""
    t = spec(name)
    have = [str(c) for c in columns]
    if t.layout:
        missing = [c for c in t.keys if c not in have]
        extra = [] if t.open_columns else [c for c in have if c not in t.columns]
    else:
        missing = [c for c in t.columns if c not in have]
        extra = [c for c in have if c not in t.columns]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {', '.join(missing)}")
        if extra:
            parts.append(f"unexpected column(s) {', '.join(extra)}")
        raise StylisticBiasError(
            f"{where}: table {name!r} does not match its registry schema: "
            + "; ".join(parts)
            + f" (columns: {', '.join(t.columns)})"
        )


def validate_table(name: str, df: pd.DataFrame, where: str | Path | None = None) -> pd.DataFrame:
    """``df`` checked (and coerced) against table ``name``'s schema; one-line error on failure."""
    where = where or f"reports/tables/{spec(name).file}"
    check_columns(name, df.columns, where)
    return validate(df, schema(name), where)


def write_table(name: str, df: pd.DataFrame, out_dir: Path) -> Path:
    """Validate ``df`` as table ``name`` and write ``out_dir/<name>.csv`` atomically.

    A table with no rows (nothing estimable on this image set, e.g. no variation of its
    category) is written as its header: the registry's columns, no rows.
    """
    path = out_dir / spec(name).file
    t = spec(name)
    if df.empty and not t.layout and set(t.columns) - set(df.columns):
        df = df.reindex(columns=[*t.columns, *(c for c in df.columns if c not in t.columns)])
    df = validate_table(name, df, path)
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format="%.6g")
    return path


def write_tables(tables: Mapping[str, pd.DataFrame], out_dir: Path) -> list[Path]:
    """Write every table (each validated); a table missing from the registry is an error."""
    for name in tables:
        spec(name)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_table(name, df, out_dir) for name, df in tables.items()]


def read_table(name: str, tables_dir: Path, stage: str = "analyze") -> pd.DataFrame:
    """Read ``tables_dir/<name>.csv`` and validate it against the registry.

    Paper-layout tables are read as printed text (no number parsing). A missing, unreadable or
    non-conforming file is one :class:`StylisticBiasError` line naming it.
    """
    t = spec(name)
    path = tables_dir / t.file
    if not path.exists():
        raise StylisticBiasError(
            f"{path}: not found; it is written by the `{stage}` stage (run `dvc repro {stage}`)"
        )
    try:
        if t.layout:
            df = pd.read_csv(path, dtype=str, keep_default_na=False)
        else:
            dtypes = {
                c: str for c in t.columns if VOCABULARY.get(c, Col("float", "")).dtype == "str"
            }
            df = pd.read_csv(path, dtype=dtypes)
    except pd.errors.EmptyDataError:
        raise StylisticBiasError(f"{path}: empty table (no header)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise StylisticBiasError(f"{path}: not a readable CSV table ({exc})") from None
    return validate_table(name, df, path)
