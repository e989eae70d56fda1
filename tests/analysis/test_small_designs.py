"""The analysis on small and lopsided image sets: every table degrades, nothing crashes.

A property-based test (hypothesis) draws random small designs -- 1 to 4 faces with any
demographics (all one gender, one age, ...), 0 to 4 edits each, one or two models -- judges
them with the simulated engine, scores them as the ``scores`` stage does and runs the real
``analyze`` stage code (:func:`stylisticbias.analysis.run.run_analysis`, tables validated and
written). Cells that need more data (VS with one group, SBS without variations, ...) are "not
estimable": NaN (``-`` in the paper-layout tables) with a warning saying why, never a traceback.
"""

from __future__ import annotations

import copy
import functools
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stylisticbias.analysis.run import run_analysis
from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark, benchmark_from_params
from stylisticbias.config import ROOT, compose, load_group_option
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine, image_attrs
from stylisticbias.report.run import build_report
from stylisticbias.score_store import write_model_scores
from stylisticbias.scores import compute_scores
from stylisticbias.spec.parse import config_from_params

VAR_COLUMNS = ["image_id", "face_id", "category", "attribute", "value", *DEMOGRAPHIC_AXES]


@functools.cache
def _setup() -> tuple[dict[str, Any], Benchmark, dict[str, Any]]:
    params = compose()
    params["analysis"]["bootstrap"]["n_resamples"] = 10
    params["analysis"]["n_permutations"] = 10
    return params, benchmark_from_params(params), load_group_option("model", "simulated-strong")


@st.composite
def designs(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """(faces, variations, number of models) of a random small design."""
    _, bench, _ = _setup()
    demo = bench.demographics
    faces, var = [], []
    for i in range(draw(st.integers(1, 4))):
        d = {a: draw(st.sampled_from(list(demo[a]))) for a in DEMOGRAPHIC_AXES}
        fid = f"F{i:04d}"
        faces.append({"face_id": fid, "image_id": f"{fid}--base", **d})
        values = bench.variations_for(d["gender"], evaluated_only=True)
        picked = draw(st.lists(st.sampled_from(values), max_size=4, unique_by=lambda v: v.slug))
        for v in picked:
            var.append(
                (
                    f"{fid}--{v.slug}",
                    fid,
                    v.category,
                    v.attribute,
                    v.value,
                    *(d[a] for a in DEMOGRAPHIC_AXES),
                )
            )
    return pd.DataFrame(faces), pd.DataFrame(var, columns=VAR_COLUMNS), draw(st.integers(1, 2))


def analyse(
    faces: pd.DataFrame, var: pd.DataFrame, n_models: int, root: Path, *, report: bool = False
) -> Path:
    """Judge (simulated), score and analyse one design under ``root`` (and, with ``report``,
    build its report as the ``report`` stage does); its reports dir."""
    params, bench, cfg = _setup()
    params = copy.deepcopy(params)
    models = ["judge-a", "judge-b"][:n_models]
    img = image_attrs(faces, var)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].astype(object)
    attrs = attrs.where(attrs.notna(), None).to_dict("records")
    for i, name in enumerate(models):
        mcfg = {**cfg, "name": name, "seed": int(cfg.get("seed", 0)) + i}
        eng = SimulatedJudgeEngine(mcfg, mcfg["engine"], params["judge"], bench)
        j = eng.judge_records(img["image_id"].tolist(), img["face_id"].tolist(), attrs)
        write_model_scores(compute_scores(j, faces, var, bench), root / "scores", name)
        path = root / "judgments" / name / "judgments.parquet"
        path.parent.mkdir(parents=True)
        j.to_parquet(path, index=False)
    params["models"] = {m: {**cfg, "name": m} for m in models}
    params["paths"].update(
        scores=str(root / "scores"),
        judgments=str(root / "judgments"),
        reports=str(root / "reports"),
        analysis_cache=None,
    )
    run_analysis(config_from_params(params))
    if report:
        shutil.copytree(ROOT / "conf" / "reference", root / "conf" / "reference")
        build_report(config_from_params(params), root)
    return root / "reports"


def _design(genders: list[str], n_edits: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One face per entry of ``genders`` (other demographics cycled), its first ``n_edits``
    evaluated values as edits."""
    _, bench, _ = _setup()
    demo = bench.demographics
    faces, var = [], []
    for i, g in enumerate(genders):
        d = {
            "age": demo["age"][i % 3],
            "gender": g,
            "ethnicity": demo["ethnicity"][i % 5],
            "body_type": demo["body_type"][i % 3],
        }
        fid = f"F{i:04d}"
        faces.append({"face_id": fid, "image_id": f"{fid}--base", **d})
        for v in bench.variations_for(g, evaluated_only=True)[:n_edits]:
            var.append(
                (
                    f"{fid}--{v.slug}",
                    fid,
                    v.category,
                    v.attribute,
                    v.value,
                    *(d[a] for a in DEMOGRAPHIC_AXES),
                )
            )
    return pd.DataFrame(faces), pd.DataFrame(var, columns=VAR_COLUMNS)


@pytest.mark.parametrize(
    ("genders", "n_edits"),
    [(["female", "female"], 40), (["male", "female"], 3), (["male"], 1)],
)
def test_lopsided_designs_are_analysed(tmp_path: Path, genders: list[str], n_edits: int) -> None:
    """The cases that crashed: two faces both female (VS by gender), two faces with three
    edits (no SBS cell for a paper table), one face with one edit."""
    reports = analyse(*_design(genders, n_edits), 1, tmp_path)
    vs = pd.read_csv(reports / "tables" / "table02_vs.csv")
    row = vs[vs["Model"] == "judge-a"]
    assert len(row) == 1
    if len(set(genders)) == 1:
        assert row["Gender"].iloc[0] == "-"  # not estimable, shown as such


def test_the_report_names_what_is_not_estimable_and_why(tmp_path: Path) -> None:
    """Two faces, both female, three edits each, one model: VS by gender, the cross-model,
    fashion and tattoo tables cannot be estimated; the report lists each with its reason
    (the full-grid demo's report, committed in reports/README.md, has no such section)."""
    faces, var = _design(["female", "female"], 3)
    reports = analyse(faces, var, 1, tmp_path, report=True)
    text = (reports / "README.md").read_text()
    assert "## Not estimable on this image set" in text
    section = text.split("## Not estimable on this image set", 1)[1].split("\n## ", 1)[0]
    rows = {
        ln.split(" | ")[0].lstrip("| "): ln.split(" | ")[1]
        for ln in section.splitlines()
        if ln.startswith("| ") and " | " in ln
    }
    assert rows["VS judge-a / gender"].startswith("1 group(s) among the base faces")
    assert (
        "needs two or more judged models (this run judged 1)" in rows["table `profile_agreement`"]
    )
    assert rows["table `tattoo_sbs`"].startswith("no row: this image set has nothing it needs")
    assert "Table 4" in " ".join(rows) and "no estimable cell" in section
    vs = pd.read_csv(reports / "tables" / "vs_by_model.csv")
    gaps = vs[vs["vs"].isna()]
    assert {f"VS {r.model} / {r.dimension}" for r in gaps.itertuples()} <= set(rows)
    for name in ("tattoo_sbs", "sbs_fashion_by_age", "profile_agreement"):
        assert pd.read_csv(reports / "tables" / f"{name}.csv").empty  # what the rows say


def test_one_face_with_edits_of_two_categories_runs_through(tmp_path: Path) -> None:
    """One face: the face-clustered tests have one cluster (no variance to estimate); their
    cells are NaN, not a ZeroDivisionError from the small-sample correction."""
    faces, var = _design(["male"], 100)
    var = var.drop_duplicates("category").head(2)  # one edit of each of two categories
    assert var["category"].nunique() == 2  # a category F test is due
    reports = analyse(faces, var, 1, tmp_path)
    eff = pd.read_csv(reports / "tables" / "effect_sizes.csv")
    assert eff["pval"].isna().all() or len(eff) == 0


def test_a_design_without_variations_is_one_line(tmp_path: Path) -> None:
    face = {"age": "elderly", "gender": "male", "ethnicity": "African", "body_type": "normal"}
    faces = pd.DataFrame([{"face_id": "F0", "image_id": "F0--base", **face}])
    with pytest.raises(StylisticBiasError, match="no variation score rows"):
        analyse(faces, pd.DataFrame(columns=VAR_COLUMNS), 1, tmp_path)


def _property(design: tuple[pd.DataFrame, pd.DataFrame, int]) -> None:
    """The analysis of ``design`` runs through and writes its tables; the one refusal allowed
    is the one-line error for a design with no variation at all (nothing to analyse)."""
    logging.disable(logging.WARNING)
    try:
        with tempfile.TemporaryDirectory() as d:
            if design[1].empty:
                with pytest.raises(StylisticBiasError, match="no variation score rows"):
                    analyse(*design, Path(d))
                return
            reports = analyse(*design, Path(d))
            assert (reports / "metrics.json").exists()
            assert (reports / "tables" / "table02_vs.csv").exists()
    finally:
        logging.disable(logging.NOTSET)


_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@settings(max_examples=3, **_SETTINGS)  # 200 in the slow tier (below)
@given(designs())
def test_random_small_designs_never_crash(design: tuple[pd.DataFrame, pd.DataFrame, int]) -> None:
    _property(design)


@pytest.mark.slow
@settings(max_examples=200, **_SETTINGS)
@given(designs())
def test_200_random_small_designs_never_crash(
    design: tuple[pd.DataFrame, pd.DataFrame, int],
) -> None:
    _property(design)
