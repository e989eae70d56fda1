"""The report of a paired-variation protocol (``statistics.suite: paired_variation``).

``reports/README.md`` with its own headline (the halo rate per model with its CI, the share of
scenarios with a significant bias of each kind per category), figures (per-scenario H with the
significance threshold; mean phi of the base against the variation images per scenario), the
paper comparison (the protocol's published values in ``conf/reference/<protocol>/``, side by
side with the run's) and the calibration of a simulated run. Tables are read through the table
registry (:data:`~stylisticbias.analysis.table_registry.PAIRED_TABLES`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from stylisticbias.analysis import table_registry as registry
from stylisticbias.benchmark import Benchmark
from stylisticbias.outputs import atomic_path, atomic_write_text
from stylisticbias.report.figures import SIM_NOTE, save
from stylisticbias.report.markdown import md_escape, md_table
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

REFERENCE_ROOT = Path("conf") / "reference"
W_COLUMNS = [
    "model",
    "axis",
    "group_a",
    "group_b",
    "effect_a",
    "effect_b",
    "mean_h_a",
    "mean_h_b",
    "stronger",
    "statistic",
    "pval_bonferroni",
    "significant_alpha",
]
#: the paper's name of a test in its category tables
TEST_NAMES = {"variation": "attractiveness", "gender": "gender", "age": "age", "race": "race"}


def read_tables(tables_dir: Path) -> dict[str, pd.DataFrame]:
    """Every paired-variation table written (``paired_halo`` is optional)."""
    out = {}
    for t in registry.PAIRED_TABLES:
        if t.name == "paired_halo" and not (tables_dir / t.file).exists():
            continue
        out[t.name] = registry.read_table(t.name, tables_dir)
    return out


def _decorate(fig: Figure, title: str, simulated: bool) -> None:
    fig.suptitle(title, fontsize=12, fontweight="bold")
    if simulated:
        fig.text(0.5, 0.005, SIM_NOTE, ha="center", va="bottom", fontsize=8, color="#B22222")
        fig.text(
            0.5,
            0.5,
            "SIMULATED",
            fontsize=60,
            color="#B22222",
            alpha=0.1,
            ha="center",
            va="center",
            rotation=30,
            fontweight="bold",
            zorder=0,
        )
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))


def _chi2_of(bias: pd.DataFrame) -> np.ndarray:
    """The variation test's p as a chi-square(1) statistic: H under the paper's Kruskal-Wallis
    (p = chi2.sf(H, 1)), z^2 under the signed-rank test; 0 where the test has no p."""
    p = np.clip(bias["pval"].to_numpy(dtype=float), 1e-300, 1.0)
    return np.where(np.isnan(p), 0.0, stats.chi2.isf(np.nan_to_num(p, nan=1.0), 1))


def fig_h_by_scenario(bias: pd.DataFrame, alpha: float, label: str, simulated: bool) -> Figure:
    """The variation test per scenario and model as the chi-square(1) statistic of its p (H
    under the paper's test), coloured by subcategory; the dashed line is the chi-square(1)
    critical value at alpha (bars above it are significant)."""
    models = list(dict.fromkeys(bias["model"]))
    fig, axes = plt.subplots(len(models), 1, figsize=(14, 3.2 * len(models)), squeeze=False)
    groups = list(dict.fromkeys(bias["scenario_category"] + " / " + bias["subcategory"]))
    palette = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]
    colors = {g: matplotlib.colors.to_hex(palette[i % len(palette)]) for i, g in enumerate(groups)}
    crit = float(stats.chi2.isf(alpha, 1))
    for ax, m in zip(axes[:, 0], models, strict=True):
        d = bias[bias["model"] == m]
        g = d["scenario_category"] + " / " + d["subcategory"]
        x = np.arange(len(d))
        ax.bar(x, _chi2_of(d), color=[colors[c] for c in g])
        ax.axhline(crit, color="#B22222", ls="--", lw=1)
        ax.set_yscale("symlog", linthresh=10)
        ax.set_xticks(x, d["scenario_id"].astype(int), fontsize=7, rotation=90)
        ax.set_ylabel("χ²(1) of the test's p")
        ax.set_title(f"{m}: original vs {label}, per scenario (dashed: p = {alpha:g})", fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    fig.legend(
        handles, list(colors), fontsize=7, ncol=4, loc="lower center", bbox_to_anchor=(0.5, 0.02)
    )
    _decorate(fig, f"Bias of the {label} images per scenario", simulated)
    fig.subplots_adjust(bottom=0.12 + 0.04 / len(models))
    return fig


def fig_means(bias: pd.DataFrame, base: str, label: str, simulated: bool) -> Figure:
    """Mean phi of the base against the variation images, one point per scenario and model;
    halo scenarios filled, significant ones outlined."""
    models = list(dict.fromkeys(bias["model"]))
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 5), squeeze=False)
    for ax, m in zip(axes[0], models, strict=True):
        d = bias[bias["model"] == m]
        halo = d["halo"].astype(bool)
        sig = d["significant_alpha"].astype(bool)
        x, y = d["mean_base"], d["mean_variation"]
        ax.scatter(
            x[~halo],
            y[~halo],
            s=18,
            facecolors="none",
            edgecolors="#777777",
            label="other scenarios",
        )
        ax.scatter(x[halo], y[halo], s=22, color="#DD8452", label="halo scenarios")
        ax.scatter(
            x[sig],
            y[sig],
            s=60,
            facecolors="none",
            edgecolors="#1F3A93",
            lw=0.8,
            label="significant",
        )
        ax.plot([0, 1], [0, 1], color="#444444", lw=0.8, ls=":")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel(f"mean φ, {base}")
        ax.set_ylabel(f"mean φ, {label}")
        ax.set_title(m, fontsize=10)
        ax.legend(fontsize=7, loc="upper left")
    _decorate(fig, f"Stereotyped-choice share: {base} vs {label}", simulated)
    return fig


def _reference(root: Path, benchmark: Benchmark) -> dict[str, pd.DataFrame]:
    ref = root / REFERENCE_ROOT / benchmark.name
    out = {}
    for name in ("category_rates", "variation_bias", "stereotype_groups", "wilcoxon"):
        path = ref / f"{name}.csv"
        if path.exists():
            df = pd.read_csv(path)
            out[name] = df.fillna({"stars": ""}) if "stars" in df.columns else df
    return out


def _paper_row(model: str, papers: list[str], names: dict[str, str]) -> str:
    """The paper's row a run model is compared with: its own (paper_name), else the Average."""
    return names.get(model) if names.get(model) in papers else "Average"  # type: ignore[return-value]


def compare_categories(
    rates: pd.DataFrame, ref: pd.DataFrame | None, names: dict[str, str]
) -> pd.DataFrame:
    """The run's share of significant scenarios per test and (sub)category beside the paper's:
    one row per model and test, cells ``run % / paper %``."""
    run = rates[(rates["subcategory"] != "all") | (rates["scenario_category"] == "all")]
    papers = sorted(set(ref["model"])) if ref is not None else []
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in run.itertuples(index=False):
        p = _paper_row(r.model, papers, names)
        row = rows.setdefault(
            (r.model, r.bias_test),
            {"model": r.model, "bias": TEST_NAMES.get(r.bias_test, r.bias_test), "paper row": p},
        )
        col = (
            "Total"
            if r.scenario_category == "all"
            else f"{r.scenario_category.replace('Stereotyped ', '')}: {r.subcategory}"
        )
        paper = np.nan
        if ref is not None:
            hit = ref[
                (ref["model"] == p)
                & (ref["bias_test"] == r.bias_test)
                & (ref["scenario_category"] == r.scenario_category)
                & (ref["subcategory"] == r.subcategory)
            ]
            paper = 100 * float(hit["share_significant"].iloc[0]) if len(hit) else np.nan
        row[col] = f"{100 * r.share_significant:.1f} / {paper:.1f}"
    return pd.DataFrame(list(rows.values()))


def compare_halo(
    bias: pd.DataFrame, ref: pd.DataFrame | None, names: dict[str, str]
) -> pd.DataFrame:
    """Per halo scenario: the run's means and H beside the paper's (the model's own table, or
    the mean over the paper's seven models)."""
    halo = bias[bias["halo"].astype(bool)]
    rows = []
    for r in halo.itertuples(index=False):
        row = {
            "model": r.model,
            "scenario": f"{r.positive} / {r.negative}",
            "run φ orig.": r.mean_base,
            "run φ beaut.": r.mean_variation,
            "run H": r.h,
        }
        if ref is not None:
            p = _paper_row(r.model, sorted(set(ref["model"])), names)
            hit = ref[ref["scenario_id"] == r.scenario_id]
            if p != "Average":
                hit = hit[hit["model"] == p]
            row["paper"] = p if p != "Average" else "mean of 7"
            row["paper φ orig."] = hit["mean_base"].mean()
            row["paper φ beaut."] = hit["mean_variation"].mean()
            row["paper H"] = hit["h"].mean()
        rows.append(row)
    return pd.DataFrame(rows)


def _paper_halo(ref: pd.DataFrame | None) -> pd.DataFrame:
    """The paper's halo rate per model from Tables 10-16 (significant and beautified higher)."""
    if ref is None:
        return pd.DataFrame()
    sig = ref["stars"] != ""
    ref = ref.assign(halo=sig & (ref["mean_variation"] > ref["mean_base"]), sig=sig)
    g = ref.groupby("model", sort=False).agg(halo=("halo", "mean"), significant=("sig", "mean"))
    return g.reset_index()


def build_markdown(
    config: Config,
    benchmark: Benchmark,
    tables: dict[str, pd.DataFrame],
    figures: list[tuple[str, str]],
    ref: dict[str, pd.DataFrame],
    calibration: dict[str, Any] | None,
) -> str:
    """The report's text."""
    spec = benchmark.statistics
    assert spec.variation is not None
    v = spec.variation
    bias = tables["paired_variation_bias"]
    simulated = bool(bias["simulated"].any())
    names = {m: str(getattr(ms, "paper_name", None) or m) for m, ms in config.models.items()}
    title = f"# {benchmark.name}: {v.base_label} vs {v.label} images"
    lines = [title + (" — SIMULATED" if simulated else ""), ""]
    if simulated:
        lines += [f"> **{SIM_NOTE}.** Every number below comes from planted effects.", ""]
    faces = int(bias.groupby("model")["n_base"].max().max()) if len(bias) else 0
    lines += [
        f"Protocol `conf/benchmark/{benchmark.name}.yaml`: {len(benchmark.scenarios)} scenarios, "
        f"{len(benchmark.orderings)} orderings, judge seeds {list(config.judge.seeds)}; "
        f"{faces} faces, each judged as {v.base_label} and as {v.label}; models "
        + ", ".join(f"`{m}`" for m in config.model_names)
        + f". Significance: p < {spec.alpha:g} per scenario (no correction across scenarios, as"
        " the paper); "
        + _tests_sentence(tables, config)
        + " W^attr: "
        + _w_sentence(tables["paired_subgroup_wilcoxon"])
        + ", Bonferroni within an axis.",
        "",
        "## Headline",
        "",
    ]
    halo = tables.get("paired_halo")
    if halo is not None:
        ci = [f"[{x:.3f}, {y:.3f}]" for x, y in zip(halo["halo_rate_low"], halo["halo_rate_high"])]
        paper_ci = bool(halo["halo_interval"].str.endswith("(paper)").all())
        ci_name = "95% CI" if paper_ci else "95% CI of the share with a true positive shift"
        h = halo.assign(**{"halo rate (paper)": halo["halo_rate"], ci_name: ci})
        h = h[
            [
                "model",
                "n_scenarios",
                "n_significant",
                "n_halo",
                "n_opposite",
                "halo rate (paper)",
                ci_name,
            ]
        ]
        lines += [
            f"**Halo effect** over the {int(halo['n_scenarios'].iloc[0])} `{spec.halo_tag}` "
            f"scenarios: a scenario counts when its {v.label} images differ significantly and "
            "lean to the positive trait (the paper's rate: a count of decisions, which grows with "
            "the number of people). "
            + (
                "The interval is a face bootstrap of that rate (the paper's definitions)."
                if paper_ci
                else "The interval is for the share of these scenarios whose true "
                "mean shift is positive (step-down max-t over persons)."
            ),
            "",
            md_table(h),
            "",
        ]
    rates = tables["paired_category_rates"]
    top = rates[rates["subcategory"] != "all"].copy()
    top["column"] = (
        top["scenario_category"].str.replace("Stereotyped ", "") + ": " + top["subcategory"]
    )
    wide = top.pivot_table(
        index=["model", "bias_test"], columns="column", values="share_significant", sort=False
    )
    total = rates[rates["scenario_category"] == "all"].set_index(["model", "bias_test"])
    wide.insert(0, "Total", total["share_significant"])
    wide = (100 * wide).round(1).reset_index()
    wide["bias_test"] = wide["bias_test"].map(lambda t: TEST_NAMES.get(t, t))
    lines += [
        "**Share of scenarios with a significant bias** (%), per category (the paper's Tables 2, "
        "31-33):",
        "",
        md_table(wide.rename(columns={"bias_test": "bias"}), digits=1),
        "",
        "## Figures",
        "",
    ]
    for path, caption in figures:
        lines += [f"![{md_escape(caption)}]({path})", "", f"*{md_escape(caption)}*", ""]
    lines += ["## Scenarios", ""]
    cols = [
        "model",
        "scenario_id",
        "subcategory",
        "positive",
        "negative",
        "mean_base",
        "mean_variation",
        "shift",
        "h",
        "pval",
        "direction",
    ]
    strongest = bias.sort_values("h", ascending=False).groupby("model", sort=False).head(10)
    lines += [
        f"The ten strongest {v.label}-vs-{v.base_label} differences per model (all 91 in "
        "`reports/tables/paired_variation_bias.csv`):",
        "",
        md_table(strongest[cols]),
        "",
    ]
    st = tables["paired_stereotype_groups"]
    if len(st):
        agg = st.groupby(["model", "axis"], sort=False).agg(
            scenarios=("scenario_id", "size"),
            significant=("significant_alpha", "sum"),
            stereotyped_direction=("stereotyped_direction", "sum"),
        )
        lines += [
            "**Stereotyped jobs** (the paper's Tables 17-30): the two groups a job pair is "
            "stereotyped towards, Kruskal-Wallis "
            + ("over all images:" if set(st["unit"]) == {"image"} else "of the person means:"),
            "",
            md_table(agg.reset_index()),
            "",
        ]
    w = tables["paired_subgroup_wilcoxon"]
    lines += [
        f"**W^attr** (Tables 5, A, B): does the {v.label} edit move one subgroup more than "
        f"another? {_w_sentence(w)}, Bonferroni within the axis; `effect_a`/"
        "`effect_b` = each subgroup's mean oriented edit effect, `mean_h_a`/`mean_h_b` = its "
        "mean H (the paper's); `stronger` = the group with the larger "
        + ("mean H." if set(w["unit"]) == {"scenario"} else "effect."),
        "",
        md_table(w[W_COLUMNS]),
        "",
    ]
    k = tables["paired_group_bias_by_kind"]
    lines += [
        f"**Demographic bias on {v.base_label} vs {v.label} images** (Table 4): "
        + (
            "the paper's Wilcoxon signed-rank of H on the two kinds of image, paired by scenario:"
            if set(k["unit"]) == {"scenario"}
            else "are the group gaps the same on both kinds, "
            "i.e. does the edit move every group of the axis alike? Welch's ANOVA (each "
            "group's own variance) of the within-person differences between the groups, summed "
            "over scenarios on the chi-square scale, p by permuting persons (mean H of each "
            "kind shown as the paper's):"
        ),
        "",
        md_table(k.drop(columns=["simulated"])),
        "",
        "## Comparison with the paper",
        "",
    ]
    if ref:
        lines += [
            f"The paper's values from `conf/reference/{benchmark.name}/` (transcribed from the "
            "paper); a run model whose `paper_name` is one of the paper's models is compared "
            "with that model's row, any other with the paper's Average. Cells: run % / paper %"
            " of scenarios with a significant bias.",
            "",
            md_table(compare_categories(rates, ref.get("category_rates"), names), digits=1),
            "",
        ]
        ph = _paper_halo(ref.get("variation_bias"))
        if len(ph):
            lines += [
                "The paper's halo rate per model (Tables 10-16: significant and the beautified "
                "images higher, over 33 scenarios):",
                "",
                md_table(ph.rename(columns={"halo": "halo rate", "significant": "significant"})),
                "",
            ]
        hc = compare_halo(bias, ref.get("variation_bias"), names)
        lines += ["Per halo scenario, run beside paper:", "", md_table(hc, digits=2), ""]
    else:
        lines += [f"_No reference values under conf/reference/{benchmark.name}/._", ""]
    lines += ["## Calibration", ""]
    if calibration and calibration.get("simulated"):
        hal = calibration.get("halo", {})
        gap = calibration.get("gender_gap", {})
        fp = calibration.get("variation_shift_all_scenarios", {})
        lines += [
            "Does this run recover what the simulated judges planted (`reports/calibration.json`;"
            " one run, the truth of these images; the many-replicate study is in "
            "`reports/bench/calibration.json`, `protocols`)?",
            "",
            f"- halo shift: CI coverage {hal.get('coverage')} over {hal.get('n_cells')} cells, "
            f"bias {hal.get('bias')}, detected halo rate {hal.get('halo_rate')};",
            f"- gender gap: CI coverage {gap.get('coverage')} over {gap.get('n_cells')} cells;",
            f"- variation test on scenarios planted 0: false-positive rate "
            f"{fp.get('false_positive_rate_null')} over {fp.get('n_null_cells')} cells "
            f"(alpha {spec.alpha:g}); power on planted scenarios {fp.get('power_planted')}.",
            "",
        ]
    else:
        lines += ["_No simulated judge: nothing to calibrate._", ""]
    return "\n".join(lines)


def _w_sentence(w: pd.DataFrame) -> str:
    """How W^attr was tested (its ``unit`` column)."""
    if len(w) and set(w["unit"]) == {"scenario"}:
        return "the paper's Wilcoxon signed-rank of the subgroups' H across scenarios"
    return (
        "Welch's t of the persons' oriented edit effects (each person's mean within-person "
        "shift over scenarios, signed by the scenario's overall direction)"
    )


def _tests_sentence(tables: dict[str, pd.DataFrame], config: Config) -> str:
    """Which tests and intervals the tables used (the ``test`` / ``unit`` columns)."""
    bias = tables["paired_variation_bias"]
    groups = tables["paired_group_tests"]
    paper = bool(len(bias)) and set(bias["unit"]) == {"image"}
    boot = config.analysis.bootstrap
    if paper:
        return (
            "the paper's tests (`analysis.definitions: official`): Kruskal-Wallis over every "
            "image as if independent, for the variation and between groups (unit `image`; a "
            "person's two images are alike, so the group tests reject a true null more often "
            "than alpha). Intervals: face-level bootstrap "
            f"({boot.n_resamples} resamples, {100 * float(boot.ci):g}%)."
        )
    g = ", ".join(sorted(set(groups["test"]))) if len(groups) else "none"
    return (
        "one value per person (unit `person`): the variation by a Wilcoxon signed-rank test of "
        f"the within-person differences, the groups by {g} (the paper's pooled Kruskal-Wallis: "
        "`analysis.definitions=official`). Intervals: Student-t over persons "
        f"({100 * float(boot.ci):g}%); the halo rate's: face-level bootstrap "
        f"({boot.n_resamples} resamples)."
    )


def _plots(bias: pd.DataFrame, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.csv"):
        old.unlink()
    cols = ["model", "scenario_id", "subcategory", "h", "significant_alpha", "shift"]
    with atomic_path(out / "paired_h_by_scenario.csv") as tmp:
        bias[cols].to_csv(tmp, index=False, float_format="%.6g")


def build_paired_report(config: Config, benchmark: Benchmark, root: Path) -> None:
    """The ``report`` stage for a paired-variation protocol."""
    v = benchmark.statistics.variation
    assert v is not None
    reports = root / str(config.paths.reports)
    tables = read_tables(reports / "tables")
    bias = tables["paired_variation_bias"]
    simulated = bool(bias["simulated"].any())
    figs_dir = reports / "figures"
    figs_dir.mkdir(parents=True, exist_ok=True)
    for old in figs_dir.glob("*.png"):
        old.unlink()
    figures = []
    f1 = save(
        fig_h_by_scenario(bias, benchmark.statistics.alpha, v.label, simulated),
        figs_dir / "paired_h_by_scenario.png",
    )
    figures.append(
        (f"figures/{f1.name}", f"Test of {v.base_label} vs {v.label} per scenario (χ²(1) of p)")
    )
    f2 = save(fig_means(bias, v.base_label, v.label, simulated), figs_dir / "paired_means.png")
    figures.append((f"figures/{f2.name}", f"Mean φ of {v.base_label} vs {v.label} per scenario"))
    _plots(bias, reports / "plots")
    cal_path = reports / "calibration.json"
    calibration = json.loads(cal_path.read_text()) if cal_path.exists() else None
    ref = _reference(root, benchmark)
    md = build_markdown(config, benchmark, tables, figures, ref, calibration)
    # no leaderboard for this suite (its headline is the halo rate, not SBS/VS): the folder, an
    # output of the report stage, is left empty, as for the task protocols
    (reports / "leaderboard").mkdir(parents=True, exist_ok=True)
    atomic_write_text(reports / "README.md", md + "\n")
    log.info("wrote %s", reports / "README.md")
