"""Judgments and dataset tables for the columnar engine's tests, and the two engines on them.

The reference is :func:`stylisticbias.scores.compute_scores` + ``write_model_scores`` (the
stage's implementation before the columnar engine, and its fallback) on random judgments with
variations and base faces: undecided mass (some cells excluded), invalid and null choices, the
exact rows of a ``sampled`` run beside the drawn ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from stylisticbias.benchmark import Benchmark
from stylisticbias.score_store import write_model_scores
from stylisticbias.scores import compute_scores
from stylisticbias.scores_columnar.partition import (
    check_scores_table,
    score_partition,
    write_partition,
)
from stylisticbias.scores_columnar.reader import reduce_judgments

DEMO = {"age": "young", "gender": "male", "ethnicity": "Asian", "body_type": "thin"}
EDITS = [("hair", "hair_color", "blonde"), ("eyewear", "glasses", "sunglasses")]


def dataset(n_faces: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    faces = pd.DataFrame(
        [{"image_id": f"F{i:03d}--base", "face_id": f"F{i:03d}", **DEMO} for i in range(n_faces)]
    )
    var = pd.DataFrame(
        [
            {
                "image_id": f"F{i:03d}--{a}--{v}",
                "face_id": f"F{i:03d}",
                "category": c,
                "attribute": a,
                "value": v,
                **DEMO,
            }
            for i in range(n_faces)
            for c, a, v in EDITS
        ]
    )
    return faces, var


def judgments(
    rng: np.random.Generator,
    images: list[str],
    *,
    model: str = "m1",
    exact_rows: bool = False,
    sort_images: bool = True,
) -> pd.DataFrame:
    """Rows as the judge stage writes them: sorted by (image, scenario, ordering, seed)
    (``sort_images=False``: the images in the order given, each one run of rows)."""
    rows = []
    for img in sorted(images) if sort_images else images:
        for s in (1, 7, 25):
            for o in (1, 2, 3, 4):
                for seed in (0, 1, 2, 3) if exact_rows else (1, 2, 3):
                    p = rng.dirichlet([2, 2, 0.3, 0.05])
                    if rng.random() < 0.1:  # a cell with much undecided mass
                        p = np.array([0.4, 0.4, 0.0, 0.2])
                    c = rng.choice(
                        ["positive", "negative", "invalid", None], p=[0.45, 0.4, 0.1, 0.05]
                    )
                    rows.append(
                        {
                            "image_id": img,
                            "face_id": img.split("--")[0],
                            "model": model,
                            "engine": "simulated",
                            "decoding": "simulated",
                            "scenario_id": s,
                            "ordering": o,
                            "seed": seed,
                            "response": "(a)",
                            "choice": None if seed == 0 else c,
                            "p_pos": p[0],
                            "p_neg": p[1],
                            "p_invalid": p[2],
                            "p_undecided": p[3],
                            "simulated": True,
                        }
                    )
    return pd.DataFrame(rows)


def pandas_engine(j: pd.DataFrame, faces, var, benchmark: Benchmark, out: Path) -> bytes:
    scores = compute_scores(j, faces, var, benchmark, undecided_max=0.1)
    return write_model_scores(scores, out, str(j["model"].iloc[0])).read_bytes()


def columnar(path: Path, faces, var, benchmark: Benchmark, out: Path) -> bytes | None:
    cells = reduce_judgments(path, "m1")
    if cells is None:
        return None
    table = score_partition(
        cells,
        pa.Table.from_pandas(faces),
        pa.Table.from_pandas(var),
        benchmark,
        undecided_max=0.1,
    )
    assert table is not None and check_scores_table(table)
    write_partition(table, out)
    return out.read_bytes()


def write(
    j: pd.DataFrame, path: Path, row_group_size: int | None = None, statistics: bool = True
) -> Path:
    pq.write_table(
        pa.Table.from_pandas(j, preserve_index=False),
        path,
        row_group_size=row_group_size,
        # without: statistics only of the columns the engine does not read
        write_statistics=statistics or ["face_id", "engine", "response"],
    )
    return path
