"""An imported image set through the whole pipeline: judge (simulated), scores, analysis, report.

One from a folder in the paper's release layout with broken cases (skipped and listed), one from
a CSV manifest (images referenced in place).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from import_fixtures import BREAKERS, import_params, write_release, write_table

from stylisticbias.analysis.run import run_analysis
from stylisticbias.benchmark import Benchmark
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.judge.items import judge_items
from stylisticbias.judge.run import run_judge
from stylisticbias.report.run import build_report
from stylisticbias.score_store import read_model_scores
from stylisticbias.scores import write_scores
from stylisticbias.spec.parse import config_from_params

MODELS = ["simulated-strong", "simulated-weak"]


def _run_pipeline(project: Path, params: dict) -> str:
    build_faces(config_from_params(params))
    build_variations(config_from_params(params))
    items = {it.image_id for it in judge_items(config_from_params(params))}
    for m in MODELS:
        out = run_judge(m, config_from_params(params), progress=False)
        judged = pd.read_parquet(out / "judgments.parquet")
        assert set(judged["image_id"]) == items  # every imported evaluated image, nothing else
        written = write_scores(m, config_from_params(params))  # <paths.scores>/model=<m>/...
        scores = read_model_scores(written.parent.parent, m)
        assert set(scores["image_id"]) == items and scores["simulated"].all()
        assert scores.loc[~scores["is_base"], "delta"].notna().all()
    run_analysis(config_from_params(params))
    build_report(config_from_params(params), root=project)
    reports = project / params["paths"]["reports"]
    assert (reports / "tables").is_dir() and (reports / "metrics.json").exists()
    return (reports / "README.md").read_text(encoding="utf-8")


def _pipeline_params(*overrides: str) -> dict:
    return import_params("tracking=none", f"model=[{','.join(MODELS)}]", *overrides)


# slow tier: a whole in-process pipeline through the report (~9 CPU-s); fast siblings:
# tests/dataset/importer/test_import_stage.py::test_release_full_grid_imports_with_paper_spellings
# and tests/report/test_report_build.py::test_simulated_report_has_every_figure_table_and_the_label
@pytest.mark.slow
def test_release_folder_with_broken_cases_through_the_report(
    project: Path, bench: Benchmark
) -> None:
    written = write_release(project / "data/import/release", bench, 6)
    for fn in BREAKERS.values():
        fn(written)
    report = _run_pipeline(project, _pipeline_params("generator.on_error=skip"))
    assert (
        "> **Images:** imported: data/import/release (the paper's release layout, copied" in report
    )
    assert "4 faces in 4 of 90 demographic cells" in report  # 2 of 6 faces left out
    assert "source row(s) skipped (see skipped.parquet)" in report
    assert "| generator | import |" in report


@pytest.mark.slow  # the second whole in-process pipeline (the release folder's is above)
def test_csv_manifest_referenced_in_place_through_the_report(
    project: Path, bench: Benchmark
) -> None:
    written = write_release(project / "data/import/release", bench, 4)
    write_table(project / "data/import/release", project / "data/import/set.csv", written, bench)
    params = _pipeline_params(
        "generator.layout=table",
        "generator.source=data/import/set.csv",
        "generator.materialize=reference",
    )
    report = _run_pipeline(project, params)
    assert "imported: data/import/set.csv (a CSV/Parquet manifest, referenced in place)" in report
    assert "4 faces in 4 of 90 demographic cells, 126 of 126 evaluated" in report
    faces = pd.read_parquet(project / params["paths"]["faces"] / "faces.parquet")
    assert list(faces["face_id"]) == ["person00", "person01", "person02", "person03"]
    # relative to the manifest's folder, data/<protocol>/faces
    assert faces["path"].str.startswith("../../import/release/").all()
