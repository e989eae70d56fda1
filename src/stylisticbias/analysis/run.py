"""The ``analyze`` stage: all score tables -> ``reports/tables/*.csv`` + ``reports/metrics.json``.

Reads ``<paths.scores>/model=<model>/`` (Hive partitions, :mod:`stylisticbias.score_store`) for
every judged model (``models``) (validated against ``SCORES``) and, for the response diagnostics,
``<paths.judgments>/<model>/judgments.parquet`` (columns checked; a missing file skips that
model's diagnostics with a warning) -- one model at a time (:mod:`.streaming`). Writes one CSV
per paper table in the reference long format, a paper-layout ``tableNN_*.csv`` for each, the
beyond-the-paper tables and the DVC metrics file. docs/statistics.md documents every column.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

from stylisticbias.analysis import table_registry as registry
from stylisticbias.analysis.beyond_tables import ALL, SBS_VOCABULARY, beyond
from stylisticbias.analysis.diagnostics import (
    EXACT_COLUMNS,
    JUDGMENT_COLUMNS,
    bias_tables,
    response_sums,
)
from stylisticbias.analysis.estimators import estimator_comparison
from stylisticbias.analysis.headline import METRICS_ALL, dvc_headline
from stylisticbias.analysis.layout import metrics_json, wide_tables
from stylisticbias.analysis.metrics import cell_sums, sbs
from stylisticbias.analysis.model_tables import table2, table7, table11
from stylisticbias.analysis.official_analyses import ATTRIBUTE_SCENARIO, official_analyses
from stylisticbias.analysis.official_analyses.preference import base_preference, shift_tails
from stylisticbias.analysis.paper_tables import (
    DIMENSIONS,
    shift_cells,
    table3,
    table4,
    table5,
    table6,
    table12,
)
from stylisticbias.analysis.per_model import (
    CATEGORICAL,
    OPTIONAL_SCORE_COLUMNS,
    SCORE_COLUMNS,
)
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.streaming import (
    StreamStats,
)
from stylisticbias.analysis.undecided import undecided_table
from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import family_of
from stylisticbias.outputs import atomic_path, atomic_write_json, round_floats
from stylisticbias.score_store import read_model_scores, scores_file
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

MODEL_COLUMNS = ("model", "model_x", "model_y", "model_a", "model_b")


def check_model_scores(df: pd.DataFrame, path: Path, model: str) -> None:
    """One model's score rows are usable: not empty, base faces present with a valid phi."""
    if df.empty:
        raise StylisticBiasError(f"{path}: no score rows for model {model!r}")
    if not df["is_base"].any():
        raise StylisticBiasError(
            f"{path}: model {model!r} has no base-face scores (is_base=True rows); VS and every "
            "delta need the base faces -- re-run its judge and scores stages"
        )
    if df.loc[df["is_base"], "phi"].isna().all():
        raise StylisticBiasError(
            f"{path}: model {model!r} has no valid base-face phi (all "
            f"{int(df['is_base'].sum())} base-face rows are NaN: every response invalid); VS "
            "and every delta need them -- check its judge run's invalid rate"
        )


def read_scores_checked(score_dir: Path, model: str) -> pd.DataFrame:
    """One model's validated score rows (the analysis columns), or a one-line error."""
    df = read_model_scores(score_dir, model)
    df = df[SCORE_COLUMNS + [c for c in OPTIONAL_SCORE_COLUMNS if c in df.columns]]
    check_model_scores(df, scores_file(score_dir, model), model)
    return df


def load_scores(score_dir: Path, models: Sequence[str]) -> pd.DataFrame:
    """Every model's scores in one frame (compact categoricals) -- the in-memory path.

    Memory grows with the number of models; the stage uses the streaming analysis
    (:mod:`stylisticbias.analysis.streaming`). Raises :class:`StylisticBiasError` naming the
    file: missing partition, schema mismatch, rows of another model, no (valid) base faces.
    """
    scores = pd.concat([read_scores_checked(score_dir, m) for m in models], ignore_index=True)
    for c in CATEGORICAL:
        scores[c] = scores[c].astype("category")
    return scores


def load_judgments(path: Path) -> pd.DataFrame | None:
    """The columns of a judgments table the diagnostics need (None, with a warning, if absent);
    the fractional-response columns only where the model has no drawn responses."""
    if not path.exists():
        log.warning("%s: not found; position/letter bias and invalid rates skipped for it", path)
        return None
    try:
        names = set(pq.read_schema(path).names)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise StylisticBiasError(
            f"{path}: not a readable Parquet file ({type(exc).__name__})"
        ) from None
    missing = [c for c in JUDGMENT_COLUMNS if c not in names]
    if missing:
        raise StylisticBiasError(
            f"{path}: does not match the judgments schema: missing column(s) " + ", ".join(missing)
        )
    strings = [c for c in ("face_id", "choice") if c in JUDGMENT_COLUMNS]
    # read as dictionaries: pandas categoricals without materialising millions of strings
    cols = [c for c in JUDGMENT_COLUMNS if c not in EXACT_COLUMNS]
    table = pq.read_table(path, columns=cols, read_dictionary=strings)
    drawn = pc.and_(pc.greater_equal(table["seed"], 1), pc.is_valid(table["choice"]))
    if not pc.any(drawn).as_py():  # exact-expectation rows only: their probabilities too
        table = pq.read_table(path, columns=JUDGMENT_COLUMNS, read_dictionary=strings)
    # self_destruct: Arrow buffers are released column by column as pandas takes them over
    return table.to_pandas(strings_to_categorical=True, self_destruct=True, split_blocks=True)


def display_names(models: list[str], config: Config | None = None) -> dict[str, str]:
    """Model -> its ``paper_name`` (``models.<model>`` of params.yaml) if set, else its name."""
    specs = config.models if config is not None else {}
    return {m: str(getattr(specs.get(m), "paper_name", None) or m) for m in models}


def analyze(
    scores: pd.DataFrame,
    benchmark: Benchmark,
    s: AnalysisSettings,
    judgments: Mapping[str, pd.DataFrame | None] | None = None,
) -> dict[str, pd.DataFrame]:
    """Every table (long, by file stem) from loaded scores (and judgments); model names as given.

    All models in memory at once: the reference the streaming analysis (which the stage runs)
    is tested against, and a convenient API for small studies.
    """
    t0 = time.perf_counter()
    delta = scores[~scores["is_base"].to_numpy(dtype=bool) & scores["delta"].notna().to_numpy()]
    if delta.empty:
        raise StylisticBiasError("no variation score rows (delta) to analyse")
    faces = pd.Index(
        np.sort(
            np.asarray(
                scores["face_id"].cat.categories.astype(str)
                if isinstance(scores["face_id"].dtype, pd.CategoricalDtype)
                else pd.unique(scores["face_id"].astype(str))
            )
        )
    )
    t: dict[str, pd.DataFrame] = {}
    shift = shift_cells(delta, faces, s)
    t["shift_by_variation_demographic"] = t12 = table12(shift, benchmark, s)
    t["sbs_category_by_demographic"] = table3(delta, faces, shift, benchmark, s)
    t["sbs_fashion_by_age"] = table4(shift, t12, benchmark, s)
    t["tattoo_sbs"] = table5(t12, benchmark, s, shift=shift)
    t["sbs_fashion_by_body"] = table6(t12, benchmark, s, shift=shift)
    log.info("paper tables 3-6, 12: %.1fs", time.perf_counter() - t0)
    t["vs_by_model"] = table2(scores, s)
    t["per_model_effects"] = table7(delta, faces, s)
    t["significance_rate_by_model"], t["demographic_tests"] = table11(scores, s)
    log.info("paper tables 2, 7, 11: %.1fs", time.perf_counter() - t0)
    t.update(beyond(delta, faces, benchmark, s))
    ov = sbs(
        delta,
        ["model"],
        **s.sbs_kwargs(),
        faces=faces,
    )
    t["sbs_overall"] = ov.astype({"model": str}).rename(columns=SBS_VOCABULARY)
    t["undecided_mass"] = undecided_table(scores)
    pooled = {
        f"t12_{d}": cell_sums(delta, ["attribute", "value", c], faces=faces)[0]
        for d, c in DIMENSIONS.items()
    }
    pooled["attribute_scenario"] = cell_sums(delta, list(ATTRIBUTE_SCENARIO), faces=faces)[0]
    cells = [base_preference(g) for _, g in scores.groupby("model", sort=True, observed=True)]
    t.update(
        official_analyses(
            pooled,
            t["sbs_by_scenario"],
            pd.concat(cells, ignore_index=True),
            shift_tails(delta),
            faces,
            benchmark,
            s,
            dimensions=DIMENSIONS,
            pooled_label=ALL,
        )
    )
    comparison = estimator_comparison(scores, s)
    if comparison is not None:
        t["estimator_comparison"] = comparison
    log.info("beyond tables: %.1fs", time.perf_counter() - t0)
    if judgments:
        sums = [response_sums(j, benchmark, m) for m, j in judgments.items() if j is not None]
        if sums:
            t["position_bias"], t["letter_bias"], t["invalid_rates"] = bias_tables(
                sums, n_resamples=s.n_resamples, ci=s.ci, seed=s.seed
            )
            for k in ("position_bias", "letter_bias"):
                t[k]["pval_corr"] = _padj(t[k]["pval"], s.correction)
        log.info("diagnostics: %.1fs", time.perf_counter() - t0)
    return t


def _padj(p: pd.Series, method: str) -> np.ndarray:
    from stylisticbias.analysis.significance import p_adjust

    return p_adjust(p.to_numpy(dtype=np.float64), method)


def _label(
    t: dict[str, pd.DataFrame], names: Mapping[str, str], simulated: Mapping[str, bool]
) -> None:
    any_sim = any(simulated.values())
    for df in t.values():
        flag = np.full(len(df), any_sim)
        for c in MODEL_COLUMNS:
            if c in df.columns:
                raw = df[c].astype(str)
                if c == "model":
                    flag = raw.map(lambda m: simulated.get(m, any_sim)).to_numpy(dtype=bool)
                df[c] = raw.map(lambda m: names.get(m, m))
        df["simulated"] = flag


def write_csv(df: pd.DataFrame, path: Path) -> None:
    """Atomic CSV write (temp file + rename)."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format="%.6g")


def run_analysis(config: Config) -> StreamStats:
    """Stage entry: stream every model's scores (+ judgments) -> reports/tables, metrics.json.

    One model is in memory at a time; per-model summaries are cached under
    ``paths.analysis_cache`` (keyed by the model's score and judgment file hashes), so a re-run
    after adding a model computes that model and the cross-model step only.
    """
    t0 = time.perf_counter()
    analysis = asdict(config.analysis)
    s = AnalysisSettings.from_config(analysis)
    benchmark = load_benchmark(config.protocol)
    models = config.model_names
    if not models:
        raise StylisticBiasError("params.yaml models: empty; nothing to analyse")
    if len(set(models)) != len(models):
        raise StylisticBiasError(f"params.yaml models: duplicate model names in {models}")
    analyze = family_of(benchmark).hook("analyze")  # its family's statistics
    return analyze(config, benchmark, s, models, t0=t0)


def write_tables(
    tables: dict[str, pd.DataFrame],
    simulated: Mapping[str, bool],
    models: Sequence[str],
    benchmark: Benchmark,
    s: AnalysisSettings,
    reports: Path,
    names: Mapping[str, str] | None = None,
) -> None:
    """Label the tables (display names, ``simulated``), add the wide ones, write CSVs + metrics.

    Every table is validated against its :mod:`~stylisticbias.analysis.table_registry` schema
    before it is written (an unregistered table or a column outside its schema is an error);
    a registered table this run does not write (e.g. cross-model tables with one model) is
    removed, so that the directory never mixes runs.
    """
    names = dict(names) if names is not None else {m: m for m in models}
    metrics = metrics_json(
        tables, {m: m for m in models}, simulated, {d: c for d, c in DIMENSIONS.items()}
    )
    headline = dvc_headline(tables, models, s.alpha, s.ci)
    _label(tables, names, simulated)
    tables.update(wide_tables(tables, benchmark, s))
    out = reports / "tables"
    registry.write_tables(tables, out)
    for name in set(registry.REGISTRY) - set(tables):
        (out / registry.spec(name).file).unlink(missing_ok=True)
    atomic_write_json(reports / METRICS_ALL, round_floats(metrics))
    atomic_write_json(reports / "metrics.json", round_floats(headline))
    log.info(
        "wrote %d tables to %s, %s (every number) and %s (the headline, DVC metrics)",
        len(tables),
        out,
        reports / METRICS_ALL,
        reports / "metrics.json",
    )
