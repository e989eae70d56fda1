"""The sweep application without running a pipeline: checks before launch, launcher configs,
the per-job params file and stage locks, the shared dataset build."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from stylisticbias.cli import stage_lock_name
from stylisticbias.config import PARAMS_ENV, conf_dir, load_params
from stylisticbias.errors import StylisticBiasError
from stylisticbias.sweep.app import preflight
from stylisticbias.sweep.dataset import DONE, ensure_dataset

ROOT = Path(__file__).resolve().parents[2]


def _sweep(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "stylisticbias.sweep", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_bad_override_fails_in_one_line_before_any_job(tmp_path: Path) -> None:
    out = _sweep("-m", "model=simulated-strong,no-such-model", f"hydra.sweep.dir={tmp_path}/sw")
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "error:" in lines[0], out.stderr
    assert "model=no-such-model" in lines[0] and "simulated-weak" in lines[0]  # the choices
    assert not (tmp_path / "sw").exists()  # nothing launched


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("faces.n=2,0", "faces.n=0"),
        ("judge.seeds=[1],[1,1]", "judge.seeds"),
        ("model=simulated-strong,", "bad override"),
        ("no_such_key=1", "no_such_key"),
    ],
)
def test_bad_job_config_is_one_line(override: str, expected: str) -> None:
    with pytest.raises(StylisticBiasError, match=re.escape(expected)) as err:
        preflight(["-m", override])
    assert "\n" not in str(err.value)


def test_preflight_counts_every_job() -> None:
    assert preflight(["-m", "model=simulated-strong,simulated-weak", "judge.seeds=[1],[2]"]) == 4
    with pytest.raises(StylisticBiasError, match=r"faces\.n is swept"):
        preflight(["-m", "faces.n=2,3", "faces.sampler=uniform"])


@pytest.mark.parametrize(
    ("launcher", "target"),
    [
        ("basic", "hydra._internal.core_plugins.basic_launcher.BasicLauncher"),
        ("joblib", "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"),
        ("submitit_slurm", "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"),
        ("submitit_local", "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher"),
    ],
)
def test_launcher_configs_compose(launcher: str, target: str) -> None:
    """Every documented launcher composes with conf/sweep.yaml (no SLURM needed to compose)."""
    GlobalHydra.instance().clear()
    overrides = [f"hydra/launcher={launcher}", "model=simulated-weak"]
    if launcher == "submitit_slurm":
        overrides += ["hydra.launcher.partition=gpu", "hydra.launcher.timeout_min=240"]
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            cfg = compose("sweep", overrides=overrides, return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()
    assert cfg.hydra.launcher._target_ == target
    assert cfg.hydra.callbacks.sweep._target_ == "stylisticbias.sweep.callback.SweepCallback"
    if launcher == "submitit_slurm":
        assert cfg.hydra.launcher.partition == "gpu" and cfg.hydra.launcher.timeout_min == 240
    assert list(cfg.models) == ["simulated-weak"]


def test_stages_read_the_job_params_and_lock_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a" / "params.yaml", tmp_path / "b" / "params.yaml"
    for i, p in enumerate((a, b)):
        p.parent.mkdir()
        p.write_text(f"seed: {i}\n")
    monkeypatch.delenv(PARAMS_ENV, raising=False)
    assert stage_lock_name(["pipelines/judge.py", "m"]) == "judge-m"  # DVC's stages: unchanged
    monkeypatch.setenv(PARAMS_ENV, str(a))
    assert load_params() == {"seed": 0}
    lock_a = stage_lock_name(["pipelines/judge.py", "m"])
    monkeypatch.setenv(PARAMS_ENV, str(b))
    assert load_params() == {"seed": 1}
    lock_b = stage_lock_name(["pipelines/judge.py", "m"])
    assert lock_a != lock_b and lock_a.startswith("judge-m-") and lock_b.startswith("judge-m-")


def test_jobs_with_one_dataset_share_one_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four jobs racing for one dataset: built once (under the lock), the others wait for it.
    The build holds the lock until every job has reached it (counted, not slept for)."""
    from stylisticbias.config import compose as compose_params
    from stylisticbias.sweep import dataset
    from stylisticbias.sweep.spec import job_params

    params = job_params(compose_params(["faces.n=2"], "sweep"), None)
    builds: list[str] = []
    at_lock = threading.Semaphore(0)
    real_lock = dataset.blocking_lock

    def counted_lock(path: Path) -> Any:
        at_lock.release()  # this job found no finished build and now waits for the lock
        return real_lock(path)

    monkeypatch.setattr(dataset, "blocking_lock", counted_lock)

    def build(params_file: Path, key: str) -> None:
        assert params_file.is_file()
        builds.append(key)
        for _ in range(4):  # every job, this one included, reached the lock: none found DONE
            assert at_lock.acquire(timeout=300), "a job never reached the lock"

    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(ensure_dataset(params, tmp_path, build)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len(set(results)) == 1 and (results[0] / DONE).is_file()
