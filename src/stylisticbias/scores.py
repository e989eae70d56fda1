"""Preference scores phi per image x scenario and prediction shifts delta per variation.

Paper §3.1/§4.4 and App. C.2: phi_i(x) is the share of *valid* responses that pick the scenario's
POSITIVE pole, over all orderings and seeds (positions and letters are permuted by the orderings;
the pole is not); invalid responses are excluded; delta_i(x_v) = phi_i(x_v) - phi_i(x_b).

Two kinds of judgment rows feed phi (``source=``):

- **drawn** (seed >= 1: ``generate``, ``sampled``, ``simulated``): phi = (# choice == positive)
  / n_valid, with n_valid = # choice in {positive, negative} and n = # responses asked;
- **exact** (seed 0: the answer distribution per ordering j): phi = sum_j p_pos_j /
  sum_j (p_pos_j + p_neg_j) -- the expectation of the paper's estimator when every ordering
  is equally often valid -- with n_valid = K * sum_j (p_pos_j + p_neg_j) the *expected* number of
  valid responses among the K seeds x M orderings the paper would have asked, and n = M * K
  (K = ``k``, the number of seeds of the protocol, 3 by default).

**Undecided mass** (``p_undecided``: answer mass that ``exact``/``sampled`` pruned before the
parser decided) is left out of phi's numerator and denominator -- unbiased only if it would have
split like the decided mass, which it need not. Each score row records it (``undecided``: the
mean over the row's orderings) and the range phi could take had it gone any way
(``phi_low = pos / (valid + u)``, ``phi_high = (pos + u) / (valid + u)``, with ``u`` the undecided
mass in the same units as ``valid``). Rows above ``undecided_warn`` (``judge.undecided_warn``,
0.01) are counted in one warning; rows above ``undecided_max`` (``judge.undecided_max``, 0.05)
are *excluded*: phi (and every delta using it) is null and ``undecided_excluded`` is true. The
``analyze`` stage reports the counts and bounds every SBS by the phi ranges
(``undecided_mass.csv``).

**Reader** (``judge.parser``): ``paper`` (default) reads each response as App. C.2 describes and
leaves invalid answers out of phi; ``official`` re-reads every drawn response text with the
paper's released code's ``parse_choice``
(:func:`~stylisticbias.judge.protocol.official_parser.parse_official`) and, like that code,
keeps unparsed answers in phi's denominator: phi = # positive / n (``n_valid`` = # parsed). It
needs response texts (``generate`` or ``simulated`` decoding); ``exact``/``sampled`` rows hold
distributions under the ``paper`` reader and are refused.

**Both estimators** (beside ``phi``): ``phi_paper`` is the paper's estimator -- the share of
positive answers among the valid ones of K x M *drawn* responses (granularity 1/12 for 3 seeds x 4
orderings) -- and ``phi_exact`` its expectation (the ``exact`` formula). A drawn run has
``phi_paper`` from its draws and ``phi_exact`` from the rows' ``p_*``; an ``exact`` run has
``phi_exact`` and ``phi_paper`` from K responses per ordering drawn from the exact distribution
with the paper's seeds 1..K (the ``sampled`` decoding's draw,
:func:`~stylisticbias.judge.protocol.outcomes.draw_outcomes`; undecided mass counts as invalid).
``delta_paper``/``delta_exact`` likewise. The ``analyze`` stage compares the paper's
granularity-sensitive numbers under both (``estimator_comparison.csv``).

``source="auto"`` (default) uses the drawn rows when the table has any and the exact rows
otherwise, so a ``sampled`` run is scored like the paper (its seed-0 rows stay available with
``source="exact"``). phi is null where n_valid == 0; delta is null on base faces and where either
phi is null or the base face was not judged.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark, load_benchmark
from stylisticbias.config import project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.tasks.grouping import codes
from stylisticbias.judge.protocol.tasks.records import RECORDS_FILE, read_task_records
from stylisticbias.judge.protocol.tasks.registry import task_type
from stylisticbias.outputs import atomic_path
from stylisticbias.schemas import (
    FACES,
    JUDGMENT_RECORDS,
    JUDGMENTS,
    SCORES,
    VARIATIONS,
    check_demographics,
    read_table,
    validate,
)
from stylisticbias.schemas import read_judgments as read_judgment_records
from stylisticbias.score_store import write_model_scores
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

Source = Literal["auto", "drawn", "exact"]


def _exclude_undecided(phi: pd.DataFrame, warn: float, limit: float) -> pd.DataFrame:
    """Warn about rows with undecided mass above ``warn``; null phi above ``limit``."""
    if not 0.0 <= warn <= limit <= 1.0:
        raise StylisticBiasError(
            f"params.yaml judge: undecided_warn {warn!r} / undecided_max {limit!r}: need "
            "0 <= undecided_warn <= undecided_max <= 1"
        )
    u = phi["undecided"].to_numpy(dtype=np.float64)
    n_warn = int(np.sum(u > warn))
    out = phi.assign(undecided_excluded=u > limit)
    n_out = int(out["undecided_excluded"].sum())
    if n_warn:
        log.warning(
            "scores: %d of %d image x scenario rows have undecided (pruned) mass > %g "
            "(mean %.4f, max %.4f); %d above undecided_max %g are excluded (phi null). Undecided "
            "mass is left out of phi, which is unbiased only if it would split like the rest: "
            "see undecided_mass.csv for the bounds on every SBS",
            n_warn,
            len(u),
            warn,
            float(np.mean(u)) if len(u) else 0.0,
            float(np.max(u)) if len(u) else 0.0,
            n_out,
            limit,
        )
    cols = [c for c in ("phi", "phi_low", "phi_high", "phi_paper", "phi_exact") if c in out]
    out.loc[out["undecided_excluded"], cols] = np.nan
    return out


def compute_scores(
    judgments: pd.DataFrame,
    faces: pd.DataFrame,
    variations: pd.DataFrame,
    benchmark: Benchmark,
    *,
    source: Source = "auto",
    k: int = 3,
    undecided_warn: float = 0.01,
    undecided_max: float = 0.05,
    parser: str = "paper",
    validate_output: bool = True,
    definitions: str = "paper",
) -> pd.DataFrame:
    """phi, n_valid, n and delta per (model, image, scenario) -- a ``SCORES`` table.

    ``judgments`` are JUDGMENTS rows (one or more models); ``faces``/``variations`` the dataset
    tables, which supply ``face_id``, ``is_base``, the demographic and attribute columns.
    Judgment images missing from both tables raise :class:`StylisticBiasError`. See the module
    docstring for drawn vs. exact rows, ``source``, ``k``, the undecided-mass limits and
    ``parser`` (``paper`` | ``official``). ``validate_output=False`` leaves the SCORES check to
    the caller (:func:`~stylisticbias.score_store.write_model_scores` validates what it writes).
    ``definitions`` (``analysis.definitions``):
    ``official`` keeps unparsed answers in phi's denominator (phi = # positive / n) under either
    reader, as the paper's released code does; it needs drawn rows.
    """
    if source not in ("auto", "drawn", "exact"):
        raise ValueError(f"source: {source!r}; valid: auto, drawn, exact")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if "p_undecided" not in judgments.columns:  # a column subset without it: none recorded
        judgments = judgments.assign(p_undecided=0.0)
    task = task_type(benchmark.task)
    if parser not in task.readers:
        raise StylisticBiasError(
            f"params.yaml judge.parser: {parser!r}; valid: {', '.join(task.readers)}"
        )
    if definitions not in ("paper", "official"):
        raise StylisticBiasError(
            f"params.yaml analysis.definitions: {definitions!r}; valid: paper, official"
        )
    phi = task.score_cells(judgments, benchmark, source=source, k=k, reader=parser)
    if definitions == "official" and parser != "official":
        if source == "exact" or not (judgments["seed"] > 0).any():
            raise StylisticBiasError(
                "analysis.definitions official: the official phi needs drawn responses; the "
                "judgments hold only exact rows (seed 0). Re-judge with engine.decoding "
                "generate, or use analysis.definitions paper"
            )
        # the paper's code: unparsed answers stay in the denominator (phi = # positive / n)
        phi["phi"] = np.where(phi["n"] > 0, phi["phi"] * phi["n_valid"] / phi["n"], np.nan)
        phi["phi"] = phi["phi"].fillna(0.0).where(phi["n"] > 0)
        phi["phi_low"] = phi["phi_high"] = phi["phi_paper"] = phi["phi"]
        phi["phi_exact"] = np.nan
    phi = _exclude_undecided(phi, undecided_warn, undecided_max)

    demo = list(DEMOGRAPHIC_AXES)
    f = faces[["image_id", "face_id", *demo]].assign(
        is_base=True, category=None, attribute=None, value=None
    )
    v = variations[["image_id", "face_id", "category", "attribute", "value", *demo]].assign(
        is_base=False
    )
    meta = pd.concat([f, v], ignore_index=True)
    known = phi["image_id"].isin(meta["image_id"]).to_numpy()
    unknown = [] if known.all() else sorted(set(phi["image_id"][~known]))
    if unknown:
        raise StylisticBiasError(
            f"judgments: {len(unknown)} image_id(s) not in faces/variations tables, e.g. "
            + ", ".join(unknown[:5])
        )
    df = phi.merge(meta, on="image_id", how="left", validate="many_to_one")
    cat = {s.id: s.category for s in benchmark.scenarios}
    bad = sorted(set(df["scenario_id"]) - set(cat))
    if bad:
        raise StylisticBiasError(f"judgments: unknown scenario_id(s) {bad}; valid: {sorted(cat)}")
    df["scenario_category"] = df["scenario_id"].map(cat)

    base = df.loc[
        df["is_base"],
        ["model", "face_id", "scenario_id", "phi", "phi_low", "phi_high", "phi_paper", "phi_exact"],
    ].rename(
        columns={"phi": "_phi_base", "phi_low": "_base_low", "phi_high": "_base_high",
                 "phi_paper": "_base_paper", "phi_exact": "_base_exact"}
    )  # fmt: skip
    df = df.merge(base, on=["model", "face_id", "scenario_id"], how="left", validate="many_to_one")
    df["delta"] = np.where(df["is_base"], np.nan, df["phi"] - df["_phi_base"])
    # the widest delta the undecided mass of both images allows
    df["delta_low"] = np.where(df["is_base"], np.nan, df["phi_low"] - df["_base_high"])
    df["delta_high"] = np.where(df["is_base"], np.nan, df["phi_high"] - df["_base_low"])
    df["delta_paper"] = np.where(df["is_base"], np.nan, df["phi_paper"] - df["_base_paper"])
    df["delta_exact"] = np.where(df["is_base"], np.nan, df["phi_exact"] - df["_base_exact"])
    cols = list(SCORES.columns)
    df = (
        df[cols]
        .sort_values(["model", "image_id", "scenario_id"], kind="stable")
        .reset_index(drop=True)
    )
    return validate(df, SCORES, "scores") if validate_output else df


#: the judgments columns the scores read (``response`` only for the official parser)
SCORE_COLUMNS = ("image_id", "model", "decoding", "scenario_id", "ordering", "seed", "choice",
                 "p_pos", "p_neg", "p_invalid", "p_undecided", "simulated")  # fmt: skip
_DICTIONARY = ("image_id", "model", "decoding", "choice")  # read as categoricals: codes, no hashing
_CHOICES = ("positive", "negative", "invalid")
_DECODINGS = ("generate", "sampled", "exact", "simulated")


def read_judgments(path: str | Path, *, with_response: bool = False) -> pd.DataFrame:
    """The scoring columns of a judgments table, checked against the JUDGMENT_RECORDS schema
    (JUDGMENTS for a table written before ``image_sha256`` was kept).

    The checks run on Arrow columns, vectorised: the file's columns and types, nulls (from the
    Parquet statistics for columns not read), value ranges, allowed values and unique
    (image, model, scenario, ordering, seed) keys. Anything they do not pass is handed to the
    full schema validation (:func:`~stylisticbias.schemas.read_table`), whose one-line error
    names the file, column and row -- so a bad table fails exactly as before, and a good one is
    read in a fraction of the time. String keys come back as categoricals.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    p = Path(path)
    cols = [*SCORE_COLUMNS, *(("response",) if with_response else ())]
    try:
        pf = pq.ParquetFile(p)
        table = pq.read_table(p, columns=cols, read_dictionary=list(_DICTIONARY))
    except Exception:  # missing, unreadable, or a column missing: the full check says which
        return read_judgment_records(p)[cols]
    schema = pf.schema_arrow

    def strings(t: pa.DataType) -> bool:
        if pa.types.is_dictionary(t):
            t = t.value_type
        return pa.types.is_string(t) or pa.types.is_large_string(t)

    kinds = {"image_id": strings, "face_id": strings, "model": strings, "engine": strings,
             "decoding": strings, "response": strings, "choice": strings,
             "scenario_id": pa.types.is_integer, "ordering": pa.types.is_integer,
             "seed": pa.types.is_integer, "p_pos": pa.types.is_floating,
             "p_neg": pa.types.is_floating, "p_invalid": pa.types.is_floating,
             "p_undecided": pa.types.is_floating, "simulated": pa.types.is_boolean,
             "image_sha256": strings}  # fmt: skip
    # the stored records (JUDGMENT_RECORDS), or a table written before image hashes were kept
    known = ({*JUDGMENTS.columns}, {*JUDGMENT_RECORDS.columns})
    ok = set(schema.names) in known and all(
        kinds[name](schema.field(name).type) for name in kinds if name in schema.names
    )
    if ok:  # no nulls where the schema has none (columns not read: from the statistics)
        nullable = {"response", "choice"}
        meta = pf.metadata
        for i, name in enumerate(schema.names):
            if name in nullable:
                continue
            if name in cols:
                ok = ok and table.column(name).null_count == 0
                continue
            for rg in range(meta.num_row_groups):
                stats = meta.row_group(rg).column(i).statistics
                ok = ok and stats is not None and stats.has_null_count and stats.null_count == 0
    if ok:

        def within(name: str, lo: float, hi: float | None = None) -> bool:
            mm = pc.min_max(table.column(name))
            lo_v, hi_v = mm["min"].as_py(), mm["max"].as_py()
            return lo_v is None or (lo_v >= lo and (hi is None or hi_v <= hi))

        def allowed(name: str, values: tuple[str, ...]) -> bool:
            col = table.column(name)
            seen = set()
            for chunk in col.chunks:
                seen.update(chunk.dictionary.to_pylist())
            return seen <= set(values)  # the dictionaries hold at least every value present

        ok = (within("scenario_id", 1, 10_000) and within("ordering", 1, 4)
              and within("seed", 0) and all(within(c, 0.0, 1.0) for c in
                                             ("p_pos", "p_neg", "p_invalid", "p_undecided"))
              and allowed("decoding", _DECODINGS) and allowed("choice", _CHOICES))  # fmt: skip
    df = table.to_pandas() if ok else None
    if df is not None:
        key = np.zeros(len(df), dtype=np.int64)
        for c in ("model", "image_id", "scenario_id", "ordering", "seed"):
            code = codes(df[c])
            key = key * (int(code.max(initial=-1)) + 2) + (code + 1)
        if not (len(key) < 2 or bool(np.all(key[1:] > key[:-1]))):  # unsorted: count distinct
            ok = len(np.unique(key)) == len(key)
    if not ok or df is None:
        return read_judgment_records(p)[cols]
    for c in ("scenario_id", "ordering", "seed"):
        df[c] = df[c].astype(np.int64)
    for c in ("p_pos", "p_neg", "p_invalid", "p_undecided"):
        df[c] = df[c].astype(np.float64)
    return df


def write_scores(model_name: str, config: Config, *, source: Source = "auto") -> Path:
    """Score one model's ``judgments.parquet`` into ``data/scores/model=<model>/`` (Hive)."""

    def path(key: str) -> Path:
        p = Path(getattr(config.paths, key))
        return p if p.is_absolute() else project_root() / p

    if (bench := load_benchmark(config.protocol)).tasks and not bench.scenarios:
        return write_task_scores(model_name, path("judgments"), path("scores"))
    judgments_file = path("judgments") / model_name / "judgments.parquet"
    judgments = read_judgments(judgments_file, with_response=str(config.judge.parser) == "official")
    faces = read_table(path("faces") / "faces.parquet", FACES)
    variations = read_table(path("variations") / "variations.parquet", VARIATIONS)
    benchmark = load_benchmark(config.protocol)
    check_demographics(faces, benchmark.demographics, path("faces") / "faces.parquet")
    check_demographics(
        variations, benchmark.demographics, path("variations") / "variations.parquet"
    )
    judge = config.judge
    scores = compute_scores(
        judgments,
        faces,
        variations,
        benchmark,
        source=source,
        k=len(judge.seeds) or 1,
        undecided_warn=float(judge.undecided_warn),
        undecided_max=float(judge.undecided_max),
        parser=str(judge.parser),
        validate_output=False,  # write_model_scores validates what it writes, once
        definitions=str(config.analysis.definitions),
    )
    out = write_model_scores(scores, path("scores"), model_name)
    n_null = int(scores["phi"].isna().sum())
    log.info(
        "%s: %d scores (%d images x scenarios, %d with no valid response) -> %s",
        model_name,
        len(scores),
        scores["image_id"].nunique(),
        n_null,
        out,
    )
    return out


def task_scores(records: pd.DataFrame) -> pd.DataFrame:
    """Per task x group x outcome of a task protocol's records: the answers' ``count`` and
    the exact expected count ``mass`` (the summed outcome distributions; NaN for a free
    number), plus the mean ``value`` of numeric answers."""
    rows = []
    for (tid, group), g in records.groupby(["task_id", "first"], sort=True):
        dists = [json.loads(d) for d in g["dist"] if d]
        outcomes = sorted(set(g["outcome"]) | {o for d in dists for o in d})
        for o in outcomes:
            mass = sum(d.get(o, 0.0) for d in dists) if dists else float("nan")
            sel = g["outcome"] == o
            rows.append({"task_id": int(tid), "group": str(group), "outcome": o,
                         "count": int(sel.sum()), "mass": float(mass), "n": len(g),
                         "mean_value": float(g.loc[sel, "value"].mean())})  # fmt: skip
    return pd.DataFrame(rows)


def write_task_scores(model_name: str, judgments: Path, scores: Path) -> Path:
    """Score one model's task records into ``data/scores/model=<model>/part-0.parquet``."""
    records = read_task_records(judgments / model_name / RECORDS_FILE)
    out = scores / f"model={model_name}"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "part-0.parquet"
    with atomic_path(path) as tmp:
        task_scores(records).to_parquet(tmp, index=False)
    log.info("%s: task scores -> %s", model_name, path)
    return path
