"""A fake ``analyze`` output (tables, metrics.json, score tables) for the report tests.

The tables mirror what ``analyze`` writes (long format as the paper's reference CSVs with
``Average`` rows; beyond tables with ``effect``/``abs_effect`` and pooled ``All`` rows; the
paper-layout ``tableNN_*.csv`` from :func:`stylisticbias.analysis.layout.wide_tables`) plus
``ci_low``, ``ci_high``, ``pval``, ``pval_corr``, ``n``; their
numbers come from a small latent model (variation effect x scenario weight x model scale) so
the figures look like real ones.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from stylisticbias.analysis.layout import wide_tables
from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import compose
from stylisticbias.score_store import scores_file

GROUPS = {
    "age": ["young adult", "middle-aged adult", "elderly"],
    "gender": ["male", "female"],
    "ethnicity": ["Asian", "African", "European", "Middle Eastern", "Latino"],
    "body": ["thin", "normal", "obese"],
}
ABBR = dict(
    zip(
        itertools.chain.from_iterable(GROUPS.values()),
        ["YA", "MA", "EL", "M", "F", "As", "Af", "Eu", "ME", "La", "Th", "No", "Ob"],
    )
)


def _stats(rng: np.random.Generator, eff: np.ndarray, n: int = 40) -> dict[str, np.ndarray]:
    se = 0.01 + 0.02 * rng.random(len(eff))
    p = np.clip(np.exp(-np.abs(eff) / se), 1e-9, 1)
    return {
        "ci_low": eff - 1.96 * se,
        "ci_high": eff + 1.96 * se,
        "pval": p,
        "pval_corr": np.clip(p * 2, 0, 1),
        "n": np.full(len(eff), n),
    }


def _with_stats(df: pd.DataFrame, col: str, rng: np.random.Generator) -> pd.DataFrame:
    return df.assign(**_stats(rng, df[col].to_numpy(float)))


def _average(df: pd.DataFrame, by: list[str], label_col: str = "model") -> pd.DataFrame:
    num = [
        c
        for c in df.columns
        if c not in by and c != label_col and pd.api.types.is_numeric_dtype(df[c])
    ]
    avg = (
        df.groupby(by, as_index=False, sort=False)[num].mean()
        if by
        else df[num].mean().to_frame().T
    )
    avg[label_col] = "Average"
    return pd.concat([df, avg[df.columns]], ignore_index=True)


def _as_analyze_writes(tables: dict[str, pd.DataFrame]) -> None:
    """Column names and pooled labels as the analyze stage writes them (in place)."""
    for name in (
        "sbs_by_scenario",
        "sbs_by_scenario_category_model",
        "sbs_by_category_model",
        "pareto",
    ):
        df = tables[name].rename(
            columns={"sbs": "effect", "abs_sbs": "mean_abs_delta", "cum_abs_sbs": "cum_abs_effect"}
        )
        if "effect" in df:
            df["abs_effect"] = df["effect"].abs()
        else:
            df = df.rename(columns={"mean_abs_delta": "abs_effect"})
        if "model" in df:
            df["model"] = df["model"].replace({"Average": "All"})
        tables[name] = df
    for df in tables.values():
        if "pval_corr" in df and "significance" not in df:
            p = df["pval_corr"].to_numpy(float)
            df["significance"] = np.where(p < 0.001, "p<0.001", np.where(p < 0.05, "p<0.05", "ns"))


def write_fake_analysis(
    root: Path,
    models: list[str],
    simulated: bool = True,
    seed: int = 0,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write reports/tables/*.csv, reports/metrics.json and data/scores/model=*/ under root.

    ``models`` are the table names; score tables are named the same. Returns params (composed
    conf with ``judge.models`` = models and tracking pointed at root/mlflow.db).
    """
    rng = np.random.default_rng(seed)
    params = params or compose()
    bench = benchmark_from_params(params)
    scen = pd.DataFrame([s.__dict__ for s in bench.scenarios]).rename(
        columns={"id": "scenario_id", "category": "scenario_category"}
    )
    var = pd.DataFrame(
        [{"category": v.category, "variation": v.label} for v in bench.variations if v.evaluated]
    )
    w = np.where(scen["scenario_category"] == "Socioeconomic & Appearance", 2.5, 0.6)
    w = w * (0.5 + rng.random(len(w)))
    v_eff = rng.normal(0, 0.04, len(var)) * (1 + 3 * (var["category"] == "Fashion"))
    scale = {m: 1.0 / (1 + i) for i, m in enumerate(models)}
    cells = pd.DataFrame(
        [
            {
                "model": m,
                **var.iloc[k].to_dict(),
                **scen.iloc[j].to_dict(),
                "delta": scale[m] * v_eff[k] * w[j] + rng.normal(0, 0.005),
            }
            for m in models
            for k in range(len(var))
            for j in range(len(scen))
        ]
    )
    tables: dict[str, pd.DataFrame] = {}
    by_s = cells.groupby(
        ["model", "scenario_id", "scenario_category", "positive", "negative"],
        as_index=False,
        sort=False,
    ).agg(sbs=("delta", "mean"), abs_sbs=("delta", lambda x: x.abs().mean()))
    tables["sbs_by_scenario"] = _average(
        _with_stats(by_s, "sbs", rng), ["scenario_id", "scenario_category", "positive", "negative"]
    )
    by_sc = cells.groupby(["model", "scenario_category"], as_index=False, sort=False).agg(
        sbs=("delta", "mean"), abs_sbs=("delta", lambda x: x.abs().mean())
    )
    tables["sbs_by_scenario_category_model"] = _with_stats(by_sc, "sbs", rng)
    by_c = cells.groupby(["model", "category"], as_index=False, sort=False).agg(
        sbs=("delta", "mean")
    )
    tables["sbs_by_category_model"] = _with_stats(by_c, "sbs", rng)
    by_v = cells.groupby(["category", "variation"], as_index=False, sort=False).agg(
        sbs=("delta", "mean")
    )
    by_v["abs_sbs"] = by_v["sbs"].abs()
    by_v = by_v.sort_values("abs_sbs", ascending=False).reset_index(drop=True)
    by_v["rank"] = np.arange(1, len(by_v) + 1)
    by_v["cum_abs_sbs"] = by_v["abs_sbs"].cumsum()
    by_v["cum_share"] = by_v["cum_abs_sbs"] / by_v["abs_sbs"].sum()
    tables["pareto"] = by_v.assign(model="Average")
    wide = by_s.pivot(index="scenario_id", columns="model", values="sbs")
    cmv = scen[["scenario_id", "scenario_category", "positive", "negative"]].copy()
    cmv["variance"] = (
        wide.var(axis=1, ddof=1).reindex(cmv["scenario_id"]).to_numpy() if len(models) > 1 else 0.0
    )
    tables["cross_model_variance"] = cmv
    regs = []
    for mx, my in itertools.permutations(models, 2):
        res = pd.Series(wide[my]).corr(wide[mx])
        slope, icpt = np.polyfit(wide[mx], wide[my], 1)
        regs.append(
            {
                "model_x": mx,
                "model_y": my,
                "slope": slope,
                "intercept": icpt,
                "r": res,
                "pval": 1e-4,
                "n": len(wide),
            }
        )
    tables["model_pair_regressions"] = pd.DataFrame(
        regs, columns=["model_x", "model_y", "slope", "intercept", "r", "pval", "n"]
    )
    tables["profile_agreement"] = pd.DataFrame(
        [
            {"model_x": a, "model_y": b, "level": "scenario", "spearman": 0.8}
            for a, b in itertools.combinations(models, 2)
        ]
    )
    vs = pd.DataFrame(
        [
            {"model": m, "dimension": d, "vs": abs(rng.normal(0.05, 0.02)) * scale[m]}
            for m in models
            for d in ("age", "body", "ethnicity", "gender")
        ]
    )
    tables["vs_by_model"] = _average(_with_stats(vs, "vs", rng), ["dimension"])
    cat_dem = pd.DataFrame(
        [
            {
                "category": c,
                "dimension": d,
                "sbs": by_c[by_c["category"] == c]["sbs"].mean() + rng.normal(0, 0.003),
            }
            for c in var["category"].unique()
            for d in GROUPS
        ]
    )
    cat_dem = _with_stats(cat_dem, "sbs", rng)
    avg = cat_dem.groupby("dimension", as_index=False, sort=False)[["sbs"]].mean()
    tables["sbs_category_by_demographic"] = pd.concat(
        [cat_dem, avg.assign(category="Average")], ignore_index=True
    )
    shift = pd.DataFrame(
        [
            {
                **r,
                "dimension": d,
                "group": g,
                "group_abbrev": ABBR[g],
                "delta": by_v.set_index("variation").loc[r["variation"], "sbs"]
                + rng.normal(0, 0.01),
                "applicable": True,
            }
            for r in var.to_dict("records")
            for d, gs in GROUPS.items()
            for g in gs
        ]
    )
    tables["shift_by_variation_demographic"] = _with_stats(shift, "delta", rng)
    fashion = shift[shift["category"] == "Fashion"]
    age = fashion[fashion["dimension"] == "age"][["variation", "group", "delta"]].rename(
        columns={"delta": "sbs"}
    )
    gap = age.pivot(index="variation", columns="group", values="sbs")
    gap = (
        (gap["elderly"] - gap["young adult"])
        .rename("sbs")
        .reset_index()
        .assign(group="elderly_minus_young")
    )
    tables["sbs_fashion_by_age"] = pd.concat([_with_stats(age, "sbs", rng), gap], ignore_index=True)
    body = fashion[fashion["dimension"] == "body"][["variation", "group", "delta"]]
    tables["sbs_fashion_by_body"] = _with_stats(body.rename(columns={"delta": "sbs"}), "sbs", rng)
    tat = shift[
        (shift["variation"] == "Facial tattoo")
        & shift["group"].isin(["young adult", "elderly", "male", "female", "thin", "obese"])
    ]
    tables["tattoo_sbs"] = _with_stats(
        tat[["variation", "dimension", "group", "delta"]].rename(columns={"delta": "sbs"}),
        "sbs",
        rng,
    )
    pme = pd.DataFrame(
        [
            {
                "model": m,
                "sbs": cells[cells.model == m]["delta"].mean(),
                "cohens_d": 0.3 * scale[m],
                "zero_rate": 0.6,
                "large_shift_rate": 0.1,
            }
            for m in models
        ]
    )
    tables["per_model_effects"] = _average(_with_stats(pme, "sbs", rng), [])
    sig = pd.DataFrame(
        [
            {"model": m, "dimension": d, "pct_scenarios_significant": 4 * int(rng.integers(5, 25))}
            for m in models
            for d in ("age", "body", "ethnicity", "gender")
        ]
    )
    tables["significance_rate_by_model"] = _average(sig, ["dimension"])
    tables["position_bias"] = pd.DataFrame(
        {"model": models, "first_share": 0.5 + 0.05 * rng.random(len(models))}
    )
    tables["letter_bias"] = pd.DataFrame(
        {"model": models, "a_share": 0.5 + 0.05 * rng.random(len(models))}
    )
    tables["invalid_rates"] = pd.DataFrame(
        {"model": models, "invalid_rate": 0.02 + 0.02 * rng.random(len(models))}
    )
    _as_analyze_writes(tables)
    tables.update(wide_tables(tables, bench, ABBR))
    out = root / "reports" / "tables"
    out.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_csv(out / f"{name}.csv", index=False)
    metrics = {
        m: {
            "vs": {
                d: float(vs[(vs.model == m) & (vs.dimension == d)]["vs"].iloc[0])
                for d in ("age", "body", "ethnicity", "gender")
            },
            "sbs": {
                "overall": float(pme[pme.model == m]["sbs"].iloc[0]),
                "category": {
                    c.lower().replace(" ", "_"): float(v)
                    for c, v in by_c[by_c.model == m].set_index("category")["sbs"].items()
                },
            },
            "pareto": {"n_variations_80": 15},
            "cohens_d": 0.3 * scale[m],
            "zero_share": 0.6,
        }
        for m in models
    }
    (root / "reports" / "metrics.json").write_text(json.dumps(metrics, indent=2))
    sd = root / "data" / "scores"
    sd.mkdir(parents=True, exist_ok=True)
    for m in models:
        pd.DataFrame(
            {
                "image_id": [f"f{i}-v{k}" for i in range(3) for k in range(4)],
                "face_id": [f"f{i}" for i in range(3) for _ in range(4)],
                "is_base": [k == 0 for _ in range(3) for k in range(4)],
                "scenario_id": 1,
                "simulated": simulated,
            }
        ).to_parquet(_partition(sd, m))
    params = json.loads(json.dumps(params))
    params["models"] = {m: _model_section(m) for m in models}
    params["tracking"] = {
        **params["tracking"],
        "enabled": True,
        "tracking_uri": f"sqlite:///{root / 'mlflow.db'}",
        "experiment_name": "stylisticbias-test",
    }
    return params


def _model_section(name: str) -> dict[str, Any]:
    """conf/model/<name>.yaml composed with its engine, or a bare section for a made-up name."""
    from stylisticbias.config import available, load_group_option

    if name in available("model"):
        return load_group_option("model", name)
    return {"name": name, "paper_name": None, "engine": {"name": "simulated"}}


def _partition(score_dir: Path, model: str) -> Path:
    p = scores_file(score_dir, model)
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


@pytest.fixture
def fake_analysis(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """Factory: ``fake_analysis(models, simulated=True)`` -> params for a report in tmp_path."""

    def make(models: list[str], simulated: bool = True, **kw: Any) -> dict[str, Any]:
        return write_fake_analysis(tmp_path, models, simulated, **kw)

    return make
