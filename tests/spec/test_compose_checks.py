"""Composition fails in one line on a misspelt key, a wrong type or an out-of-range value.

Each case composes a copy of ``conf/`` (``python -m stylisticbias.configure compose``) and checks
the message names the key, where it came from (file or override) and the valid keys; that the
exit status is 2; and that neither ``params.yaml`` nor anything under ``data/`` was touched.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from stylisticbias import config, configure
from stylisticbias.config import compose
from stylisticbias.errors import StylisticBiasError


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of conf/ + params.yaml + a data/ folder with a file, as the working project."""
    root = config.project_root()
    shutil.copytree(root / "conf", tmp_path / "conf")
    shutil.copy(root / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "data" / "faces").mkdir(parents=True)
    (tmp_path / "data" / "faces" / "faces.parquet").write_bytes(b"keep me")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _snapshot(root: Path) -> dict[str, str]:
    files = [root / "params.yaml", *sorted((root / "data").rglob("*"))]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files if p.is_file()}


def _fails(root: Path, overrides: list[str], caplog: pytest.LogCaptureFixture) -> str:
    before = _snapshot(root)
    caplog.clear()
    assert configure.main(["compose", *overrides]) == 2
    assert _snapshot(root) == before, "a failed composition touched params.yaml or data/"
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    return errors[0]


# (file under conf/, a line appended at its top level, the misspelt key, words of the valid keys)
YAML_CASES = [
    ("config.yaml", "sed: 1", "sed", ["seed", "paths", "faces", "judge", "models"]),
    ("experiment/demo.yaml", "gallery: {max_face: 3}", "gallery.max_face", ["max_faces"]),
    ("model/simulated-strong.yaml", "efect_scale: 0.5", "efect_scale", ["effect_scale"]),
    ("model/qwen3-vl-8b.yaml", "hub: x", "hub", ["hub_id", "revision"]),
    ("engine/simulated.yaml", "image_batchsize: 3", "image_batchsize", ["image_batch_size"]),
    ("engine/hf.yaml", "prune_treshold: 0.1", "prune_treshold", ["prune_threshold"]),
    ("generator/procedural.yaml", "sizee: 3", "sizee", ["size", "batch_size"]),
    ("analysis/default.yaml", "alpah: 0.1", "alpah", ["alpha", "strong_alpha"]),
    ("tracking/mlflow.yaml", "tracking_url: x", "tracking_url", ["tracking_uri"]),
]


@pytest.mark.parametrize(
    ("rel", "line", "key", "valid"), YAML_CASES, ids=[c[0] for c in YAML_CASES]
)
def test_misspelt_key_in_any_yaml_fails(
    project: Path, caplog: pytest.LogCaptureFixture, rel: str, line: str, key: str, valid: list[str]
) -> None:
    path = project / "conf" / rel
    path.write_text(path.read_text() + line + "\n")
    if rel.startswith("engine/hf") or rel.startswith("model/qwen"):
        overrides = ["model=[qwen3-vl-8b]"]  # make the composition use the file
    else:
        overrides = []
    msg = _fails(project, overrides, caplog)
    assert key in msg, msg
    assert f"conf/{rel}" in msg, msg
    for word in valid:
        assert word in msg, msg


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("faces.nn=3", ["faces.nn", "override faces.nn=3", "n, sampler, seed"]),
        ("+faces.nn=3", ["faces.nn", "n, sampler, seed"]),
        ("judge.seed=[1]", ["judge.seed", "seeds"]),
        ("bogus=1", ["bogus", "judge", "models"]),
        ("model=[gpt-17]", ["gpt-17", "simulated-strong", "qwen3-vl-8b"]),
        ("+models.simulated-strong.engine.planted_x=1", ["planted_x", "planted"]),
    ],
)
def test_misspelt_override_fails(
    project: Path, caplog: pytest.LogCaptureFixture, override: str, words: list[str]
) -> None:
    msg = _fails(project, [override], caplog)
    for word in words:
        assert word in msg, msg


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("faces.n=abc", ["faces.n", "abc"]),
        ("faces.n=0", ["faces.n", ">= 1"]),
        ("faces.n=-5", ["faces.n", ">= 1"]),
        ("faces.n=2.5", ["faces.n"]),
        ("judge.seeds=[]", ["judge.seeds", "at least one"]),
        ("judge.seeds=[1,1]", ["judge.seeds", "repeated"]),
        ("judge.seeds=[0]", ["judge.seeds", ">= 1"]),
        ("judge.temperature=0", ["judge.temperature", "(0, 5]"]),
        ("judge.images=some", ["judge.images", "evaluated", "all"]),
        ("faces.sampler=random", ["faces.sampler", "paper_marginals", "uniform"]),
        ("tracking.timeout_s=0", ["tracking.timeout_s"]),
        ("models.simulated-strong.engine.image_batch_size=0", ["image_batch_size", ">= 1"]),
    ],
)
def test_bad_value_fails(
    project: Path, caplog: pytest.LogCaptureFixture, override: str, words: list[str]
) -> None:
    msg = _fails(project, [override], caplog)
    for word in words:
        assert word in msg, msg


def test_good_composition_writes_params(project: Path) -> None:
    assert configure.main(["compose", "faces.n=7", "model=[simulated-weak,qwen3-vl-8b]"]) == 0
    cfg = config.load_config(project / "params.yaml")
    assert cfg.faces.n == 7
    assert cfg.model_names == ["simulated-weak", "qwen3-vl-8b"]
    assert cfg.model("qwen3-vl-8b").engine.decoding == "exact"
    with pytest.raises(StylisticBiasError, match="not judged"):
        cfg.model("pixtral-12b")


def test_yaml_syntax_error_is_one_line(project: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = project / "conf" / "experiment" / "demo.yaml"
    path.write_text(path.read_text() + "faces: {n: 3}\n")  # a duplicate key
    msg = _fails(project, [], caplog)
    assert "demo.yaml" in msg and "faces" in msg, msg


def test_specs_are_frozen() -> None:
    import dataclasses

    from stylisticbias.spec.parse import config_from_params

    cfg = config_from_params(compose())
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.faces.n = 3  # type: ignore[misc]


def test_params_yaml_with_unknown_key_fails_at_load(tmp_path: Path) -> None:
    import yaml

    params = compose()
    params["judge"]["temprature"] = 0.3
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump(params))
    with pytest.raises(StylisticBiasError, match=r"judge\.temprature.*temperature"):
        config.load_config(p)
