"""Judgments in and out in the released code's raw layout: lossless round trip, files written
by the released code re-read by our parser, bad files, resume."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.official_layout import cli, importer, layout
from stylisticbias.judge.official_layout.export import export_judgments
from stylisticbias.judge.official_layout.importer import ImportSpec, import_official

RESPONSES = ["(a)", "(b)", "B", "I cannot tell.", None, "<think>hmm</think>\n(a)", "（Ｂ）"]


def _judgments(benchmark: Benchmark, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for model in ("m-one", "m-two"):
        for f in range(3):
            face = f"F{f:04d}"
            for img in (f"{face}-base", f"{face}-hair-color--blonde"):
                for sid in (1, 7, 25):
                    for o in (1, 2, 3, 4):
                        for k in (1, 2):
                            resp = RESPONSES[rng.integers(len(RESPONSES))]
                            choice = rng.choice(["positive", "negative", "invalid"])
                            p = rng.dirichlet([1, 1, 1])
                            rows.append((img, face, model, "simulated", "simulated", sid, o, k,
                                         resp, choice, *p, 0.0, True))  # fmt: skip
    return pd.DataFrame(rows, columns=list(layout.COLUMNS))


def _canon(df: pd.DataFrame) -> pd.DataFrame:
    keys = ["model", "image_id", "scenario_id", "ordering", "seed"]
    return df.sort_values(keys, kind="mergesort").reset_index(drop=True)


def test_export_import_round_trip_is_lossless(tmp_path: Path, benchmark: Benchmark) -> None:
    j = _judgments(benchmark)
    exact = j.iloc[:3].assign(seed=0)  # exact rows have no file
    n = export_judgments(pd.concat([j, exact]), benchmark, tmp_path / "raw", timestamp="t")
    assert n == len(j)
    f = tmp_path / "raw/m-one/F0000/F0000-base/F0000-base_scenario7_order3_seed2.json"
    doc = json.loads(f.read_text(encoding="utf-8"))
    assert set(doc) >= {"face_image_name", "characteristics", "order", "seed", "prompt",
                        "timestamp", "options", "chosen_option", "raw_output"}  # fmt: skip
    sc = benchmark.scenario(7)
    assert doc["options"] == dict(zip("ab", benchmark.options_shown(sc, benchmark.ordering(3))))
    stats = import_official(
        ImportSpec(tmp_path / "raw", tmp_path / "out", batch_files=7), benchmark
    )
    assert stats.files == n and stats.bad == 0
    back = pd.read_parquet(stats.output)
    a, b = _canon(back), _canon(j)
    pd.testing.assert_frame_equal(a, b.astype(a.dtypes.to_dict()), check_exact=True)
    pq.write_table(pa.Table.from_pandas(a, preserve_index=False), tmp_path / "a.parquet")
    b2 = b.astype(a.dtypes.to_dict())
    pq.write_table(pa.Table.from_pandas(b2, preserve_index=False), tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def _official_file(root: Path, benchmark: Benchmark, image: str, sid: int, o: int, k: int,
                   raw: str, face: str = "F0000") -> Path:  # fmt: skip
    """A file as the released code's ``write_result`` writes it (no stylisticbias field)."""
    sc, od = benchmark.scenario(sid), benchmark.ordering(o)
    a, b = benchmark.options_shown(sc, od)[:2]
    d = root / "model-x" / face / image
    d.mkdir(parents=True, exist_ok=True)
    p = d / layout.file_name(image, sid, o, k)
    doc = {"face_image_name": f"{image}.png", "characteristics": {}, "order": o, "seed": k,
           "prompt": "...", "timestamp": "2026-01-01T00:00:00+00:00",
           "options": {"a": a, "b": b}, "chosen_option": a, "raw_output": raw}  # fmt: skip
    p.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return p


def test_released_code_files_are_reparsed_by_our_parser(tmp_path: Path, benchmark) -> None:
    root = tmp_path / "raw"
    # order 1: (a) = positive; order 3: (a) = negative (App. C.2 and the released code agree)
    _official_file(root, benchmark, "F0000-base", 1, 1, 1, "(a)")
    _official_file(root, benchmark, "F0000-base", 1, 3, 1, "(a)")
    _official_file(root, benchmark, "F0000-base", 1, 2, 1, "<think>maybe (a)</think> (b)")
    _official_file(root, benchmark, "F0000-base", 1, 4, 1, "I cannot judge that.")  # official: (a)
    st = import_official(ImportSpec(root, tmp_path / "out"), benchmark)
    got = pd.read_parquet(st.output).set_index("ordering")
    assert got.loc[1, "choice"] == "positive" and got.loc[3, "choice"] == "negative"
    assert got.loc[2, "choice"] == "negative" and got.loc[4, "choice"] == "invalid"
    assert (got["engine"] == "official").all() and (got["model"] == "model-x").all()
    assert got.loc[4, "p_invalid"] == 1.0 and got.loc[1, "p_pos"] == 1.0


def test_bad_files_one_line_each_skip_or_stop(tmp_path: Path, benchmark, caplog) -> None:
    root = tmp_path / "raw"
    _official_file(root, benchmark, "F0000-base", 1, 1, 1, "(a)")
    trunc = _official_file(root, benchmark, "F0000-base", 2, 1, 1, "(a)")
    trunc.write_text(trunc.read_text()[:40], encoding="utf-8")  # truncated JSON
    other = _official_file(root, benchmark, "F0000-base", 4, 1, 1, "(a)")
    other.rename(other.with_name("F0000-base_scenario99_order1_seed1.json"))  # unknown scenario
    _official_file(root, benchmark, "F0000-ghost", 1, 1, 1, "(b)")  # an image we do not know
    swapped = _official_file(root, benchmark, "F0000-base", 3, 1, 1, "(a)")
    doc = json.loads(swapped.read_text())
    doc["options"] = {"a": doc["options"]["b"], "b": doc["options"]["a"]}
    swapped.write_text(json.dumps(doc))
    (root / "model-x/F0000/F0000-base/notes.json").write_text("{}")
    known = frozenset({"F0000-base"})
    with caplog.at_level(logging.WARNING, logger="stylisticbias.judge.official_layout"):
        st = import_official(ImportSpec(root, tmp_path / "o1", known_images=known), benchmark)
    assert st.bad == 5 and st.rows == 1
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(lines) == 5 and all("\n" not in x and "official import: " in x for x in lines)
    text = " | ".join(lines)
    for why in ("bad JSON", "unknown scenario 99", "not in the dataset", "do not match",
                "not a file of the layout"):  # fmt: skip
        assert why in text, why
    with pytest.raises(StylisticBiasError, match=r"F0000-base_scenario2_order1_seed1.json: bad"):
        import_official(ImportSpec(root, tmp_path / "o2", on_error="stop", known_images=known),
                        benchmark)  # fmt: skip


def test_interrupted_import_resumes(tmp_path: Path, benchmark, monkeypatch) -> None:
    j = _judgments(benchmark)
    export_judgments(j, benchmark, tmp_path / "raw", timestamp="t")
    spec = ImportSpec(tmp_path / "raw", tmp_path / "out", batch_files=20)
    real = importer._Reader.row
    calls = {"n": 0}

    def boom(self, *a):
        calls["n"] += 1
        if calls["n"] == 200:
            raise KeyboardInterrupt
        return real(self, *a)

    monkeypatch.setattr(importer._Reader, "row", boom)
    with pytest.raises(KeyboardInterrupt):
        import_official(spec, benchmark)
    monkeypatch.setattr(importer._Reader, "row", real)
    st = import_official(spec, benchmark)
    assert st.skipped_faces > 0 and st.files < len(j)
    back = _canon(pd.read_parquet(st.output))
    pd.testing.assert_frame_equal(back, _canon(j).astype(back.dtypes.to_dict()))


def test_cli_import_stop_exits_2_with_one_line(tmp_path: Path, benchmark, capsys) -> None:
    root = tmp_path / "raw"
    p = _official_file(root, benchmark, "F0000-base", 1, 1, 1, "(a)")
    p.write_text("{", encoding="utf-8")
    rc = cli.main(["import", str(root), "--out", str(tmp_path / "o"), "--on-error", "stop"])
    assert rc == 2
