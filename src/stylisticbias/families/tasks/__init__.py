"""The task family (``family: tasks``): task-typed questions -- pairs, k-way choices, numbers,
text-only ablations -- judged into task records and turned into the task tables (REFLECT,
VIGNETTE: ``conf/benchmark/reflect.yaml``, ``conf/benchmark/vignette.yaml``)."""

from stylisticbias.family import Family

FAMILY = Family(
    name="tasks",
    hooks={
        "judge": "stylisticbias.judge.run:judge_tasks",
        "scenario": "stylisticbias.benchmark.spec:Benchmark.task_scenario",
        "scores": "stylisticbias.scores:write_task_record_scores",
        "analyze": "stylisticbias.analysis.run:analyze_tasks",
        "calibrate": "stylisticbias.analysis.calibration:calibrate_tasks",
        "report": "stylisticbias.report.run:report_tasks",
        "track": "stylisticbias.report.track:log_task_runs",
    },
)
