"""The judge stage of a task protocol (the family's ``judge`` hook): task records, not
judgments (:func:`~stylisticbias.families.tasks.judge.judging.judge_task_protocol`)."""

from __future__ import annotations

from pathlib import Path

from stylisticbias.benchmark import Benchmark
from stylisticbias.families.tasks.judge.judging import judge_task_protocol
from stylisticbias.judge.items import stage_path
from stylisticbias.judge.run import model_section
from stylisticbias.spec import Config


def judge_tasks(
    model_name: str,
    config: Config,
    benchmark: Benchmark,
    *,
    out_dir: str | Path | None = None,
    progress: bool = True,
) -> Path:
    """The judge stage of a task protocol (REFLECT, VIGNETTE, ...): task records, not
    judgments (:func:`~stylisticbias.families.tasks.judge.judging.judge_task_protocol`)."""
    model_cfg = model_section(config, model_name)
    out = Path(out_dir) if out_dir else stage_path(config.paths, "judgments") / model_name
    return judge_task_protocol(model_name, model_cfg, benchmark, config, out)
