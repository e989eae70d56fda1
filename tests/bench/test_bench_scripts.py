"""The benchmark scripts run end to end at a tiny size and write their JSON contract.

These are not timings (the numbers are meaningless at this size); they keep the scripts that
produce ``reports/bench/*.json`` working, and check the keys the README and issues cite.
"""

from __future__ import annotations

import json
from pathlib import Path

from stylisticbias.bench import analysis, generation, judge


def _machine_ok(machine: dict) -> None:
    assert machine["cores"] >= 1
    assert machine["cpu"]
    assert "gpu" in machine


def test_generation_bench(tmp_path: Path) -> None:
    out = tmp_path / "generation.json"
    assert generation.main(["--faces", "2", "--workers", "1", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    # 2 faces: one male (48 variations) and one female (51), each plus its base image
    assert got["faces"] == 2
    assert got["images"] == 2 + 48 + 51
    assert got["images_per_s"] > 0 and got["peak_rss_gb"] > 0
    assert got["command"].startswith("python -m stylisticbias.bench.generation")
    _machine_ok(got["machine"])


def test_analysis_bench(tmp_path: Path) -> None:
    out = tmp_path / "analysis.json"
    assert analysis.main(["--faces", "6", "--models", "2", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    # every image x 25 scenarios x 4 orderings x 3 seeds, per model
    assert got["rows"] == got["images"] * 25 * 12 * 2
    assert got["tables_written"] > 0
    assert got["seconds"] > 0 and got["peak_rss_gb"] > 0
    assert got[
        "command"
    ] == "python -m stylisticbias.bench.analysis --faces 6 --models 2 --out " + str(out)
    _machine_ok(got["machine"])


def test_judge_bench(tmp_path: Path) -> None:
    out = tmp_path / "judge.json"
    argv = ["--images", "1", "--repeats", "1", "--generate-scenarios", "1", "--out", str(out)]
    assert judge.main(argv) == 0
    got = json.loads(out.read_text())
    assert got["speedup_exact_vs_generate"] > 1
    assert got["judgments_per_s_exact"] > got["judgments_per_s_generate"] > 0
    assert 0 <= got["exact_undecided_mass_mean"] < 0.01
    assert got["peak_rss_gb"] > 0
    _machine_ok(got["machine"])
