"""The benchmark scripts run end to end at a tiny size and write their JSON contract.

These are not timings (the numbers are meaningless at this size); they keep the scripts that
produce ``reports/bench/*.json`` working, and check the keys the README and issues cite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stylisticbias.bench import analysis, generation, judge, judge_gpu


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


def test_judge_gpu_bench_runs_at_tiny_scale_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "judge_gpu.json"
    argv = ["--model", "qwen3-vl-8b", "--device", "cpu", "--scale", "tiny", "--dtype", "float32",
            "--images", "1", "--generate-scenarios", "1", "--size", "256",
            "--out", str(out)]  # fmt: skip
    assert judge_gpu.main(argv) == 0
    got = json.loads(out.read_text())["models"]["qwen3-vl-8b"]
    assert got["image_tokens_per_image"] == [64]  # 256 px / 32 px per token, squared
    assert got["images_per_s_exact"] > 0 and got["gpu_hours_exact"] > 0
    assert got["speedup_exact_vs_generate"] > 1
    assert got["command"].startswith("python -m stylisticbias.bench.judge_gpu --model qwen3-vl-8b")
    _machine_ok(got["machine"])
    # a second model merges into the same file
    argv[1] = "llava-v1.6-mistral-7b"
    assert judge_gpu.main(argv) == 0
    assert set(json.loads(out.read_text())["models"]) == {"qwen3-vl-8b", "llava-v1.6-mistral-7b"}


def test_judge_gpu_bench_without_cuda_is_one_clear_error(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        return
    out = tmp_path / "judge_gpu.json"
    assert judge_gpu.main(["--model", "qwen3-vl-8b", "--out", str(out)]) == 2
    assert not out.exists()


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["qwen3-vl-8b", "llava-v1.6-mistral-7b"])
def test_judge_gpu_bench_full_size(tmp_path: Path, name: str) -> None:
    out = tmp_path / "judge_gpu.json"
    argv = ["--model", name, "--images", "1", "--generate-scenarios", "1", "--out", str(out)]
    assert judge_gpu.main(argv) == 0
    got = json.loads(out.read_text())["models"][name]
    assert got["peak_gpu_memory_gb"] > got["weights_gb"] > 14
