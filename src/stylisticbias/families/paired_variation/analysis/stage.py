"""The analyze and calibrate stages of a paired-variation protocol (the family's ``analyze``
and ``calibrate`` hooks): its own statistics (:mod:`.run`) and its planted halo recovered
against the exact truth of the pipeline's images (:mod:`.calibration`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from stylisticbias.analysis.calibration import is_simulated, model_cfg, pipeline_dataset
from stylisticbias.analysis.run import display_names, read_scores_checked
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.streaming import StreamStats
from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.families.paired_variation.analysis import calibration as pc
from stylisticbias.families.paired_variation.analysis.counts import Bootstrap
from stylisticbias.families.paired_variation.analysis.run import run_paired_analysis
from stylisticbias.judge.engines.simulated.ground_truth import planted_truth
from stylisticbias.judge.engines.simulated.planted import planted_source
from stylisticbias.score_store import read_model_scores
from stylisticbias.spec import Config


def analyze_paired(
    config: Config,
    benchmark: Benchmark,
    s: AnalysisSettings,
    models: Sequence[str],
    t0: float = 0.0,
) -> StreamStats:
    """A paired-variation protocol's own statistics (:mod:`.run`)."""
    read = functools.partial(read_scores_checked, Path(config.paths.scores))
    reports = Path(config.paths.reports)
    names = display_names(models, config)
    run_paired_analysis(s, reports, config.paths.analysis_cache, benchmark, models, read, names)
    return StreamStats(computed=tuple(models), cached=())


def calibrate_paired(config: Config, synthetic: int | None = None) -> dict[str, Any]:
    """The ``calibrate`` stage for a paired-variation protocol: its planted halo recovered,
    the pipeline's own faces and simulated scores against the exact truth of those images
    (:mod:`.calibration`; ``synthetic`` does not apply)."""
    s = AnalysisSettings.from_config(asdict(config.analysis))
    benchmark = load_benchmark(config.protocol)
    names = [m for m in config.model_names if is_simulated(m, config)]
    if not names:
        return {"note": "no simulated judge among the models", "simulated": False}
    faces, var = pipeline_dataset(config)
    orderings = benchmark.selected_orderings(config.judge.orderings)
    boot = Bootstrap(s.n_resamples, s.ci, s.seed)
    cells = {}
    for m in names:
        cfg = model_cfg(config, m)
        planted = planted_source(cfg, cfg.get("engine"))
        truth = planted_truth(benchmark, faces, var, cfg, planted=planted, orderings=orderings)
        scores = read_model_scores(Path(config.paths.scores), m)
        effects = pc.true_effects(truth, benchmark)
        cells[m] = pc.calibrate_scores(scores, effects, benchmark, boot, s.official)
    settings = {
        "dataset": "pipeline: data/faces, variations, scores (sample truth of these images)",
        "faces": int(faces["face_id"].nunique()),
        "models": names,
        "ci": s.ci,
        "n_resamples": s.n_resamples,
        "alpha": benchmark.statistics.alpha,
        "seeds": list(config.judge.seeds),
    }
    return pc.calibration_report(cells, settings)
