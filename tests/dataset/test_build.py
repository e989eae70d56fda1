"""The faces and variations stages: counts, schemas, resumability, failures and bad input."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from protocols import edited_protocol

from stylisticbias import schemas
from stylisticbias.config import ROOT, compose
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.parse import config_from_params

HERE = Path(__file__).parent


def fake_params(n: int = 4, **gen: Any) -> dict[str, Any]:
    params = compose([f"faces.n={n}"])
    params["generator"] = {"_target_": "fake_generator.FakeGenerator", "workers": 1, **gen}
    return params


def test_counts_and_schema(project: Path) -> None:
    params = fake_params(6)
    faces = schemas.read_table(build_faces(config_from_params(params)), schemas.FACES)
    assert len(faces) == 6 and (faces["status"] == "ok").all()
    var = schemas.read_table(build_variations(config_from_params(params)), schemas.VARIATIONS)
    n_m, n_f = (faces["gender"] == "male").sum(), (faces["gender"] == "female").sum()
    assert len(var) == 48 * n_m + 51 * n_f
    assert var.groupby("face_id").size().isin([48, 51]).all()
    ev = var[var["evaluated"]]
    assert len(ev) == 31 * n_m + 32 * n_f
    out = project / params["paths"]["variations"]
    for row in var.itertuples():
        assert (out / row.path).exists()
    assert (out / "gallery.html").exists()
    # male faces never get makeup or braid/bun; female faces never get facial hair
    male = var[var["gender"] == "male"]
    assert not male["attribute"].isin(["Makeup", "Lip makeup"]).any()
    assert not male["value"].isin(["Braid", "Bun"]).any()
    assert not var[var["gender"] == "female"]["attribute"].eq("Facial hair").any()


def test_rerun_renders_nothing(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = project / "renders.log"
    monkeypatch.setenv("FAKE_GENERATOR_LOG", str(log))
    params = fake_params(3)
    build_faces(config_from_params(params))
    build_variations(config_from_params(params))
    first = log.read_text().splitlines()
    build_faces(config_from_params(params))
    build_variations(config_from_params(params))
    assert log.read_text().splitlines() == first


def test_refusals_recorded_and_retried(project: Path) -> None:
    params = fake_params(2, refuse=["Daring / Provocative"])
    build_faces(config_from_params(params))
    var = pd.read_parquet(build_variations(config_from_params(params)))
    bad = var[var["status"] == "refused"]
    assert len(bad) == 2 and bad["reason"].str.contains("policy").all() and bad["path"].isna().all()
    params = fake_params(2)
    params["generation"]["retry_failed"] = True
    var = pd.read_parquet(build_variations(config_from_params(params)))
    assert (var["status"] == "ok").all()


def _run_stage(project: Path, stage: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "pipelines" / f"{stage}.py")],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _write_params(project: Path, params: dict[str, Any]) -> None:
    from stylisticbias.config import dump_params

    (project / "params.yaml").write_text(dump_params(params))


@pytest.mark.slow  # a real SIGKILL of the stage script and five stage subprocesses
def test_killed_run_resumes_without_redoing(project: Path) -> None:
    params = fake_params(2, delay=0.02)
    _write_params(project, params)
    env = {
        **os.environ,
        "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "FAKE_GENERATOR_LOG": str(project / "renders.log"),
    }
    assert _run_stage(project, "faces", env).wait(60) == 0
    proc = _run_stage(project, "variations", env)
    deadline = time.time() + 60
    while time.time() < deadline:
        log = project / "renders.log"
        if (
            log.exists()
            and sum(1 for line in log.read_text().splitlines() if line.startswith("edit")) > 20
        ):
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = [
        x for x in (project / "renders.log").read_text().splitlines() if x.startswith("edit")
    ]
    assert 0 < len(done_before) < 99
    assert _run_stage(project, "variations", env).wait(120) == 0
    edits = [x for x in (project / "renders.log").read_text().splitlines() if x.startswith("edit")]
    # nothing rendered twice except at most the batch in flight when killed (<= batch_size)
    assert len(edits) - len(set(edits)) <= 4
    var = pd.read_parquet(project / params["paths"]["variations"] / "variations.parquet")
    assert var["image_id"].is_unique and len(set(edits)) == len(var)
    # identical to an uninterrupted build
    other = project / "clean"
    shutil.copytree(project / "conf", other / "conf")
    _write_params(other, params)
    assert _run_stage(other, "faces", env).wait(60) == 0
    assert _run_stage(other, "variations", env).wait(120) == 0
    clean = pd.read_parquet(other / params["paths"]["variations"] / "variations.parquet")
    pd.testing.assert_frame_equal(var, clean)
    for d in (params["paths"]["faces"], params["paths"]["variations"]):  # byte for byte
        assert _tree(project / d) == _tree(other / d), d
    assert not [p for p in (project / "data").rglob("*.tmp")], "a temp file was left behind"


def _tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def test_transient_errors_are_retried_not_cached(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An API outage fails the stage (so DVC records nothing) and the next run retries."""
    outage = project / "outage"
    outage.write_text("down")
    monkeypatch.setenv("FAKE_GENERATOR_OUTAGE", str(outage))
    params = fake_params(3)
    with pytest.raises(StylisticBiasError, match=r"transient error.*HTTP 503"):
        build_faces(config_from_params(params))
    assert not (project / params["paths"]["faces"]).exists()
    outage.unlink()
    faces = pd.read_parquet(build_faces(config_from_params(params)))
    assert (faces["status"] == "ok").all() and len(faces) == 3


def test_corrupt_or_missing_base_image(project: Path) -> None:
    params = fake_params(2)
    faces = pd.read_parquet(build_faces(config_from_params(params)))
    img = project / params["paths"]["faces"] / faces["path"].iloc[0]
    img.unlink()
    img.write_bytes(b"not a png")
    with pytest.raises(StylisticBiasError, match=r"corrupt image of face F0000"):
        build_variations(config_from_params(params))
    img.unlink()
    with pytest.raises(StylisticBiasError, match=r"missing image of face F0000"):
        build_variations(config_from_params(params))
    assert not (project / params["paths"]["variations"]).exists()


def _faces_with(params: dict, row: int, column: str, value: object) -> tuple[Path, pd.DataFrame]:
    """Build the faces, then overwrite one cell of their manifest; (manifest path, its rows)."""
    path = build_faces(config_from_params(params))
    df = pd.read_parquet(path)
    df.loc[row, column] = value
    df.to_parquet(path)
    return path, df


def test_manifest_failing_schema(project: Path) -> None:
    params = fake_params(2)
    path, df = _faces_with(params, 1, "status", "maybe")
    with pytest.raises(
        StylisticBiasError, match=r"faces.parquet: does not match the faces schema.*status"
    ):
        build_variations(config_from_params(params))
    df = df.drop(columns=["sha256"])
    df.to_parquet(path)
    with pytest.raises(StylisticBiasError, match=r"missing column\(s\) sha256"):
        build_variations(config_from_params(params))


def test_stage_cli_one_line_error(project: Path) -> None:
    params = compose(["faces.n=2"])
    params["protocol"] = edited_protocol(
        project, lambda p: p["observed_marginals"]["age"].update(teenager=3)
    )
    _write_params(project, params)
    proc = _run_stage(project, "faces", dict(os.environ))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    lines = [x for x in err.decode().splitlines() if x.strip()]
    assert len(lines) == 1 and "teenager" in lines[0] and "valid: young adult" in lines[0]
    assert not (project / "data").exists()


def test_generator_code_change_invalidates_cache(project: Path, monkeypatch) -> None:
    from stylisticbias.dataset import build

    log = project / "renders.log"
    monkeypatch.setenv("FAKE_GENERATOR_LOG", str(log))
    params = fake_params(1)
    build_faces(config_from_params(params))
    monkeypatch.setattr(build, "generator_code_version", lambda cfg: "changed")
    build_faces(config_from_params(params))
    assert log.read_text().splitlines() == ["face F0000", "face F0000"]


def test_unknown_variation_value_fails_before_rendering(project: Path) -> None:
    # the procedural generator draws a fixed set of values: a typo in conf/benchmark is caught
    # before any edit is rendered, and the existing dataset is left alone
    params = compose(["faces.n=2", "generator.size=64"])
    build_faces(config_from_params(params))

    def frecklez(p: dict) -> None:
        skin = next(a for a in p["attributes"] if a["key"] == "skin_irregularities")
        skin["values"][0]["value"] = "Frecklez"

    params["protocol"] = edited_protocol(project, frecklez)
    with pytest.raises(StylisticBiasError) as err:
        build_variations(config_from_params(params))
    msg = str(err.value)
    assert "1 variation value(s) the procedural generator cannot render" in msg
    assert "Frecklez" in msg and "valid: Freckles" in msg and "nothing was rendered" in msg
    assert not (project / params["paths"]["variations"]).exists()


def test_demographic_value_outside_the_benchmark(project: Path) -> None:
    params = fake_params(2)
    _faces_with(params, 1, "age", "teen")
    with pytest.raises(
        StylisticBiasError,
        match=r"faces.parquet: row 1 \(face F0001\): age 'teen' is not a value of conf/benchmark"
        r" \(1 such row\(s\)\); valid: young adult, middle-aged adult, elderly",
    ):
        build_variations(config_from_params(params))
    assert not (project / params["paths"]["variations"]).exists()
