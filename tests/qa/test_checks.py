"""The QA table: the simulated annotator's planted failures found per value, the policy applied,
the judge leaving excluded edits out, the gallery written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from stylisticbias import schemas
from stylisticbias.annotate.run import run_annotation
from stylisticbias.annotate.simulated import planted_failure, planted_invalid
from stylisticbias.config import compose, project_root
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.judge.items import judge_items
from stylisticbias.qa.checks import CHECKS, build_checks, qa_exclusions
from stylisticbias.qa.stage import build_locality
from stylisticbias.spec.parse import annotator_spec, config_from_params


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("qa")
    shutil.copytree(project_root() / "conf", root / "conf")
    return root


def _params(policy: str) -> dict:
    params = compose(
        [
            "faces.n=3",
            "generator.size=64",
            "experiment=demo",
            f"qa.policy={policy}",
            "annotators.simulated-annotator.attribute_fail_rate=0.2",
            "annotators.simulated-annotator.identity_fail_rate=0.1",
        ]
    )
    params["annotators"]["simulated-annotator"]["fail_by_value"] = {"Hair color=Blonde": 1.0}
    return params


def test_qa_table_policy_and_judge_exclusion(project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(project)
    params = _params("report")
    config = config_from_params(params)
    build_faces(config)
    var = schemas.read_table(build_variations(config), schemas.VARIATIONS)
    build_locality(config)
    run_annotation(config, "simulated-annotator")
    table = schemas.read_table(build_checks(config), CHECKS)
    assert len(table) == len(var) and not table["excluded"].any()
    spec = annotator_spec("simulated-annotator", params["annotators"]["simulated-annotator"])
    for r in table.itertuples():
        for check in ("attribute", "identity"):
            got = getattr(r, f"{check}_pass")
            bad = planted_invalid(spec, r.image_id, check)
            if bad is not None:
                assert pd.isna(got) and getattr(r, f"{check}_reason").startswith(bad)
            else:
                failed = planted_failure(spec, check, r.image_id, r.attribute, r.value)
                assert bool(got) is (not failed), (r.image_id, check)
        known = [getattr(r, c) for c in ("locality_pass", "attribute_pass", "identity_pass")]
        fails = any(not pd.isna(k) and not bool(k) for k in known)
        assert bool(r.qa_pass) is (not fails)
    qa = project / params["paths"]["qa"]
    summary = json.loads((qa / "summary.json").read_text())
    blonde = [
        v
        for v in summary["checks"]["attribute"]["per_value"]
        if (v["attribute"], v["value"]) == ("Hair color", "Blonde")
    ]
    assert blonde and blonde[0]["passed"] == 0  # planted at rate 1.0: every one fails
    assert summary["policy"] == "report" and summary["excluded"] == []
    assert summary["failed_any"] == int((~table["qa_pass"]).sum()) > 0
    assert (qa / "gallery.html").read_text().count('class="card"') > 0
    # the variations gallery loads the per-image checks from the qa stage's data script
    data = (qa / "gallery_qa.js").read_text()
    assert data.startswith("window.STYLISTICBIAS_QA = ")
    assert all(f'"{i}": [' in data for i in table["image_id"])
    page = (project / params["paths"]["variations"] / "gallery.html").read_text()
    assert '<script src="../qa/gallery_qa.js"></script>' in page
    assert all(f'data-image-id="{i}"' in page for i in table["image_id"])
    assert qa_exclusions(config) == set()
    all_items = {it.image_id for it in judge_items(config)}

    excl = config_from_params(_params("exclude"))
    table = schemas.read_table(build_checks(excl), CHECKS)
    failing = set(table.loc[~table["qa_pass"], "image_id"])
    assert set(table.loc[table["excluded"], "image_id"]) == failing and failing
    assert qa_exclusions(excl) == failing
    summary = json.loads((project / excl.paths.qa / "summary.json").read_text())
    assert summary["excluded"] == sorted(failing)
    kept = {it.image_id for it in judge_items(excl)}
    assert kept == all_items - failing
