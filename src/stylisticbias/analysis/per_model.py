"""One model's scores (and judgments) reduced to everything the cross-model step needs.

A :class:`ModelSummary` holds (1) the model's own rows of every per-model table -- VS cells
(Table 2, with the de-biased VS, its interval and noise floor), face-level effects (Table 7),
demographic tests (Table 11), undecided mass and its SBS bounds, the paper-vs-exact estimator
comparison, SBS per scenario /
scenario category / category / variation / overall, position and letter bias, invalid rates --
with *uncorrected* p-values where the correction family spans models, and (2) the model's
face x cell sums (:class:`~stylisticbias.analysis.metrics.CellSums`) of every grouping that the
pooled tables (3-6, 12 and the ``model = All`` rows) use; Table 3's per-cell face-level
contrast tests read the summed Table 12 sums (face x cell), so they need no face-level rows.
Sums are additive over models, so the pooled tables are exact functions of the per-model
summaries. A summary is a few MB whatever
the number of responses, and is saved as Parquet + ``.npz`` (no pickle) so that it can be cached.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from stylisticbias.analysis.beyond_tables import SBS_GROUPINGS, half_profiles
from stylisticbias.analysis.diagnostics import bias_tables, response_sums
from stylisticbias.analysis.estimators import estimator_rows
from stylisticbias.analysis.metrics import CellSums, cell_sums, sbs
from stylisticbias.analysis.model_tables import table2_cells, table7_cells, table11_cells
from stylisticbias.analysis.official_analyses import ATTRIBUTE_SCENARIO
from stylisticbias.analysis.official_analyses.preference import base_preference, shift_tails
from stylisticbias.analysis.paper_tables import DIMENSIONS
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.undecided import undecided_table
from stylisticbias.benchmark import Benchmark
from stylisticbias.outputs import atomic_dir

log = logging.getLogger(__name__)

#: score columns the analysis reads
SCORE_COLUMNS = [
    "model",
    "face_id",
    "is_base",
    "category",
    "attribute",
    "value",
    "age",
    "gender",
    "ethnicity",
    "body_type",
    "scenario_id",
    "scenario_category",
    "phi",
    "delta",
    "simulated",
]
#: optional score columns, read where present: undecided mass (analysis/undecided.py) and the
#: paper's 12-draw vs the exact estimator (analysis/estimators.py); absent = none recorded
OPTIONAL_SCORE_COLUMNS = [
    "undecided",
    "undecided_excluded",
    "delta_low",
    "delta_high",
    "phi_paper",
    "phi_exact",
    "delta_paper",
    "delta_exact",
]
#: columns held as pandas categoricals (compact; their sorted categories order the cells)
CATEGORICAL = [
    "model",
    "face_id",
    "category",
    "attribute",
    "value",
    "age",
    "gender",
    "ethnicity",
    "body_type",
    "scenario_category",
]
#: pooled cell sums: Table 12's ``[attribute, value, <demographic>]`` per dimension, then the
#: SBS profile groupings
POOLED: dict[str, tuple[str, ...]] = {
    **{f"t12_{dim}": ("attribute", "value", col) for dim, col in DIMENSIONS.items()},
    **SBS_GROUPINGS,
    "attribute_scenario": ATTRIBUTE_SCENARIO,
}
#: per-model tables whose ``pval_corr`` is one correction family over all models
CORRECTED_ACROSS_MODELS = (
    "vs",
    "sbs_overall",
    *(f"sbs_{k}" for k in SBS_GROUPINGS),
)
FORMAT = 4  # bump when the saved layout changes


@dataclass(frozen=True)
class ModelSummary:
    """One model's per-model table rows and pooled-cell contributions (see module docstring)."""

    model: str
    simulated: bool
    n_rows: int
    faces: tuple[str, ...]  # the model's face ids (sorted)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    sums: dict[str, CellSums] = field(default_factory=dict)


def prepare_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """The analysis columns of one model's score rows (optional ones where present), with
    compact categorical dtypes."""
    df = scores[SCORE_COLUMNS + [c for c in OPTIONAL_SCORE_COLUMNS if c in scores.columns]].copy()
    for c in CATEGORICAL:
        df[c] = df[c].astype("category")
    return df


def delta_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """Variation rows with a non-null delta (what every SBS-type statistic reads)."""
    return scores[~scores["is_base"].to_numpy(dtype=bool) & scores["delta"].notna().to_numpy()]


def summarize_model(
    scores: pd.DataFrame,
    faces: pd.Index,
    benchmark: Benchmark,
    s: AnalysisSettings,
    judgments: pd.DataFrame | None = None,
    weights: np.ndarray | None = None,
) -> ModelSummary:
    """Reduce one model's score rows (``prepare_scores``) and judgments to a summary.

    ``faces`` is the face index of the whole analysis (every model's face ids, sorted): the face
    bootstrap draws (``weights``, ``face_weights(len(faces), ...)``) and the pooled sums are
    indexed by it, so each model's numbers equal those of an all-models-at-once analysis.
    """
    models = scores["model"].astype(str).unique()
    if len(models) != 1:
        raise ValueError(f"summarize_model: expected one model's rows; got {sorted(models)}")
    model = str(models[0])
    tables: dict[str, pd.DataFrame] = {}
    sums: dict[str, CellSums] = {}
    if judgments is not None:  # first, so the (large) judgments are released early
        rs = response_sums(judgments, benchmark, model)
        del judgments
        pos, let, inv = bias_tables([rs], n_resamples=s.n_resamples, ci=s.ci, seed=s.seed)
        tables["position_bias"], tables["letter_bias"], tables["invalid_rates"] = pos, let, inv
    tables["vs"] = table2_cells(scores, s)
    tables["demographic_tests"] = table11_cells(scores, s)
    # undecided mass bounds and the paper-vs-exact estimators
    tables["undecided_mass"] = undecided_table(scores)
    tables["base_preference"] = base_preference(scores)
    comparison = estimator_rows(scores, s)
    if comparison is not None:
        tables["estimator_comparison"] = comparison
    delta = delta_rows(scores)
    if not delta.empty:
        kw = dict(**s.sbs_kwargs(), faces=faces, weights=weights)
        tables["face_effects"] = table7_cells(delta, faces, s, weights)
        for key, by in SBS_GROUPINGS.items():
            tables[f"sbs_{key}"] = sbs(delta, ["model", *by], **kw).astype({"model": str})
        tables["sbs_overall"] = sbs(delta, ["model"], **kw).astype({"model": str})
        tables["shift_tails"] = shift_tails(delta)
        if not s.official:
            for key, t in half_profiles(delta, faces).items():
                tables[f"half_{key}"] = t
        for key, by in POOLED.items():
            sums[key] = cell_sums(delta, list(by), faces=faces)[0]
    else:
        log.warning(
            "%s: no variation rows with a delta; it enters the per-model tables only", model
        )
    fids = scores["face_id"]
    face_ids = (
        fids.cat.categories.astype(str) if isinstance(fids.dtype, pd.CategoricalDtype) else fids
    )
    return ModelSummary(
        model=model,
        simulated=bool(scores["simulated"].any()),
        n_rows=len(scores),
        faces=tuple(sorted(set(map(str, face_ids)))),
        tables=tables,
        sums=sums,
    )


def save_summary(sm: ModelSummary, path: Path, key: dict[str, object]) -> None:
    """Write ``sm`` to the directory ``path`` (replaced atomically), tagged with its cache key."""
    with atomic_dir(path) as tmp:
        _write_summary(sm, tmp, key)


def _write_summary(sm: ModelSummary, tmp: Path, key: dict[str, object]) -> None:
    for name, df in sm.tables.items():
        df.to_parquet(tmp / f"table.{name}.parquet", index=False)
    for name, cs in sm.sums.items():
        cs.keys.to_parquet(tmp / f"sums.{name}.keys.parquet", index=False)
        np.savez(tmp / f"sums.{name}.npz", num=cs.num, den=cs.den, absum=cs.absum)
    meta = {
        "format": FORMAT,
        "key": key,
        "model": sm.model,
        "simulated": sm.simulated,
        "n_rows": sm.n_rows,
        "tables": sorted(sm.tables),
        "sums": sorted(sm.sums),
    }
    (tmp / "faces.txt").write_text("\n".join(sm.faces) + "\n", encoding="utf-8")
    (tmp / "summary.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")


def summary_key(path: Path) -> dict[str, object] | None:
    """The cache key a saved summary was computed under (None if absent or unreadable)."""
    try:
        meta = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta.get("key") if meta.get("format") == FORMAT else None


def saved_faces(path: Path) -> tuple[str, ...]:
    """The face ids of a saved summary."""
    text = (path / "faces.txt").read_text(encoding="utf-8")
    return tuple(x for x in text.splitlines() if x)


def load_summary(path: Path) -> ModelSummary:
    """Read a summary written by :func:`save_summary`."""
    meta = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    tables = {n: pd.read_parquet(path / f"table.{n}.parquet") for n in meta["tables"]}
    sums = {}
    for n in meta["sums"]:
        with np.load(path / f"sums.{n}.npz") as z:
            sums[n] = CellSums(
                pd.read_parquet(path / f"sums.{n}.keys.parquet"), z["num"], z["den"], z["absum"]
            )
    return ModelSummary(
        model=str(meta["model"]),
        simulated=bool(meta["simulated"]),
        n_rows=int(meta["n_rows"]),
        faces=saved_faces(path),
        tables=tables,
        sums=sums,
    )
