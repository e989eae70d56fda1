"""The task family (``family: tasks``): task-typed questions -- pairs, k-way choices, numbers,
text-only ablations -- judged into task records and turned into the task tables (REFLECT,
VIGNETTE: ``conf/benchmark/reflect.yaml``, ``conf/benchmark/vignette.yaml``). What differs
between them is their ``paradigm:``, a module each (:mod:`.reflect`, :mod:`.vignette`; the
interface: :mod:`.paradigm`)."""

from stylisticbias.family import Family

FAMILY = Family(
    name="tasks",
    hooks={
        "judge": "stylisticbias.families.tasks.judge.stage:judge_tasks",
        "requests": "stylisticbias.families.tasks.judge.judging:missing_task_requests",
        "scenario": "stylisticbias.benchmark.spec:Benchmark.task_scenario",
        "scores": "stylisticbias.families.tasks.scores:write_task_record_scores",
        "analyze": "stylisticbias.families.tasks.analysis.stage:analyze_tasks",
        "calibrate": "stylisticbias.families.tasks.analysis.stage:calibrate_tasks",
        "report": "stylisticbias.families.tasks.report.stage:report_tasks",
        "track": "stylisticbias.families.tasks.report.stage:log_task_runs",
        "audit": "stylisticbias.families.tasks.report.audit:task_findings",
    },
    paradigms={
        "reflect": "stylisticbias.families.tasks.reflect:PARADIGM",
        "vignette": "stylisticbias.families.tasks.vignette:PARADIGM",
    },
)
