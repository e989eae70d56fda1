"""The StylisticBias family (``family: variation_shift``): base faces x single-attribute edits,
25 forced-choice scenarios under four orderings, phi and its shift per scenario, the paper's
tables (``conf/benchmark/stylisticbias.yaml``)."""

from stylisticbias.family import Family

FAMILY = Family(
    name="variation_shift",
    hooks={
        "judge": "stylisticbias.judge.run:judge_forced_choice",
        "requests": "stylisticbias.judge.batch:forced_choice_requests",
        "scenario": "stylisticbias.benchmark.spec:Benchmark.scenario",
        "scores": "stylisticbias.scores:write_forced_choice_scores",
        "analyze": "stylisticbias.families.variation_shift.analysis.stage:analyze_shift",
        "calibrate": "stylisticbias.families.variation_shift.analysis.stage:calibrate_shift",
        "report": "stylisticbias.families.variation_shift.report.stage:report_shift",
        "track": "stylisticbias.families.variation_shift.report.track:log_report_runs",
        "audit": "stylisticbias.families.variation_shift.report.audit:shift_findings",
    },
)
