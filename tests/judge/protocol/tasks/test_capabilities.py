"""What a judged model can be asked: a task an engine cannot do fails in one line naming the
task, the engine and the valid choices -- at compose time and when the judge stage starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias.config import compose
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.tasks.capabilities import model_max_images, unsupported
from stylisticbias.judge.protocol.tasks.registry import check_engine_tasks, task_of
from stylisticbias.validate import validate_params

ROOT = Path(__file__).resolve().parents[4]
TASKS = ROOT / "tests" / "data" / "protocols" / "tasks.yaml"


def _model(engine: str, decoding: str, max_images: int | None = None) -> dict:
    m = {"name": "m", "engine": {"name": engine, "decoding": decoding}}
    return m if max_images is None else {**m, "max_images": max_images}


@pytest.mark.parametrize("engine", ["hf", "openai"])
def test_what_each_task_needs(engine: str) -> None:
    bench = load_benchmark(TASKS)
    by_id = {t.id: t for t in bench.tasks}

    def why(tid: int, model: dict) -> str | None:
        sc = by_id[tid]
        return unsupported(task_of(sc), sc, bench, engine, model)

    # two image inputs need max_images >= 2; a composite is one image; text only none
    assert "shows 2 images" in str(why(102, _model(engine, "exact")))
    assert why(102, _model(engine, "exact", 2)) is None
    assert why(103, _model(engine, "exact")) is None
    assert why(105, _model(engine, "exact")) is None
    assert why(101, _model(engine, "exact")) is None
    # a free number has no exact distribution: generate or sampled
    msg = str(why(104, _model(engine, "exact")))
    assert "cannot judge task type 'numeric'" in msg and "valid decodings: generate, sampled" in msg
    assert why(104, _model(engine, "generate")) is None
    assert why(104, _model(engine, "sampled")) is None
    # the simulated judge has no limits
    sc = by_id[102]
    assert unsupported(task_of(sc), sc, bench, "simulated", {}) is None
    assert model_max_images({}) == 1 and model_max_images({"max_images": 3}) == 3


def test_judged_tasks_only() -> None:
    reflect = load_benchmark("reflect")
    model = _model("hf", "exact")
    with pytest.raises(StylisticBiasError, match="task 1 "):
        check_engine_tasks(reflect, "hf", "models.m", model)
    check_engine_tasks(reflect, "hf", "models.m", model, [11, 12])  # MCQ only: fine
    with pytest.raises(StylisticBiasError, match=r"task 21 .*numeric"):
        check_engine_tasks(reflect, "hf", "models.m", model, [11, 21])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            [
                "model=[tiny-llava-next]",
                "models.tiny-llava-next.engine.decoding=sampled",
                "models.tiny-llava-next.max_images=1",
            ],
            "models.tiny-llava-next (conf/model/tiny-llava-next.yaml): task 1 (Income) of protocol "
            "reflect: task type 'pairwise' (layout two_images) shows 2 images in one prompt; this "
            "engine 'hf' model takes at most 1 (max_images: 1); valid: layout: composite, or "
            "max_images: 2 or more in the model file",
        ),
        (
            ["model=[tiny-llava-next-vllm]", "models.tiny-llava-next-vllm.engine.decoding=exact"],
            "task 21 (Salary recommendation) of protocol reflect: engine 'openai' with decoding "
            "'exact' cannot judge task type 'numeric' (a free number has no exact distribution); "
            "valid decodings: generate, sampled",
        ),
    ],
)
def test_compose_fails_in_one_line(overrides: list[str], message: str) -> None:
    params = compose(["experiment=reflect-demo", *overrides])
    with pytest.raises(StylisticBiasError) as err:
        validate_params(params)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_compose_command_exit_2(tmp_path: Path) -> None:
    """`configure compose` refuses the protocol in one error line, exit 2, params.yaml as was."""
    before = (ROOT / "params.yaml").read_bytes()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "stylisticbias.configure",
            "compose",
            "experiment=reflect-demo",
            "model=[tiny-llava-next]",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "engine 'hf' with decoding 'exact'" in lines[0], proc.stderr
    assert (ROOT / "params.yaml").read_bytes() == before


def test_compose_accepts_what_the_engine_can_do() -> None:
    validate_params(
        compose(
            [
                "experiment=reflect-demo",
                "model=[tiny-llava-next]",
                "models.tiny-llava-next.engine.decoding=sampled",
            ]
        )
    )
    validate_params(compose(["experiment=vignette-demo", "model=[tiny-llava-next]"]))
    # judge.scenarios selects tasks of a task protocol (an unknown id names the valid ones)
    validate_params(
        compose(["experiment=reflect-demo", "model=[tiny-llava-next]", "judge.scenarios=[11,12]"])
    )
    with pytest.raises(StylisticBiasError, match="unknown task id 99"):
        validate_params(compose(["experiment=reflect-demo", "judge.scenarios=[99]"]))
