"""The judge stage's task protocol route: task records of the simulated judge."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chisquare

from stylisticbias.benchmark import load_benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.judge.run import run_task_judge, task_records, task_units
from stylisticbias.judge.protocol.tasks.records import validate_task_records


def faces(n: int) -> pd.DataFrame:
    """``n`` faces cycling over REFLECT's ten race x gender groups."""
    eth = ["White", "Black", "Asian", "Latino", "Middle Eastern"]
    return pd.DataFrame(
        {
            "face_id": [f"F{i:04d}" for i in range(n)],
            "image_id": [f"F{i:04d}-base" for i in range(n)],
            "ethnicity": [eth[i % 5] for i in range(n)],
            "gender": ["female" if (i // 5) % 2 == 0 else "male" for i in range(n)],
            "status": ["ok"] * n,
        }
    )


def test_protocol_kinds():
    assert load_benchmark("reflect").family == "tasks"
    assert load_benchmark("stylisticbias").family == "variation_shift"


def test_units_pair_cross_group_faces_within_blocks():
    singles, pairs = task_units(faces(12))
    assert len(singles) == 12
    assert pairs and all(ga != gb for _, _, (ga, gb) in pairs)
    # faces of one pair share their block of four
    for inst, (a, b), _ in pairs:
        assert int(a[1:5]) // 4 == int(b[1:5]) // 4 == int(inst[4:])


def test_records_follow_their_exact_distributions():
    """At large N the answers' outcome counts match the summed exact distributions."""
    bench = load_benchmark("reflect")
    rec = task_records(bench, faces(2000), "sim", seed=3)
    for tid in (1, 11):
        r = rec[(rec["task_id"] == tid)]
        dists = [json.loads(d) for d in r["dist"]]
        keys = sorted(dists[0])
        expected = np.array([sum(d[k] for d in dists) for k in keys])
        observed = np.array([(r["outcome"] == k).sum() for k in keys])
        assert chisquare(observed, expected).pvalue > 1e-3, tid
    # numeric answers carry a value and no distribution
    num = rec[rec["task"] == "numeric"]
    assert (num["dist"] == "").all()
    assert num.loc[num["outcome"] == "value", "value"].gt(0).all()


def vignette(*ids: int):
    """The VIGNETTE protocol with only the tasks ``ids`` (it asks 1,692)."""
    bench = load_benchmark("vignette")
    return dataclasses.replace(bench, tasks=tuple(bench.task_scenario(i) for i in ids))


def test_planted_pairwise_effect_and_valence_flip():
    """VIGNETTE: white-male is favoured for "friendly" and disfavoured for "unfriendly"."""
    bench = vignette(101, 102)
    rec = task_records(bench, faces(400), "sim", seed=1)

    def share(tid: int) -> float:
        r = rec[(rec["task_id"] == tid) & (rec["outcome"] != "invalid")]
        won = ((r["first"] == "white-male") & (r["outcome"] == "first")) | (
            (r["second"] == "white-male") & (r["outcome"] == "second")
        )
        return won.sum() / ((r["first"] == "white-male") | (r["second"] == "white-male")).sum()

    assert share(101) > 0.55 > 0.45 > share(102)


def test_schema_rejects_bad_distribution():
    rec = task_records(load_benchmark("reflect"), faces(8), "sim", seed=0)
    bad = rec.copy()
    i = int(np.flatnonzero(bad["dist"] != "")[0])
    bad.loc[i, "dist"] = json.dumps({"first": 0.9, "second": 0.3, "invalid": 0.0})
    with pytest.raises(StylisticBiasError, match=f"row {i}: dist sums to"):
        validate_task_records(bad, "x.parquet")
    with pytest.raises(StylisticBiasError, match="missing column"):
        validate_task_records(rec.drop(columns="dist"), "x.parquet")


def test_only_the_simulated_engine_is_routed(tmp_path):
    with pytest.raises(StylisticBiasError, match="engines that can: simulated"):
        run_task_judge(
            "m", {"engine": {"name": "hf"}}, load_benchmark("reflect"), tmp_path, tmp_path / "out"
        )


def test_records_carry_left_and_right_ids():
    """Every pairwise record names the image on the left (slot 1) and on the right; the
    swapped order mirrors them; single-image records leave them empty."""
    rec = task_records(vignette(101, 3021, 4021), faces(40), "sim", seed=2)
    pair = rec[rec["image_ids"].str.contains("|", regex=False)]
    ids = pair["image_ids"].str.split("|", expand=True)
    v0, v1 = pair["variant"] == 0, pair["variant"] == 1
    assert (pair.loc[v0, "left_id"] == ids.loc[v0, 0]).all()
    assert (pair.loc[v0, "right_id"] == ids.loc[v0, 1]).all()
    assert (pair.loc[v1, "left_id"] == ids.loc[v1, 1]).all()
    assert (pair.loc[v1, "right_id"] == ids.loc[v1, 0]).all()
    assert (rec.loc[~rec.index.isin(pair.index), ["left_id", "right_id"]] == "").all().all()


@pytest.mark.parametrize("bias", [0.3, 0.0])
def test_position_bias_table_recovers_a_planted_left_bias(monkeypatch, bias):
    """The simulated judge picks slot 1 (the left of the composite) with logit bias ``bias``;
    the position-bias table, read from the recorded left/right ids, recovers the planted
    share (its interval covers the closed-form truth; the test rejects only when planted)."""
    from scipy.special import expit

    from stylisticbias.families.tasks.analysis.records import task_tables_from_records
    from stylisticbias.families.tasks.judge import plants as task_plants
    from stylisticbias.judge.engines.simulated.tasks import TaskPlant

    plant = TaskPlant(
        shift={"black-female": -0.5, "white-male": 0.4}, position_bias=bias, invalid_rate=0.03
    )
    monkeypatch.setitem(task_plants.PLANTS, "pairwise", plant)
    bench = vignette(101)
    rec = task_records(bench, faces(200), "sim", seed=4)
    rec = rec[rec["task_id"] == 101]
    # the truth: the mean over the judged pairs of P(slot 1 chosen) in both orders
    _, pairs = task_units(faces(200))
    truth = (
        np.mean(
            [
                (expit(d + bias) + 1 - expit(d - bias)) / 2
                for _, _, (a, b) in pairs
                for d in [plant.effect(a) - plant.effect(b)]
            ]
        )
        - 0.5
    )
    pb = task_tables_from_records(rec, bench, "sim", n_boot=200)["task_position_bias"].iloc[0]
    assert pb["ci_low"] <= truth <= pb["ci_high"]
    assert (pb["pval"] < 0.01) == (bias != 0)
    # the recorded positions, not the variant: scrambling left_id breaks the estimate
    flipped = rec.assign(left_id=rec["right_id"])
    pf = task_tables_from_records(flipped, bench, "sim", n_boot=20)["task_position_bias"].iloc[0]
    assert pf["position_bias"] == pytest.approx(-pb["position_bias"])
