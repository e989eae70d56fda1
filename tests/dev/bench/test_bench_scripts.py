"""The benchmark scripts run end to end at a tiny size and write their JSON contract.

These are not timings (the numbers are meaningless at this size); they keep the scripts that
produce ``reports/bench/*.json`` working, and check the keys the README and issues cite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stylisticbias_dev.bench import analysis, generation, grammar_check, judge, judge_gpu, scores


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
    assert got["command"].startswith("python -m stylisticbias_dev.bench.generation")
    _machine_ok(got["machine"])


@pytest.mark.slow  # benchmark-like: paper-shaped analysis at 3 sizes (make test-all)
def test_analysis_bench(tmp_path: Path) -> None:
    out = tmp_path / "analysis.json"
    argv = ["--faces", "6", "--models", "1,2", "--add-one", "--out", str(out)]
    assert analysis.main(argv) == 0
    got = json.loads(out.read_text())
    # every image x 25 scenarios x 4 orderings x 3 seeds, per model
    assert got["rows_per_model"] == got["images"] * 25 * 12
    assert [s["models"] for s in got["sizes"]] == [1, 2]
    assert got["scores_stage"]["models"] == 3 and got["scores_stage"]["peak_rss_gb"] > 0
    for s in got["sizes"]:
        assert s["tables_written"] > 0 and s["analysis_seconds"] > 0 and s["peak_rss_gb"] > 0
        assert s["models_analysed"] == s["models"] and s["models_from_cache"] == 0
        assert s["load_avg"]["1m_start"] >= 0
    add = got["add_one_model"]  # the third model joins the finished two-model analysis
    assert add["models"] == 3 and add["scores_seconds"] > 0
    assert add["models_analysed"] == 1 and add["models_from_cache"] == 2
    assert got["peak_rss_ratio_largest_vs_smallest"] > 0
    assert got["command"] == "python -m stylisticbias_dev.bench.analysis " + " ".join(argv)
    _machine_ok(got["machine"])


@pytest.mark.slow  # benchmark-like: the scores stage beside DuckDB (make test-all)
def test_scores_bench(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    out = tmp_path / "scores.json"
    argv = ["--faces", "4", "--repeats", "1", "--workdir", str(tmp_path / "w"), "--out", str(out)]
    assert scores.main(argv) == 0
    got = json.loads(out.read_text())
    assert got["judgments_rows"] == got["images"] * 25 * 12
    assert got["score_rows"] == got["images"] * 25
    assert got["identical_to_pandas_engine"] is True  # the stage's file, byte for byte
    assert got["stage_seconds_median"] > 0 and got["baseline_seconds_median"] > 0
    assert got["ratio_stage_vs_baseline"] > 0 and got["ratio_cpu_stage_vs_baseline"] > 0
    assert "load_avg_start" in got and "COPY" in got["baseline_query"]
    assert got["command"] == "python -m stylisticbias_dev.bench.scores " + " ".join(argv)
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


@pytest.mark.slow  # benchmark-like (make test-all); the profile variant below stays in make test
def test_judge_gpu_bench_runs_at_tiny_scale_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "judge_gpu.json"
    argv = [
        "--model",
        "qwen3-vl-8b",
        "--device",
        "cpu",
        "--scale",
        "tiny",
        "--dtype",
        "float32",
        "--images",
        "1",
        "--generate-scenarios",
        "1",
        "--size",
        "256",
        "--out",
        str(out),
    ]
    assert judge_gpu.main(argv) == 0
    got = json.loads(out.read_text())["models"]["qwen3-vl-8b"]
    assert got["image_tokens_per_image"] == [64]  # 256 px / 32 px per token, squared
    assert got["images_per_s_exact"] > 0 and got["gpu_hours_exact"] > 0
    assert got["speedup_exact_vs_generate"] > 1
    cmd = "python -m stylisticbias_dev.bench.judge_gpu --model qwen3-vl-8b"
    assert got["command"].startswith(cmd)
    _machine_ok(got["machine"])
    # a second model merges into the same file
    argv[1] = "llava-v1-6-mistral-7b"
    assert judge_gpu.main(argv) == 0
    assert set(json.loads(out.read_text())["models"]) == {"qwen3-vl-8b", "llava-v1-6-mistral-7b"}


def test_judge_gpu_bench_profile_writes_both_tables(tmp_path: Path) -> None:
    prof = tmp_path / "profile.txt"
    argv = [
        "--model",
        "qwen3-vl-8b",
        "--device",
        "cpu",
        "--scale",
        "tiny",
        "--dtype",
        "float32",
        "--images",
        "1",
        "--generate-scenarios",
        "1",
        "--size",
        "128",
        "--out",
        str(tmp_path / "j.json"),
        "--profile",
        str(prof),
    ]
    assert judge_gpu.main(argv) == 0
    text = prof.read_text()
    assert "# cProfile of one image" in text and "expand_all" in text
    assert "# torch.profiler of one image" in text and "aten::" in text


@pytest.mark.parametrize("name", ["qwen3-vl-8b", "llava-v1-6-mistral-7b"])
def test_grammar_check_follows_the_grammar_at_tiny_scale(tmp_path: Path, name: str) -> None:
    out = tmp_path / "g.json"
    argv = ["--model", name, "--scale", "tiny", "--scales", "1,0.5", "--out", str(out)]
    assert grammar_check.main(argv) == 0
    got = json.loads(out.read_text())["models"][name]["next_tokens_by_residual_scale"]
    for chain in got.values():
        assert max(chain["<start>"], key=chain["<start>"].get) == "("
        assert set(sorted(chain["("], key=chain["("].get)[-2:]) == {"a", "b"}
        assert max(chain["(a"], key=chain["(a"].get) == ")"
    assert grammar_check.main(["--model", name, "--scales", "0,-1", "--out", str(out)]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("name", ["qwen3-vl-8b", "llava-v1-6-mistral-7b"])
def test_grammar_survives_full_depth_only_when_damped(tmp_path: Path, name: str) -> None:
    """Full-size model on CPU (~18 GB RAM, minutes): the grammar is lost undamped, kept damped."""
    import psutil

    if psutil.virtual_memory().total < 23e9:
        pytest.skip("needs ~18 GB of free RAM for the full-size model")
    res = grammar_check.check(name, [1.0, 1e-3])["next_tokens_by_residual_scale"]
    assert res["1"]["<start>"].get("(", 0.0) < 0.5
    damped = res["0.001"]
    assert damped["<start>"].get("(", 0.0) > 0.9
    assert damped["("].get("a", 0.0) + damped["("].get("b", 0.0) > 0.9
    assert damped["(a"].get(")", 0.0) > 0.9


def test_judge_gpu_bench_without_cuda_is_one_clear_error(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        return
    out = tmp_path / "judge_gpu.json"
    assert judge_gpu.main(["--model", "qwen3-vl-8b", "--out", str(out)]) == 2
    assert not out.exists()


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["qwen3-vl-8b", "llava-v1-6-mistral-7b"])
def test_judge_gpu_bench_full_size(tmp_path: Path, name: str) -> None:
    out = tmp_path / "judge_gpu.json"
    argv = ["--model", name, "--images", "1", "--generate-scenarios", "1", "--out", str(out)]
    assert judge_gpu.main(argv) == 0
    got = json.loads(out.read_text())["models"][name]
    assert got["peak_gpu_memory_gb"] > got["weights_gb"] > 14
    assert got["exact_undecided_mass_mean"] < 0.1  # the planted grammar holds (damp_residual)


@pytest.mark.slow
def test_openai_engine_bench(tmp_path: Path) -> None:
    from stylisticbias_dev.bench import openai_engine

    out = tmp_path / "openai_engine.json"
    args = ["--images", "1", "--scenarios", "1", "--repeats", "1", "--size", "64"]
    assert openai_engine.main([*args, "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    arms = got["arms"]
    assert arms["serve_generate_rerun"]["requests_sent"] == [0]
    assert arms["loopback_exact_rerun"]["requests_sent"] == [0]
    assert arms["serve_generate"]["requests_sent"] == [12]  # 1 image x 4 orderings x 3 seeds
    assert got["exact_agreement_loopback_vs_hf"]["max_abs_diff_p_pos_p_neg"] < 1e-5
    # the caveat that tiny-model rates are no served-model figures
    assert "say nothing about the latency" in got["note"]
    assert got["command"].startswith("python -m")
    _machine_ok(got["machine"])
