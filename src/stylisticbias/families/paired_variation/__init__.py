"""The paired-variation family (``family: paired_variation``): each person judged in a base and
one edited image, the edit's effect per scenario (Beauty and the Bias,
``conf/benchmark/beauty-and-the-bias.yaml``). Judged and scored as the forced-choice protocols
are; its own statistics, calibration and report."""

from stylisticbias.family import Family

FAMILY = Family(
    name="paired_variation",
    hooks={
        "judge": "stylisticbias.judge.run:judge_forced_choice",
        "scenario": "stylisticbias.benchmark.spec:Benchmark.scenario",
        "scores": "stylisticbias.scores:write_forced_choice_scores",
        "analyze": "stylisticbias.analysis.run:analyze_paired",
        "calibrate": "stylisticbias.analysis.calibration:calibrate_paired_variation",
        "report": "stylisticbias.report.run:report_paired",
    },
    lacks={
        "track": "tracking: the report of a paired-variation protocol is not logged to MLflow "
        "yet (reports/README.md, reports/tables and metrics.json hold it)",
    },
)
