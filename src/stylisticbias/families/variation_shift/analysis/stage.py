"""The analyze and calibrate stages of a StylisticBias protocol (the family's ``analyze`` and
``calibrate`` hooks): the paper's tables streamed one model at a time over the shared analysis
machinery (:mod:`stylisticbias.analysis`), and the planted effects of the simulated judges
recovered (:mod:`stylisticbias.analysis.calibration`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from stylisticbias.analysis.calibration import calibrate, is_simulated, pipeline_dataset
from stylisticbias.analysis.digest_memo import DigestMemo
from stylisticbias.analysis.run import (
    display_names,
    load_judgments,
    read_scores_checked,
    write_tables,
)
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.streaming import (
    StreamStats,
    analyze_streaming,
    model_inputs,
    settings_digest,
)
from stylisticbias.benchmark import Benchmark
from stylisticbias.score_store import read_model_scores, scores_digest, scores_file
from stylisticbias.spec import Config

log = logging.getLogger(__name__)


def analyze_shift(
    config: Config,
    benchmark: Benchmark,
    s: AnalysisSettings,
    models: Sequence[str],
    t0: float = 0.0,
) -> StreamStats:
    """The StylisticBias tables, streamed one model at a time (see :func:`run_analysis`)."""
    analysis = asdict(config.analysis)
    score_dir = Path(config.paths.scores)
    judg_dir = Path(config.paths.judgments)
    reports = Path(config.paths.reports)
    cache = Path(config.paths.analysis_cache) if config.paths.analysis_cache else None
    memo = DigestMemo(cache)  # unchanged inputs are not re-hashed
    digests = {}
    for m in models:
        jpath = judg_dir / m / "judgments.parquet"
        spath = scores_file(score_dir, m)
        if not spath.exists():
            scores_digest(score_dir, m)  # the one-line error naming the missing partition
        digests[m] = (memo.digest(spath), memo.digest(jpath) if jpath.exists() else None)
    inputs = model_inputs(
        models,
        lambda m: read_scores_checked(score_dir, m),
        lambda m: load_judgments(judg_dir / m / "judgments.parquet"),
        lambda m: read_model_scores(score_dir, m, ["face_id"])["face_id"].unique(),
        digests,
    )
    numbers = {k: v for k, v in analysis.items() if k != "workers"}
    key = settings_digest(numbers, benchmark.digest)  # the protocol file's content
    tables, simulated, stats = analyze_streaming(inputs, benchmark, s, cache, key, models)
    memo.save()
    write_tables(tables, simulated, models, benchmark, s, reports, display_names(models, config))
    log.info("analysis of %d model(s) in %.1fs", len(models), time.perf_counter() - t0)
    return stats


def calibrate_shift(config: Config, synthetic: int | None = None) -> dict[str, Any]:
    """The StylisticBias tables against the simulated judges' truth: on a synthetic
    ``synthetic``-face manifest, or on the pipeline's dataset and scores."""
    if synthetic:
        return calibrate(config, n_faces=synthetic)
    from stylisticbias.score_store import read_model_scores

    names = [m for m in config.model_names if is_simulated(m, config)]
    score_dir = Path(config.paths.scores)
    sc = {m: read_model_scores(score_dir, m) for m in names}
    res = calibrate(config, dataset=pipeline_dataset(config), scores=sc)
    res.setdefault("settings", {})["dataset"] = "pipeline: data/faces, variations, scores"
    return res
