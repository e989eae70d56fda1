"""The scores stage's read-ahead: the cells of the file and model it was started for, nothing for
another; the stage's output is the same with it as without."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stylisticbias.benchmark import Benchmark
from stylisticbias.scores import write_columnar_scores
from stylisticbias.scores_ahead import (
    JudgmentsAhead,
    judgments_path,
    stage_path,
)
from stylisticbias.scores_columnar.reader import reduce_judgments


def _judgments(path: Path, model: str = "m1") -> Path:
    rng = np.random.default_rng(0)
    rows = [
        {
            "image_id": f"F{i}--base",
            "face_id": f"F{i}",
            "model": model,
            "engine": "simulated",
            "decoding": "simulated",
            "scenario_id": s,
            "ordering": o,
            "seed": k,
            "response": "(a)",
            "choice": rng.choice(["positive", "negative", "invalid"]),
            "p_pos": 0.5,
            "p_neg": 0.4,
            "p_invalid": 0.1,
            "p_undecided": 0.0,
            "simulated": True,
        }
        for i in range(3)
        for s in (1, 2)
        for o in (1, 2, 3, 4)
        for k in (1, 2, 3)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def test_cells_of_the_file_and_model_it_read(tmp_path: Path) -> None:
    path = _judgments(judgments_path(tmp_path / "judgments", "m1"))
    with JudgmentsAhead(path, "m1") as ahead:
        read, cells = ahead.cells(path, "m1")
        assert read and cells is not None
        ref = reduce_judgments(path, "m1")
        assert ref is not None
        for field in ("image", "scenario", "n", "pos", "valid", "p_pos_sum", "p_valid_sum"):
            assert np.array_equal(getattr(cells, field), getattr(ref, field))
        assert ahead.cells(tmp_path / "other.parquet", "m1") == (False, None)
        assert ahead.cells(path, "m2") == (False, None)


def test_a_missing_file_is_declined_not_raised(tmp_path: Path) -> None:
    with JudgmentsAhead(tmp_path / "missing.parquet", "m1") as ahead:
        assert ahead.cells(tmp_path / "missing.parquet", "m1") == (True, None)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"paths": {"judgments": "data/judgments"}}, "data/judgments/m1/judgments.parquet"),
        ({"paths": {"judgments": "/abs/j"}}, "/abs/j/m1/judgments.parquet"),
        ({"paths": {}}, None),
        ({}, None),
    ],
)
def test_the_file_params_name(tmp_path: Path, params: dict, expected: str | None) -> None:
    ahead = JudgmentsAhead.from_params(params, "m1", tmp_path)
    if expected is None:
        assert ahead is None
        return
    with ahead:
        assert ahead.path == stage_path(expected, tmp_path)


def _dataset(benchmark: Benchmark, tmp_path: Path) -> tuple[Path, Path]:
    demo = {axis: str(values[0]) for axis, values in benchmark.demographics.items()}
    faces = tmp_path / "faces.parquet"
    pd.DataFrame(
        [{"image_id": f"F{i}--base", "face_id": f"F{i}", **demo} for i in range(3)]
    ).to_parquet(faces, index=False)
    variations = tmp_path / "variations.parquet"
    pd.DataFrame(
        [
            {
                "image_id": "F0--hair--blonde",
                "face_id": "F0",
                "category": "hair",
                "attribute": "hair_color",
                "value": "blonde",
                **demo,
            }
        ]
    ).to_parquet(variations, index=False)
    return faces, variations


def test_the_columnar_stage_writes_the_same_bytes_with_it(
    benchmark: Benchmark, tmp_path: Path
) -> None:
    faces, variations = _dataset(benchmark, tmp_path)
    path = _judgments(judgments_path(tmp_path / "judgments", "m1"))
    out = {}
    for label in ("with", "without"):
        with JudgmentsAhead(path, "m1") as ahead:
            written = write_columnar_scores(
                "m1",
                path,
                faces,
                variations,
                tmp_path / label,
                benchmark,
                undecided_warn=0.01,
                undecided_max=0.05,
                ahead=ahead if label == "with" else None,
            )
        assert written is not None
        out[label] = hashlib.sha256(written.read_bytes()).hexdigest()
    assert out["with"] == out["without"]


def test_a_table_failing_the_output_check_is_not_published(
    benchmark: Benchmark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check runs while the file is written: a failed one leaves the previous partition
    (and no temp directory) for the pandas engine to replace."""
    import stylisticbias.scores as scores

    faces, variations = _dataset(benchmark, tmp_path)
    path = _judgments(judgments_path(tmp_path / "judgments", "m1"))
    out = tmp_path / "scores"
    args = ("m1", path, faces, variations, out, benchmark)
    written = write_columnar_scores(*args, undecided_warn=0.01, undecided_max=0.05)
    assert written is not None
    before = written.read_bytes()
    monkeypatch.setattr(scores, "check_scores_table", lambda table: False)
    assert write_columnar_scores(*args, undecided_warn=0.01, undecided_max=0.05) is None
    assert written.read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["model=m1"]


def test_memory_settings_leave_the_process_working() -> None:
    """glibc's mallopt where there is one, and Linux's THP switch for the process (in a child:
    they tune the whole process): set, and arrays allocate and free as before."""
    code = (
        "import ctypes, sys; import numpy as np; "
        "from stylisticbias.scores_ahead import keep_freed_memory, no_huge_pages; "
        "keep_freed_memory(); no_huge_pages(); a = np.ones(1 << 22); del a; "
        "thp = ctypes.CDLL(None).prctl(42, 0, 0, 0, 0) if sys.platform == 'linux' else 1; "
        "print(thp, int(np.ones(1 << 22).sum()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", str(1 << 22)]
