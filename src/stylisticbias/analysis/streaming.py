"""The streaming analysis: one model at a time, then a cross-model step over small summaries.

Memory is flat in the number of models: each model's scores partition (and judgments) is read,
reduced to a :class:`~stylisticbias.analysis.per_model.ModelSummary` and released before the
next model is read; the cross-model step adds the summaries' face x cell sums up as they
stream past and keeps only their per-model table rows (tens of rows per model).

Incremental: every summary is saved under ``<cache>/<model>/`` with its key -- the SHA-256 of
the model's score file and judgments file, the face index of the analysis, the analysis and
benchmark settings and the analysis code. A model whose key is unchanged is not re-read, so
adding a model to a finished leaderboard computes that model and the cross-model step only.

The numbers equal :func:`stylisticbias.analysis.run.analyze` (all models in memory) up to
floating-point summation order (tests/analysis/test_streaming.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from stylisticbias.analysis.beyond_tables import (
    ALL,
    HALF_GROUPINGS,
    SBS_GROUPINGS,
    SBS_VOCABULARY,
    beyond_from_sbs,
)
from stylisticbias.analysis.bootstrap import face_weights
from stylisticbias.analysis.estimators import order_rows as estimator_order
from stylisticbias.analysis.metrics import CellSums, sbs_frame
from stylisticbias.analysis.model_tables import table2_finish, table7_finish, table11_finish
from stylisticbias.analysis.official_analyses import official_analyses
from stylisticbias.analysis.paper_tables import (
    DIMENSIONS,
    shift_from_sums,
    table3,
    table4,
    table5,
    table6,
    table12,
)
from stylisticbias.analysis.per_model import (
    CORRECTED_ACROSS_MODELS,
    ModelSummary,
    load_summary,
    prepare_scores,
    save_summary,
    saved_faces,
    summarize_model,
    summary_key,
)
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import p_adjust
from stylisticbias.analysis.undecided import order_rows as undecided_order
from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.forked import forked_pool

log = logging.getLogger(__name__)


#: ``DataFrame.attrs`` flag of an accumulated key frame known to be sorted and duplicate-free
_SORTED_CELLS = "stylisticbias_sorted_cells"


def add_cell_sums(acc: CellSums | None, cs: CellSums) -> CellSums:
    """Cell-wise sum of two models' :class:`CellSums` (same face index); cells are the union,
    ordered as :func:`~stylisticbias.analysis.metrics.group_codes` orders them (sorted keys).

    When the accumulated cells are already sorted and ``cs`` has exactly those cells (every
    model has every cell, the usual case) the arrays are added as they stand: the same numbers
    as the general merge, without re-sorting the keys for every model."""
    if acc is None:
        keys = cs.keys.copy()
        keys.attrs[_SORTED_CELLS] = _sorted_cells(keys)
        return CellSums(keys, cs.num.copy(), cs.den.copy(), cs.absum.copy())
    cols = list(cs.keys.columns)
    if list(acc.keys.columns) != cols or acc.num.shape[0] != cs.num.shape[0]:
        raise ValueError("add_cell_sums: different groupings or face indexes")
    if acc.keys.attrs.get(_SORTED_CELLS) and acc.keys.equals(cs.keys):
        return CellSums(acc.keys, acc.num + cs.num, acc.den + cs.den, acc.absum + cs.absum)
    keys = (
        pd.concat([acc.keys, cs.keys], ignore_index=True)
        .drop_duplicates()
        .sort_values(cols, kind="mergesort")
        .reset_index(drop=True)
    )
    ix = pd.MultiIndex.from_frame(keys)
    ia = ix.get_indexer(pd.MultiIndex.from_frame(acc.keys))
    ib = ix.get_indexer(pd.MultiIndex.from_frame(cs.keys))
    nf, nc = acc.num.shape[0], len(keys)
    num, den, absum = np.zeros((nf, nc)), np.zeros((nf, nc)), np.zeros(nc)
    num[:, ia] = acc.num
    den[:, ia] = acc.den
    absum[ia] = acc.absum
    num[:, ib] += cs.num
    den[:, ib] += cs.den
    absum[ib] += cs.absum
    keys.attrs[_SORTED_CELLS] = True  # sorted and de-duplicated just above
    return CellSums(keys, num, den, absum)


def _sorted_cells(keys: pd.DataFrame) -> bool:
    """The key frame is what the general merge of :func:`add_cell_sums` would make of it:
    duplicate-free and in sorted order."""
    order = keys.sort_values(list(keys.columns), kind="mergesort").index
    return bool((order == np.arange(len(keys))).all()) and not keys.duplicated().any()


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def combine(
    summaries: Iterable[ModelSummary],
    faces: pd.Index,
    benchmark: Benchmark,
    s: AnalysisSettings,
    diagnostics_order: Sequence[str] | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, bool]]:
    """The cross-model step: every table (long, by file stem) from the models' summaries.

    ``summaries`` must come in sorted model order (the order of an all-models analysis); they
    are consumed one at a time. ``diagnostics_order`` orders the position/letter/invalid rows
    (the order of params.yaml ``models``). Returns the tables and each model's ``simulated`` flag.
    """
    pooled: dict[str, CellSums] = {}
    parts: dict[str, list[pd.DataFrame]] = {}
    simulated: dict[str, bool] = {}
    last = None
    for sm in summaries:
        if last is not None and sm.model <= last:
            raise ValueError(f"combine: summaries out of order ({last!r} before {sm.model!r})")
        last = sm.model
        simulated[sm.model] = sm.simulated
        for k, cs in sm.sums.items():
            pooled[k] = add_cell_sums(pooled.get(k), cs)
        for k, df in sm.tables.items():
            parts.setdefault(k, []).append(df)
    if not pooled:
        raise StylisticBiasError("no variation score rows (delta) to analyse")
    per = {k: _concat(v) for k, v in parts.items()}
    for k in CORRECTED_ACROSS_MODELS:
        if k in per and len(per[k]):
            per[k]["pval_corr"] = p_adjust(per[k]["pval"].to_numpy(np.float64), s.correction)

    t0 = time.perf_counter()
    t: dict[str, pd.DataFrame] = {}
    shift = shift_from_sums({d: pooled[f"t12_{d}"] for d in DIMENSIONS}, faces, s)
    t["shift_by_variation_demographic"] = t12 = table12(shift, benchmark, s)
    t["sbs_category_by_demographic"] = table3(pooled["category"], faces, shift, benchmark, s)
    t["sbs_fashion_by_age"] = table4(shift, t12, benchmark, s)
    t["tattoo_sbs"] = table5(t12, benchmark, s, shift=shift)
    t["sbs_fashion_by_body"] = table6(t12, benchmark, s, shift=shift)
    t["vs_by_model"] = table2_finish(per["vs"], s)
    t["per_model_effects"] = table7_finish(per["face_effects"], s)
    t["significance_rate_by_model"], t["demographic_tests"] = table11_finish(
        per["demographic_tests"]
    )
    w = face_weights(len(faces), s.n_resamples, s.seed) if s.n_resamples else None
    sbs_tables = {}
    for key in SBS_GROUPINGS:
        all_rows = sbs_frame(pooled[key], **s.sbs_kwargs(), weights=w)
        all_rows.insert(0, "model", ALL)
        sbs_tables[key] = pd.concat([per[f"sbs_{key}"], all_rows], ignore_index=True)
    halves = None
    if not s.official:
        halves = {k: per.get(f"half_{k}", pd.DataFrame()) for k in HALF_GROUPINGS}
    t.update(beyond_from_sbs(sbs_tables, benchmark, s, halves=halves))
    t["sbs_overall"] = per["sbs_overall"].rename(columns=SBS_VOCABULARY)
    t.update(
        official_analyses(
            pooled,
            t["sbs_by_scenario"],
            per["base_preference"],
            per.get("shift_tails", pd.DataFrame(columns=["model", "n"])),
            faces,
            benchmark,
            s,
            dimensions=DIMENSIONS,
            pooled_label=ALL,
        )
    )
    t["undecided_mass"] = undecided_order(parts.get("undecided_mass", []))
    comparison = estimator_order(parts.get("estimator_comparison", []))
    if comparison is not None:
        t["estimator_comparison"] = comparison
    if "position_bias" in per:
        rank = {m: i for i, m in enumerate(diagnostics_order or sorted(simulated))}
        for k in ("position_bias", "letter_bias", "invalid_rates"):
            df = per[k]
            order = np.argsort(df["model"].map(rank).to_numpy(), kind="stable")
            t[k] = df.iloc[order].reset_index(drop=True)
        for k in ("position_bias", "letter_bias"):  # correction over models
            t[k]["pval_corr"] = p_adjust(t[k]["pval"].to_numpy(np.float64), s.correction)
    log.info("cross-model step: %.1fs", time.perf_counter() - t0)
    return t, simulated


@dataclass(frozen=True)
class ModelInput:
    """Where one model's inputs live and how to read them."""

    model: str
    scores_digest: str
    judgments_digest: str | None
    read_scores: Callable[[], pd.DataFrame]
    read_judgments: Callable[[], pd.DataFrame | None]
    read_faces: Callable[[], Sequence[str]]


@dataclass(frozen=True)
class StreamStats:
    """What a streaming run did: models computed vs. taken from the cache."""

    computed: tuple[str, ...]
    cached: tuple[str, ...]


def code_digest(root: Path | None = None) -> str:
    """SHA-256 over the analysis package's sources (``root``: its folder), its subpackages'
    included (a code change invalidates the cache)."""
    root = root if root is not None else Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(p.relative_to(root).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def settings_digest(*sections: object) -> str:
    """SHA-256 of config sections (JSON, sorted keys)."""
    blob = json.dumps(sections, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def analyze_streaming(
    inputs: Sequence[ModelInput],
    benchmark: Benchmark,
    s: AnalysisSettings,
    cache: Path | None,
    settings_key: str,
    diagnostics_order: Sequence[str] | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, bool], StreamStats]:
    """Every table, one model in memory at a time; summaries cached under ``cache/<model>``.

    Pass 1 fixes the face index (every model's face ids: from the cache where a model's scores
    are unchanged, else one column read); pass 2 streams the summaries (cached or computed) into
    :func:`combine`. Cache entries of models not in ``inputs`` are removed.
    """
    code = code_digest()
    by_name = {m.model: m for m in inputs}
    order = sorted(by_name)
    face_ids: set[str] = set()
    for name in order:
        m = by_name[name]
        key = summary_key(cache / name) if cache else None
        if key is not None and key.get("scores") == m.scores_digest:
            face_ids.update(saved_faces(cache / name))  # type: ignore[operator]
        else:
            face_ids.update(map(str, m.read_faces()))
    faces = pd.Index(np.sort(np.asarray(sorted(face_ids), dtype=object)))
    faces_key = hashlib.sha256("\n".join(faces).encode()).hexdigest()
    w = face_weights(len(faces), s.n_resamples, s.seed) if s.n_resamples else None
    computed: list[str] = []
    cached: list[str] = []

    def cache_key(name: str) -> dict[str, object]:
        m = by_name[name]
        return {
            "scores": m.scores_digest,
            "judgments": m.judgments_digest,
            "faces": faces_key,
            "settings": settings_key,
            "code": code,
        }

    def compute(name: str) -> ModelSummary:
        """Read, summarise and cache one model (in a worker process or thread)."""
        m = by_name[name]
        path = cache / name if cache else None
        t0 = time.perf_counter()
        scores = prepare_scores(m.read_scores())
        # no reference to the judgments here: summarize_model drops them once reduced
        sm = summarize_model(scores, faces, benchmark, s, m.read_judgments(), w)
        del scores
        if path is not None:
            save_summary(sm, path, cache_key(name))
        log.info("%s: summarised in %.1fs", name, time.perf_counter() - t0)
        return sm

    def stream() -> Iterator[ModelSummary]:
        bar = tqdm(total=len(order), desc="analysis per model", unit="model", mininterval=5)
        todo = {n for n in order if not (cache and summary_key(cache / n) == cache_key(n))}
        # processes for two or more models to compute, forked before the loader starts threads
        with (
            forked_pool(compute, s.workers if len(todo) > 1 else 1) as submit,
            ThreadPoolExecutor(max_workers=s.workers) as loader,
        ):
            # at most `workers` models in memory; summaries are consumed in sorted order
            pending: deque[Future[ModelSummary]] = deque()

            def start(name: str) -> None:
                if name in todo:
                    computed.append(name)
                    pending.append(submit(name))
                else:
                    cached.append(name)
                    pending.append(loader.submit(load_summary, cache / name))  # type: ignore[operator]

            names = iter(order)
            for name in names:
                start(name)
                if len(pending) >= s.workers:
                    break
            while pending:
                sm = pending.popleft().result()
                nxt = next(names, None)
                if nxt is not None:
                    start(nxt)
                bar.update()
                yield sm
        bar.close()

    tables, simulated = combine(stream(), faces, benchmark, s, diagnostics_order)
    if cache is not None and cache.exists():
        for p in cache.iterdir():
            if p.is_dir() and p.name not in by_name:
                shutil.rmtree(p)
    log.info("models computed: %d, from the cache: %d", len(computed), len(cached))
    return tables, simulated, StreamStats(tuple(sorted(computed)), tuple(sorted(cached)))


def model_inputs(
    models: Sequence[str],
    read_scores: Callable[[str], pd.DataFrame],
    read_judgments: Callable[[str], pd.DataFrame | None],
    read_faces: Callable[[str], Sequence[str]],
    digests: Mapping[str, tuple[str, str | None]],
) -> list[ModelInput]:
    """:class:`ModelInput` per model from reader functions and ``(scores, judgments)`` digests."""
    return [
        ModelInput(
            m,
            digests[m][0],
            digests[m][1],
            (lambda m=m: read_scores(m)),
            (lambda m=m: read_judgments(m)),
            (lambda m=m: read_faces(m)),
        )
        for m in models
    ]
