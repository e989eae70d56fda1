"""Score partitions (model=<name>/): round trip, errors, and the documented DuckDB query."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from stylisticbias.config import project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.score_store import (
    check_model_name,
    partition_dir,
    read_model_scores,
    scores_digest,
    scores_file,
    write_model_scores,
)


def _scores(model: str, shift: float = 0.0) -> pd.DataFrame:
    rows = []
    for f in range(3):
        for s in (1, 2):
            base = 0.5 + 0.1 * f
            rows.append((model, f"f{f}--base", f"f{f}", True, None, None, None, s, base, None))
            phi = min(1.0, base + shift + 0.01 * s)
            rows.append(
                (
                    model,
                    f"f{f}--cap",
                    f"f{f}",
                    False,
                    "Accessories",
                    "Accessories",
                    "Cap",
                    s,
                    phi,
                    phi - base,
                )
            )
    cols = [
        "model",
        "image_id",
        "face_id",
        "is_base",
        "category",
        "attribute",
        "value",
        "scenario_id",
        "phi",
        "delta",
    ]
    df = pd.DataFrame(rows, columns=cols)
    df["age"], df["gender"], df["ethnicity"], df["body_type"] = "young", "male", "Asian", "thin"
    df["scenario_category"] = "Character"
    df["n_valid"], df["n"], df["simulated"] = 12.0, 12, True
    return df


def test_round_trip_and_hive_layout(tmp_path) -> None:
    df = _scores("m-1")
    p = write_model_scores(df, tmp_path, "m-1")
    assert p == tmp_path / "model=m-1" / "part-0.parquet"
    assert "model" not in pq.read_schema(p).names  # the partition key is the directory
    back = read_model_scores(tmp_path, "m-1")
    assert back.columns[0] == "model" and (back.model == "m-1").all()
    pd.testing.assert_frame_equal(
        back[df.columns].reset_index(drop=True), df.reset_index(drop=True), check_dtype=False
    )
    # pyarrow reads the tree as one hive dataset, the model restored from the path
    write_model_scores(_scores("m-2", 0.1), tmp_path, "m-2")
    t = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert sorted(set(t.column("model").to_pylist())) == ["m-1", "m-2"]
    # rewriting replaces the partition (no stale files), and changes the digest
    d1 = scores_digest(tmp_path, "m-1")
    write_model_scores(_scores("m-1", 0.2), tmp_path, "m-1")
    assert [x.name for x in partition_dir(tmp_path, "m-1").iterdir()] == ["part-0.parquet"]
    assert scores_digest(tmp_path, "m-1") != d1
    assert not list(tmp_path.glob(".*"))  # no temporary directories left


def test_errors_name_the_file(tmp_path) -> None:
    with pytest.raises(StylisticBiasError, match=r"model=m9/part-0\.parquet: not found.*scores@m9"):
        read_model_scores(tmp_path, "m9")
    _scores("m9").to_parquet(tmp_path / "m9.parquet")
    with pytest.raises(StylisticBiasError, match=r"m9\.parquet: a score table in the old"):
        read_model_scores(tmp_path, "m9")
    with pytest.raises(StylisticBiasError, match=r"other model\(s\) \['m2'\]"):
        write_model_scores(_scores("m2"), tmp_path, "m1")
    with pytest.raises(StylisticBiasError, match=r"model name 'a/b'.*letters, digits"):
        check_model_name("a/b")
    with pytest.raises(StylisticBiasError, match=r"model name 'x=1'"):
        scores_file(tmp_path, "x=1")
    bad = _scores("m3").drop(columns=["model", "delta"])
    p = scores_file(tmp_path, "m3")
    p.parent.mkdir(parents=True)
    bad.to_parquet(p)
    with pytest.raises(StylisticBiasError, match=r"m3/part-0\.parquet.*missing column\(s\) delta"):
        read_model_scores(tmp_path, "m3")
    p.write_bytes(b"not parquet")
    with pytest.raises(StylisticBiasError, match=r"m3/part-0\.parquet: not a readable Parquet"):
        read_model_scores(tmp_path, "m3")


def test_documented_duckdb_query_runs_on_the_tree(tmp_path, monkeypatch) -> None:
    """The SQL of docs/storage.md, as printed there, against a two-model tree."""
    duckdb = pytest.importorskip("duckdb")
    doc = (project_root() / "docs" / "storage.md").read_text(encoding="utf-8")
    sql = re.search(r"```sql\n(.*?)```", doc, re.S).group(1)  # type: ignore[union-attr]
    a, b = _scores("m-a"), _scores("m-b", 0.1)
    write_model_scores(a, tmp_path / "data" / "stylisticbias" / "scores", "m-a")
    write_model_scores(b, tmp_path / "data" / "stylisticbias" / "scores", "m-b")
    monkeypatch.chdir(tmp_path)
    got = duckdb.sql(sql).df()
    assert got["model"].tolist() == ["m-a", "m-b"]
    for df, (_, row) in zip((a, b), got.iterrows()):
        d = df.loc[~df.is_base, "delta"]
        assert row["sbs"] == pytest.approx(d.mean(), abs=1e-12) and row["n"] == len(d)
    assert not np.isclose(got["sbs"].iloc[0], got["sbs"].iloc[1])
