"""The paired-variation family (``family: paired_variation``): each person judged in a base and
one edited image, the edit's effect per scenario (Beauty and the Bias,
``conf/benchmark/beauty-and-the-bias.yaml``). Judged and scored as the forced-choice protocols
are; its own statistics, calibration and report."""

from stylisticbias.family import Family

FAMILY = Family(
    name="paired_variation",
    hooks={
        "judge": "stylisticbias.judge.run:judge_forced_choice",
        "requests": "stylisticbias.judge.batch:forced_choice_requests",
        "scenario": "stylisticbias.benchmark.spec:Benchmark.scenario",
        "scores": "stylisticbias.scores:write_forced_choice_scores",
        "analyze": "stylisticbias.families.paired_variation.analysis.stage:analyze_paired",
        "calibrate": "stylisticbias.families.paired_variation.analysis.stage:calibrate_paired",
        "report": "stylisticbias.families.paired_variation.report.stage:report_paired",
        "track": "stylisticbias.families.paired_variation.report.track:log_paired_runs",
        "audit": "stylisticbias.families.paired_variation.report.audit:paired_findings",
    },
)
