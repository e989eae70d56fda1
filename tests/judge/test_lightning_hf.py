"""The Lightning path with the fast transformers engine: two CPU ranks, each image judged once.

Each rank builds its own ``HFJudgeEngine`` replica (``decoding: exact``: shared prefix, one
left-padded suffix batch per image, auto batch sizes) over its shard of the images; the union
of the ranks' shards must be every image exactly once and equal a single-process run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from judge_tables import judge_with, make_tables

from stylisticbias.config import load_group_option, project_root
from stylisticbias.judge.items import judge_items
from stylisticbias.judge.run import run_judge
from stylisticbias.judge.summary import run_log_path
from stylisticbias.schemas import JUDGMENT_RECORDS, read_table
from stylisticbias.spec.parse import config_from_params
from stylisticbias_dev.tiny import ensure_built

MODEL = "tiny-llava-next"
KEY = ["image_id", "scenario_id", "ordering", "seed"]


def _params(root: Path, devices: int) -> dict:
    params = make_tables(root, 1, values_per_face=3)
    judge_with(
        params,
        MODEL,
        decoding="exact",
        device="cpu",
        image_batch_size=1,
        lightning={"accelerator": "cpu", "devices": devices, "strategy": "ddp_fork"}
        if devices > 1
        else {"accelerator": "cpu", "devices": 1},
    )
    params["judge"] = {**params["judge"], "scenarios": [1, 2], "orderings": [1, 2, 3, 4]}
    return params


def test_two_cpu_ranks_judge_each_image_once_with_the_fast_engine(tmp_path: Path) -> None:
    cfg = load_group_option("model", MODEL)
    ensure_built(cfg["local_build"], project_root() / cfg["hub_id"])  # before the ranks fork
    params = _params(tmp_path / "ddp", 2)
    items = judge_items(config_from_params(params))
    assert len(items) >= 3
    out = run_judge(
        MODEL, config_from_params(params), progress=False, out_dir=tmp_path / "ddp" / "out"
    )
    # shards are folded into judgments.parquet; the run log keeps each rank's image count
    per_rank = json.loads(run_log_path(out).read_text())["images_per_rank"]
    assert len(per_rank) == 2 and min(per_rank) > 0, f"both ranks judged images: {per_rank}"
    assert sum(per_rank) == len(items), "each image exactly once"
    df = read_table(out / "judgments.parquet", JUDGMENT_RECORDS)
    assert sorted(df["image_id"].unique()) == sorted(it.image_id for it in items)
    assert set(df["engine"]) == {"hf"} and set(df["decoding"]) == {"exact"}
    assert len(df) == len(items) * 2 * 4 and not df.duplicated(KEY).any()
    # the same records as one process judging all images
    ref = read_table(
        run_judge(
            MODEL,
            config_from_params(_params(tmp_path / "one", 1)),
            progress=False,
            out_dir=tmp_path / "one" / "out",
        )
        / "judgments.parquet",
        JUDGMENT_RECORDS,
    )
    cols = ["p_pos", "p_neg", "p_invalid", "p_undecided"]
    pd.testing.assert_frame_equal(df.drop(columns=cols), ref.drop(columns=cols))
    assert (df[cols] - ref[cols]).abs().to_numpy().max() < 1e-9
