"""The StylisticBias family (``family: variation_shift``): base faces x single-attribute edits,
25 forced-choice scenarios under four orderings, phi and its shift per scenario, the paper's
tables (``conf/benchmark/stylisticbias.yaml``)."""

from stylisticbias.family import Family

FAMILY = Family(
    name="variation_shift",
    hooks={
        "judge": "stylisticbias.judge.run:judge_forced_choice",
        "scenario": "stylisticbias.benchmark.spec:Benchmark.scenario",
        "scores": "stylisticbias.scores:write_forced_choice_scores",
        "analyze": "stylisticbias.analysis.run:analyze_variation_shift",
        "calibrate": "stylisticbias.analysis.calibration:calibrate_variation_shift",
        "report": "stylisticbias.report.run:report_variation_shift",
        "track": "stylisticbias.report.track:log_report_runs",
    },
)
