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

import logging
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark, load_benchmark
from stylisticbias.config import project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import family_of
from stylisticbias.outputs import atomic_dir
from stylisticbias.score_store import FILE_NAME, partition_dir, write_model_scores
from stylisticbias.scores_ahead import JudgmentsAhead, judgments_path, stage_path
from stylisticbias.scores_columnar.checks import SCORE_INPUTS, read_judgments_table
from stylisticbias.scores_columnar.images import image_table
from stylisticbias.scores_columnar.partition import (
    check_scores_table,
    demographics_ok,
    read_dataset_tables,
    score_partition,
    undecided_excluded,
    write_partition,
)
from stylisticbias.scores_columnar.reader import reduce_judgments
from stylisticbias.spec import Config

if TYPE_CHECKING:  # pandas, pandera and the task types load only where a function needs them
    import pandas as pd

log = logging.getLogger(__name__)

Source = Literal["auto", "drawn", "exact"]


def _exclude_undecided(phi: pd.DataFrame, warn: float, limit: float) -> pd.DataFrame:
    """Warn about rows with undecided mass above ``warn``; null phi above ``limit``."""
    out = phi.assign(
        undecided_excluded=undecided_excluded(phi["undecided"].to_numpy(np.float64), warn, limit)
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
    import pandas as pd

    from stylisticbias.judge.protocol.tasks.registry import task_type
    from stylisticbias.schemas import SCORES, validate

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
        columns={
            "phi": "_phi_base",
            "phi_low": "_base_low",
            "phi_high": "_base_high",
            "phi_paper": "_base_paper",
            "phi_exact": "_base_exact",
        }
    )
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
SCORE_COLUMNS = SCORE_INPUTS


def read_judgments(path: str | Path, *, with_response: bool = False) -> pd.DataFrame:
    """The scoring columns of a judgments table, checked against the JUDGMENT_RECORDS schema
    (JUDGMENTS for a table written before ``image_sha256`` was kept).

    The checks run on Arrow columns, vectorised
    (:func:`~stylisticbias.scores_columnar.checks.read_judgments_table`): the file's columns and
    types, nulls, value ranges, allowed values and unique (image, model, scenario, ordering,
    seed) keys. Anything they do not pass is handed to the full schema validation
    (:func:`~stylisticbias.schemas.read_table`), whose one-line error names the file, column and
    row -- so a bad table fails exactly as before, and a good one is read in a fraction of the
    time. String keys come back as categoricals.
    """
    from stylisticbias.schemas import read_judgments as read_judgment_records

    cols = [*SCORE_INPUTS, *(("response",) if with_response else ())]
    table = read_judgments_table(path, cols)
    if table is None:
        return read_judgment_records(Path(path))[cols]
    df = table.to_pandas()
    for c in ("scenario_id", "ordering", "seed"):
        df[c] = df[c].astype(np.int64)
    for c in ("p_pos", "p_neg", "p_invalid", "p_undecided"):
        df[c] = df[c].astype(np.float64)
    return df


def write_scores(
    model_name: str,
    config: Config,
    *,
    source: Source = "auto",
    ahead: JudgmentsAhead | None = None,
) -> Path:
    """Score one model's ``judgments.parquet`` into ``data/scores/model=<model>/`` (Hive).

    The paper's reader on drawn rows goes through the columnar engine
    (:mod:`stylisticbias.scores_columnar`: Arrow and numpy, no pandas); every other case, and
    every table that engine declines, through :func:`compute_scores`. Both write the same bytes.
    ``ahead``: the judgments already being read (used only where its file and model are these).
    """

    benchmark = load_benchmark(config.protocol)
    scores = family_of(benchmark).hook("scores")  # its family's scores
    return scores(model_name, config, benchmark, source=source, ahead=ahead)


def stage_dir(config: Config, key: str) -> Path:
    """The resolved folder of ``paths.<key>`` (judgments, scores) of ``config``."""
    return stage_path(getattr(config.paths, key), project_root())


def write_forced_choice_scores(
    model_name: str,
    config: Config,
    benchmark: Benchmark,
    *,
    source: Source = "auto",
    ahead: JudgmentsAhead | None = None,
) -> Path:
    """The scores of a forced-choice protocol: phi per image x scenario (see
    :func:`write_scores`)."""

    def path(key: str) -> Path:
        return stage_dir(config, key)

    judgments_file = judgments_path(path("judgments"), model_name)
    faces_file = path("faces") / "faces.parquet"
    variations_file = path("variations") / "variations.parquet"
    judge = config.judge
    paper = str(judge.parser) == "paper" and str(config.analysis.definitions) == "paper"
    if paper and source != "exact" and benchmark.task == "binary_choice":
        written = write_columnar_scores(
            model_name,
            judgments_file,
            faces_file,
            variations_file,
            path("scores"),
            benchmark,
            undecided_warn=float(judge.undecided_warn),
            undecided_max=float(judge.undecided_max),
            ahead=ahead,
        )
        if written is not None:
            return written
    from stylisticbias.schemas import FACES, VARIATIONS, check_demographics, read_table

    judgments = read_judgments(judgments_file, with_response=str(judge.parser) == "official")
    faces = read_table(faces_file, FACES)
    variations = read_table(variations_file, VARIATIONS)
    check_demographics(faces, benchmark.demographics, faces_file)
    check_demographics(variations, benchmark.demographics, variations_file)
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
    _log_written(
        model_name, len(scores), scores["image_id"].nunique(), int(scores["phi"].isna().sum()), out
    )
    return out


def _log_written(model: str, rows: int, images: int, n_null: int, out: Path) -> None:
    log.info(
        "%s: %d scores (%d images x scenarios, %d with no valid response) -> %s",
        model,
        rows,
        images,
        n_null,
        out,
    )


def write_columnar_scores(
    model: str,
    judgments_file: Path,
    faces_file: Path,
    variations_file: Path,
    score_dir: Path,
    benchmark: Benchmark,
    *,
    undecided_warn: float,
    undecided_max: float,
    ahead: JudgmentsAhead | None = None,
) -> Path | None:
    """Score ``model``'s judgments with the columnar engine (:mod:`stylisticbias.scores_columnar`)
    into its partition of ``score_dir``; ``None`` where the engine declines (nothing written:
    score with :func:`compute_scores`). The paper's reader and definitions, drawn rows.
    ``ahead``: the same judgments already being read, if they are."""
    dataset = read_dataset_tables(faces_file, variations_file)
    if dataset is None or not all(demographics_ok(t, benchmark.demographics) for t in dataset):
        return None
    images = image_table(*dataset)  # while the judgments are still being read
    if images is None:
        return None
    read, cells = ahead.cells(judgments_file, model) if ahead else (False, None)
    if not read:
        cells = reduce_judgments(judgments_file, model)
    if cells is None:
        return None
    scores = score_partition(
        cells,
        images,
        None,
        benchmark,
        undecided_warn=undecided_warn,
        undecided_max=undecided_max,
    )
    if scores is None:
        return None
    final = partition_dir(score_dir, model)
    try:
        with atomic_dir(final) as tmp, ThreadPoolExecutor(max_workers=1) as pool:
            checked = pool.submit(check_scores_table, scores)  # while the file is written
            write_partition(scores, tmp / FILE_NAME)
            if not checked.result():  # nothing published: the pandas engine writes it
                shutil.rmtree(tmp)
                raise _Declined
    except _Declined:
        return None
    images = int(np.count_nonzero(np.bincount(cells.image, minlength=len(cells.images))))
    _log_written(model, scores.num_rows, images, scores.column("phi").null_count, final / FILE_NAME)
    return final / FILE_NAME


class _Declined(Exception):
    """The columnar engine's table failed its output check (the pandas engine scores instead)."""
