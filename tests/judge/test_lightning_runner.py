"""The Lightning runner: complete output, decode failures, two CPU ranks with disjoint shards."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from judge_tables import judge_with, make_tables

from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine
from stylisticbias.judge.items import judge_items
from stylisticbias.judge.run import run_judge
from stylisticbias.judge.summary import run_log_path
from stylisticbias.schemas import JUDGMENT_RECORDS, read_table
from stylisticbias.spec.parse import config_from_params

MODEL = "simulated-strong"
KEY = ["image_id", "scenario_id", "ordering", "seed"]


def _run(params: dict, **kw) -> tuple[Path, pd.DataFrame]:
    out = run_judge(MODEL, config_from_params(params), progress=False, **kw)
    return out, read_table(out / "judgments.parquet", JUDGMENT_RECORDS)


def _set_manifest_sha(root: Path, image_id: str, data: bytes) -> None:
    """Record ``data``'s sha256 for ``image_id`` in the test tables (as its generator would)."""
    import hashlib

    for name in ("faces/faces.parquet", "variations/variations.parquet"):
        t = pd.read_parquet(root / name)
        hit = t["image_id"] == image_id
        if hit.any():
            t.loc[hit, "sha256"] = hashlib.sha256(data).hexdigest()
            t.to_parquet(root / name, index=False)


def test_single_process_run_is_complete(tmp_path: Path) -> None:
    params = make_tables(tmp_path, 4)
    judge_with(params, MODEL, image_batch_size=16)
    items = judge_items(config_from_params(params))
    # refused and non-evaluated variations are not judged
    assert all("refused" not in it.image_id for it in items)
    out, df = _run(params)
    assert set(df["image_id"]) == {it.image_id for it in items}
    assert len(df) == len(items) * 25 * 4 * 3
    assert not df.duplicated(KEY).any()
    assert df[KEY].equals(df[KEY].sort_values(KEY).reset_index(drop=True))
    run = json.loads(run_log_path(out).read_text())
    assert run["model"] == MODEL and run["simulated"] is True and run["engine"] == "simulated"
    assert run["n_images"] == len(items) and run["images_judged"] == len(items)
    assert run["images_per_s"] > 0 and run["prompts_per_s"] > run["images_per_s"]
    assert abs(run["invalid_rate"] - 0.02) < 1e-9 and run["undecided_mass"] == 0
    assert json.loads((out / "failures.json").read_text()) == []
    assert not (out / "shards").exists(), "shards are folded into judgments.parquet"
    assert sorted(p.name for p in out.iterdir()) == [
        "_fingerprint.json",
        "failures.json",
        "judgments.parquet",
    ]
    # all images: the non-evaluated variations too
    params["judge"] = {**params["judge"], "images": "all"}
    assert len(judge_items(config_from_params(params))) > len(items)


def test_undecodable_image_is_reported_and_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    params = make_tables(tmp_path, 2)
    judge_with(params, MODEL, image_batch_size=4)
    items = judge_items(config_from_params(params))
    bad = items[3]
    Path(bad.path).write_bytes(b"not a png")
    _set_manifest_sha(tmp_path, bad.image_id, b"not a png")  # a generator that wrote garbage
    monkeypatch.setattr(SimulatedJudgeEngine, "reads_pixels", True)
    out, df = _run(params)
    assert bad.image_id not in set(df["image_id"])
    assert df["image_id"].nunique() == len(items) - 1
    failures = json.loads((out / "failures.json").read_text())
    assert [f["image_id"] for f in failures] == [bad.image_id]
    assert "1 image(s) could not be decoded" in caplog.text and bad.image_id in caplog.text
    run = json.loads(run_log_path(out).read_text())
    assert run["n_failures"] == 1
    # once the file is fixed, a re-run judges just that image
    Path(bad.path).write_bytes(Path(items[0].path).read_bytes())
    _set_manifest_sha(tmp_path, bad.image_id, Path(items[0].path).read_bytes())
    out, df2 = _run(params)
    assert df2["image_id"].nunique() == len(items)
    assert json.loads((out / "failures.json").read_text()) == []
    assert json.loads(run_log_path(out).read_text())["images_judged"] == 1


@pytest.mark.parametrize(
    "strategy", ["ddp_fork", pytest.param("ddp_spawn", marks=pytest.mark.slow)]
)
def test_two_cpu_ranks_write_disjoint_complete_shards(tmp_path: Path, strategy: str) -> None:
    """DDP (gloo) on 2 CPU processes: every image in exactly one rank's shards, none twice."""
    params = make_tables(tmp_path / "ddp", 3)
    judge_with(
        params,
        MODEL,
        image_batch_size=5,
        lightning={"accelerator": "cpu", "devices": 2, "strategy": strategy, "num_nodes": 1},
    )
    out, df = _run(params)
    items = judge_items(config_from_params(params))
    per_rank = json.loads(run_log_path(out).read_text())["images_per_rank"]
    assert len(per_rank) == 2 and min(per_rank) > 0, per_rank
    assert sum(per_rank) == len(items), "an image judged on two ranks (or twice)"
    assert not df.duplicated(KEY).any() and df["image_id"].nunique() == len(items)
    # identical to a single-process run of the same images
    single = make_tables(tmp_path / "single", 3)
    _, ref = _run(single)
    pd.testing.assert_frame_equal(df, ref)
    run = json.loads(run_log_path(out).read_text())
    assert run["images_judged"] == len(items)


def test_an_engine_without_weights_is_judged_in_process_as_lightning_judges_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulated judge on one device runs without a Trainer: the same records, failures and
    run log as Lightning's run of it (``runner: lightning``)."""
    from stylisticbias.judge import inline_runner, lightning_runner
    from stylisticbias.judge.predict_core import runs_inline

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the other runner ran")

    inline = make_tables(tmp_path / "inline", 3)
    judge_with(inline, MODEL, image_batch_size=7)
    with monkeypatch.context() as m:
        m.setattr(lightning_runner, "predict", refuse)
        out_i, got = _run(inline)
    lightning = make_tables(tmp_path / "lightning", 3)
    judge_with(lightning, MODEL, image_batch_size=7, runner="lightning")
    with monkeypatch.context() as m:
        m.setattr(inline_runner, "predict", refuse)
        out_l, want = _run(lightning)
    pd.testing.assert_frame_equal(got, want)
    assert (out_i / "failures.json").read_text() == (out_l / "failures.json").read_text()
    run_i, run_l = (json.loads(run_log_path(o).read_text()) for o in (out_i, out_l))
    for key in ("images_judged", "n_images", "images_per_rank", "n_failures", "invalid_rate"):
        assert run_i[key] == run_l[key], key
    eng = type("E", (), {"needs_device": False})()
    assert runs_inline(eng, {"lightning": {"devices": 1}})
    assert not runs_inline(eng, {"lightning": {"devices": 2}})  # ranks to shard over
    assert not runs_inline(eng, {"lightning": {"num_nodes": 2}})
    assert not runs_inline(eng, {"runner": "lightning"})
    assert not runs_inline(type("W", (), {"needs_device": True})(), {})  # weights to place


def test_the_in_process_runner_does_not_import_lightning() -> None:
    import subprocess
    import sys

    code = (
        "import sys, stylisticbias.judge.inline_runner, stylisticbias.judge.run;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('lightning', 'torchmetrics'));"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
