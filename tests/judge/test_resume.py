"""Resuming a judge run: after SIGKILL, corrupt shards, or a changed configuration."""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from judge_tables import judge_with, make_tables

from stylisticbias.judge.items import judge_items
from stylisticbias.judge.run import run_judge
from stylisticbias.judge.summary import run_log_path
from stylisticbias.schemas import JUDGMENT_RECORDS, read_table
from stylisticbias.spec.parse import config_from_params

MODEL = "simulated-strong"
ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys, time
    from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine
    from stylisticbias.judge.run import run_judge
    from stylisticbias.spec.parse import config_from_params

    judge = SimulatedJudgeEngine.judge
    def slow_judge(self, items, images):
        time.sleep(0.25)
        return judge(self, items, images)
    SimulatedJudgeEngine.judge = slow_judge
    params = json.load(open(sys.argv[1]))
    run_judge("simulated-strong", config_from_params(params), progress=False, out_dir=sys.argv[2])
    """
)


def _judgments(out: Path) -> pd.DataFrame:
    return read_table(out / "judgments.parquet", JUDGMENT_RECORDS)


@pytest.mark.slow  # a real SIGKILL of a child judge; in-process: test_corrupt_and_truncated_*
def test_sigkill_mid_run_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    params = make_tables(tmp_path, 4)
    judge_with(params, MODEL, image_batch_size=2)
    n_items = len(judge_items(config_from_params(params)))
    ref = _judgments(
        run_judge(MODEL, config_from_params(params), progress=False, out_dir=tmp_path / "ref")
    )

    out = tmp_path / "killed"
    (tmp_path / "params.json").write_text(json.dumps(params))
    (tmp_path / "child.py").write_text(CHILD)
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "child.py"), str(tmp_path / "params.json"), str(out)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    shards = out / "shards"
    deadline = time.monotonic() + 600  # a hang guard (the child stalled), never a speed bound
    try:
        while len(list(shards.glob("shard-*.parquet"))) < 3:
            assert proc.poll() is None, "child finished before it could be killed"
            assert time.monotonic() < deadline, "no shards appeared"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    written = len(list(shards.glob("shard-*.parquet")))
    assert 3 <= written < -(-n_items // 2), "the run must be killed mid-way"
    assert not (out / "judgments.parquet").exists()

    resumed = _judgments(run_judge(MODEL, config_from_params(params), progress=False, out_dir=out))
    pd.testing.assert_frame_equal(resumed, ref)
    # the whole directory, byte for byte (so its DVC hash too): no shard or temp file is left
    assert _tree(out) == _tree(tmp_path / "ref")
    run = json.loads(run_log_path(out).read_text())
    assert (
        run["images_resumed"] >= 2 * 3 and run["images_judged"] + run["images_resumed"] == n_items
    )


def _split_into_shards(out: Path, n: int) -> list[Path]:
    """Turn a finished run back into ``n`` shards (as if it had been killed before the end)."""
    from stylisticbias.judge.writer import shard_name, write_shard

    df = pd.read_parquet(out / "judgments.parquet")
    ids = sorted(df["image_id"].unique())
    paths = []
    for k in range(n):
        part = ids[k::n]
        sub = df[df["image_id"].isin(part)].reset_index(drop=True)
        p = out / "shards" / shard_name(part)
        p.parent.mkdir(parents=True, exist_ok=True)
        paths.append(write_shard(sub, p))
    (out / "judgments.parquet").unlink()
    return paths


def test_corrupt_and_truncated_shards_are_redone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    params = make_tables(tmp_path, 3)
    judge_with(params, MODEL, image_batch_size=4)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    ref = _judgments(out)
    assert not (out / "shards").exists(), "shards are folded into judgments.parquet"
    shards = _split_into_shards(out, 4)
    redo = set(pd.read_parquet(shards[0])["image_id"]) | set(pd.read_parquet(shards[1])["image_id"])
    data = shards[0].read_bytes()
    shards[0].write_bytes(data[: len(data) // 2])  # truncated by a crash
    bad_rows = pd.read_parquet(shards[1]).iloc[:-5]  # readable but incomplete
    bad_rows.to_parquet(shards[1], index=False)
    (out / "shards" / ".shard-deadbeef0000.parquet.tmp").write_bytes(b"partial")

    caplog.clear()
    again = _judgments(run_judge(MODEL, config_from_params(params), progress=False))
    pd.testing.assert_frame_equal(again, ref)
    assert shards[0].name in caplog.text and shards[1].name in caplog.text
    assert not (out / "shards").exists()
    run = json.loads(run_log_path(out).read_text())
    assert run["images_judged"] == len(redo)
    # a second resume has nothing to do and keeps the records
    pd.testing.assert_frame_equal(
        _judgments(run_judge(MODEL, config_from_params(params), progress=False)), ref
    )
    assert json.loads(run_log_path(out).read_text())["images_judged"] == 0


def test_changed_configuration_keeps_old_records_and_reuses_them(tmp_path: Path) -> None:
    params = make_tables(tmp_path, 2)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    ref = (out / "judgments.parquet").read_bytes()
    changed = {**params, "judge": {**params["judge"], "seeds": [1, 2]}}
    df = _judgments(run_judge(MODEL, config_from_params(changed), progress=False))
    assert sorted(df["seed"].unique()) == [1, 2]
    assert json.loads(run_log_path(out).read_text())["images_resumed"] == 0
    stash = out.parent / f".{out.name}.stash"
    assert len(list(stash.rglob("*.parquet"))) == 1, "the first configuration's records are kept"
    # back to the first configuration: nothing is judged again, the bytes are the same
    run_judge(MODEL, config_from_params(params), progress=False)
    run = json.loads(run_log_path(out).read_text())
    assert run["images_judged"] == 0 and run["images_resumed"] == len(
        judge_items(config_from_params(params))
    )
    assert (out / "judgments.parquet").read_bytes() == ref


@pytest.fixture(scope="module")
def _finished_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("finished")
    params = make_tables(root, 2)
    judge_with(params, MODEL)
    run_judge(MODEL, config_from_params(params), progress=False)
    return root, params


@pytest.fixture
def finished(tmp_path: Path, _finished_run: tuple[Path, dict]) -> tuple[dict, Path]:
    """A finished run of MODEL on two faces (judged once per module), copied into
    ``tmp_path``: its params (paths pointing at the copy) and its output directory."""
    src, params = _finished_run
    shutil.copytree(src, tmp_path, symlinks=True, dirs_exist_ok=True)
    params = copy.deepcopy(params)
    for key in ("data", "faces", "variations", "judgments", "scores"):
        params["paths"][key] = str(tmp_path / Path(params["paths"][key]).relative_to(src))
    return params, tmp_path / "judgments" / MODEL


@pytest.mark.parametrize(
    "change",
    [
        {"judge": {"undecided_warn": 0.04}},
        {"judge": {"undecided_max": 0.9}},
        {"judge": {"parser": "official"}},
        {"model": {"paper_name": "Some paper name", "display_name": "Shown"}},
    ],
)
def test_settings_that_change_no_record_judge_nothing_again(
    finished: tuple[dict, Path], change: dict
) -> None:
    """Only what changes a record enters the fingerprint: scores' settings and labels don't."""
    params, out = finished
    ref = (out / "judgments.parquet").read_bytes()
    changed = {**params, "judge": {**params["judge"], **change.get("judge", {})}}
    changed["models"] = {MODEL: {**params["models"][MODEL], **change.get("model", {})}}
    run_judge(MODEL, config_from_params(changed), progress=False)
    assert json.loads(run_log_path(out).read_text())["images_judged"] == 0
    assert (out / "judgments.parquet").read_bytes() == ref
    assert not (out.parent / f".{out.name}.stash").exists()


def test_records_under_the_earlier_fingerprint_are_this_configurations(tmp_path: Path) -> None:
    """Records judged when labels and scores' settings still counted in the fingerprint are
    recognised (its ``aliases``), not stashed and judged again."""
    params = make_tables(tmp_path, 2)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    ref = (out / "judgments.parquet").read_bytes()
    fp = json.loads((out / "_fingerprint.json").read_text())
    assert fp["aliases"] and fp["aliases"][0] != fp["sha256"]
    earlier = {"sha256": fp["aliases"][0], "config": fp["config"]}
    (out / "_fingerprint.json").write_text(json.dumps(earlier))
    run_judge(MODEL, config_from_params(params), progress=False)
    assert json.loads(run_log_path(out).read_text())["images_judged"] == 0
    assert (out / "judgments.parquet").read_bytes() == ref
    assert json.loads((out / "_fingerprint.json").read_text()) == fp
    assert not (out.parent / f".{out.name}.stash").exists()


def test_a_run_that_judges_nothing_opens_no_mlflow_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import stylisticbias.tracking as tracking

    calls: list[dict] = []
    monkeypatch.setattr(tracking, "log_judge_run", lambda spec, p, s: calls.append(s) or "r1")
    params = make_tables(tmp_path, 2)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    assert len(calls) == 1 and json.loads(run_log_path(out).read_text())["mlflow_run_id"] == "r1"
    run_judge(MODEL, config_from_params(params), progress=False)  # everything already judged
    assert len(calls) == 1
    run = json.loads(run_log_path(out).read_text())
    assert run["images_judged"] == 0 and run["mlflow_run_id"] == "r1"


def test_records_of_images_left_out_are_kept(tmp_path: Path) -> None:
    """Judging fewer images (a smaller run) must not delete the records of the others."""
    params = make_tables(tmp_path, 4)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    ref = (out / "judgments.parquet").read_bytes()
    full = judge_items(config_from_params(params))
    faces = pd.read_parquet(tmp_path / "faces" / "faces.parquet")
    small = faces.iloc[:2]
    small.to_parquet(tmp_path / "faces" / "faces.parquet", index=False)
    variations = pd.read_parquet(tmp_path / "variations" / "variations.parquet")
    variations[variations["face_id"].isin(small["face_id"])].to_parquet(
        tmp_path / "variations" / "variations.parquet", index=False
    )
    n_small = len(judge_items(config_from_params(params)))
    assert n_small < len(full)
    run_judge(MODEL, config_from_params(params), progress=False)
    assert _judgments(out)["image_id"].nunique() == n_small
    faces.to_parquet(tmp_path / "faces" / "faces.parquet", index=False)
    variations.to_parquet(tmp_path / "variations" / "variations.parquet", index=False)
    run_judge(MODEL, config_from_params(params), progress=False)
    assert json.loads(run_log_path(out).read_text())["images_judged"] == 0
    assert (out / "judgments.parquet").read_bytes() == ref


def _rerender(params: dict, image_ids: list[str], seed: int) -> None:
    """Give ``image_ids`` new bytes and record their sha256 in the manifests (as a re-render or
    a re-import with the same ids does)."""
    import hashlib

    from PIL import Image

    items = {it.image_id: it for it in judge_items(config_from_params(params))}
    for table in (
        Path(params["paths"]["faces"]) / "faces.parquet",
        Path(params["paths"]["variations"]) / "variations.parquet",
    ):
        df = pd.read_parquet(table)
        for iid in image_ids:
            if iid in set(df["image_id"]):
                path = Path(items[iid].path)
                Image.new("RGB", (8, 8), (seed % 256, 7, 7)).save(path)
                df.loc[df["image_id"] == iid, "sha256"] = hashlib.sha256(
                    path.read_bytes()
                ).hexdigest()
        df.to_parquet(table, index=False)


def test_image_whose_bytes_changed_is_judged_again_and_old_records_kept(tmp_path: Path) -> None:
    """Records are about bytes: exactly the re-rendered images are judged again; the records
    of their old bytes are kept and used again when those bytes come back."""
    params = make_tables(tmp_path, 3)
    items = judge_items(config_from_params(params))
    out = run_judge(MODEL, config_from_params(params), progress=False)
    ref = (out / "judgments.parquet").read_bytes()
    first = _judgments(out)
    assert dict(zip(first["image_id"], first["image_sha256"])) == {
        it.image_id: it.sha256 for it in items
    }
    changed = [items[0].image_id, items[3].image_id]
    _rerender(params, changed, seed=200)
    run_judge(MODEL, config_from_params(params), progress=False)
    run = json.loads(run_log_path(out).read_text())
    assert run["images_judged"] == 2 and run["images_resumed"] == len(items) - 2
    now = {it.image_id: it.sha256 for it in judge_items(config_from_params(params))}
    df = _judgments(out)
    assert dict(zip(df["image_id"], df["image_sha256"])) == now
    assert df["image_id"].nunique() == len(items)
    # the old bytes come back (the previous render, restored): nothing is judged, same bytes
    make_tables(tmp_path, 3)
    run_judge(MODEL, config_from_params(params), progress=False)
    assert json.loads(run_log_path(out).read_text())["images_judged"] == 0
    assert (out / "judgments.parquet").read_bytes() == ref


def test_records_written_before_image_hashes_are_kept_not_trusted(tmp_path: Path) -> None:
    """A judgments table of an earlier version (no ``image_sha256``): its images are judged
    again (nothing says which bytes it judged) and its records are kept in the stash."""
    params = make_tables(tmp_path, 2)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    legacy = pd.read_parquet(out / "judgments.parquet").drop(columns=["image_sha256"])
    legacy.to_parquet(out / "judgments.parquet", index=False)
    run_judge(MODEL, config_from_params(params), progress=False)
    items = judge_items(config_from_params(params))
    assert json.loads(run_log_path(out).read_text())["images_judged"] == len(items)
    assert set(_judgments(out)["image_sha256"]) == {it.sha256 for it in items}
    kept = [pd.read_parquet(p) for p in (out.parent / f".{out.name}.stash").rglob("*.parquet")]
    assert len(kept) == 1 and set(kept[0]["image_sha256"]) == {""}
    pd.testing.assert_frame_equal(kept[0].drop(columns=["image_sha256"]), legacy)


def _tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize(
    "change",
    [{"seeds": [1, 1]}, {"seeds": []}, {"temperature": -1}, {"orderings": [1, 9]}],
)
def test_bad_judge_settings_never_touch_finished_judgments(
    tmp_path: Path, finished: tuple[dict, Path], change: dict
) -> None:
    from stylisticbias.errors import StylisticBiasError

    params, out = finished
    before = _tree(tmp_path)
    bad = {**params, "judge": {**params["judge"], **change}}
    with pytest.raises(StylisticBiasError, match="judge\\."):
        run_judge(MODEL, config_from_params(bad), progress=False)
    assert _tree(tmp_path) == before and (out / "judgments.parquet").exists()


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../../outside.png", "images/../../../outside.png", "link.png"]
)
def test_manifest_paths_leaving_the_data_root_are_refused_unread(
    tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import stylisticbias.judge.items as judge_items_module
    from stylisticbias.errors import StylisticBiasError

    params = make_tables(tmp_path / "d", 2)
    (tmp_path / "outside.png").write_bytes((tmp_path / "d/faces/images/f000.png").read_bytes())
    os.symlink(tmp_path / "outside.png", tmp_path / "d/faces/link.png")
    faces = pd.read_parquet(tmp_path / "d/faces/faces.parquet")
    faces.loc[1, "path"] = path
    faces.to_parquet(tmp_path / "d/faces/faces.parquet", index=False)
    opened: list[str] = []
    monkeypatch.setattr(judge_items_module, "sha256_file", lambda p: opened.append(str(p)) or "")
    with pytest.raises(StylisticBiasError, match=r"leaves|absolute") as exc:
        run_judge(MODEL, config_from_params(params), progress=False)
    assert "faces.parquet row 1" in str(exc.value)
    assert not opened and not (tmp_path / "d/judgments").exists()


def test_image_whose_bytes_changed_is_refused(tmp_path: Path) -> None:
    from stylisticbias.errors import StylisticBiasError

    params = make_tables(tmp_path, 2)
    items = judge_items(config_from_params(params))
    Path(items[2].path).write_bytes(Path(items[0].path).read_bytes())
    with pytest.raises(StylisticBiasError, match="sha256") as exc:
        run_judge(MODEL, config_from_params(params), progress=False)
    assert items[2].image_id in str(exc.value)
    assert not (tmp_path / "judgments").exists()


def test_second_judge_process_on_one_output_is_refused(tmp_path: Path) -> None:
    from stylisticbias.config import project_root
    from stylisticbias.errors import StylisticBiasError
    from stylisticbias.outputs import OutputLock

    params = make_tables(tmp_path, 2)
    out = tmp_path / "judgments" / MODEL
    with OutputLock(project_root(), out), pytest.raises(StylisticBiasError, match="another"):
        run_judge(MODEL, config_from_params(params), progress=False)
