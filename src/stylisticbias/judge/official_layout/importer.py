"""A released-code run (millions of raw files, :mod:`.layout`) streamed into our judgments table.

Files are read in sorted directory order, a face directory at a time; rows are written to
Parquet parts of ``batch_files`` files; ``_progress.jsonl`` records every finished part, so an
interrupted import resumes after the last one; memory holds one part. A bad file is one log
line; ``on_error="stop"`` stops at the first.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.official_layout.layout import COLUMNS, ENGINE, EXTRA, SCHEMA
from stylisticbias.judge.protocol.parsing import letter_outcome, parse_response

try:  # a fast JSON reader when present (a dependency of the locked environment)
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover
    _loads = json.loads

log = logging.getLogger(__name__)

OnError = Literal["skip", "stop"]
_ONE_HOT = {"positive": (1.0, 0.0, 0.0), "negative": (0.0, 1.0, 0.0), "invalid": (0.0, 0.0, 1.0)}


@dataclass(frozen=True)
class ImportSpec:
    """What :func:`import_official` reads and how.

    ``root``: the directory holding one directory per model (``model`` set: ``root`` *is* that
    model's directory). ``out``: the output directory (``judgments.parquet`` plus the parts and
    the progress file while it runs). ``image_map``: the released code's image name -> our
    image id (default: the same). ``known_images``: our image ids; a file of another image is bad
    (None: no check). ``batch_files``: files per Parquet part (the resume granularity).
    """

    root: Path
    out: Path
    on_error: OnError = "skip"
    model: str | None = None
    image_map: Mapping[str, str] = field(default_factory=dict)
    known_images: frozenset[str] | None = None
    batch_files: int = 50_000

    def __post_init__(self) -> None:
        if self.on_error not in ("skip", "stop"):
            raise StylisticBiasError(
                f"official import: on_error {self.on_error!r}; valid: skip, stop"
            )
        if self.batch_files < 1:
            raise StylisticBiasError("official import: batch_files must be >= 1")


@dataclass(frozen=True)
class ImportStats:
    """What an import did."""

    files: int  # files read in this run
    rows: int  # rows written in this run
    bad: int  # bad files in this run
    skipped_faces: int  # face directories already imported by an earlier run (resumed)
    seconds: float
    output: Path

    @property
    def files_per_s(self) -> float:
        """Read rate of this run."""
        return self.files / self.seconds if self.seconds > 0 else float("nan")


class _Bad(Exception):
    """One bad file (the message is its one log line, without the path)."""


def _sorted_dirs(path: str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as it:
        return sorted((e for e in it if e.is_dir()), key=lambda e: e.name)


def _sorted_files(path: str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as it:
        return sorted((e for e in it if e.is_file()), key=lambda e: e.name)


class _Reader:
    """Turns one file into one row (column lists), with the protocol's lookups cached."""

    def __init__(self, benchmark: Benchmark, spec: ImportSpec) -> None:
        self.benchmark = benchmark
        self.spec = spec
        self.scenarios = {sc.id: sc for sc in benchmark.scenarios}
        self.orderings = {o.id: o for o in benchmark.orderings}
        self.shown = {
            (s, o): tuple(x.lower() for x in benchmark.options_shown(sc, od))
            for s, sc in self.scenarios.items()
            for o, od in self.orderings.items()
        }
        self.exact = {
            (s, o): tuple(benchmark.options_shown(sc, od))[:2]
            for s, sc in self.scenarios.items()
            for o, od in self.orderings.items()
        }
        self.image_map = spec.image_map
        self.known = spec.known_images
        rules = benchmark.parser

        @functools.lru_cache(maxsize=65536)
        def choice(text: str, ordering: int) -> str:
            return letter_outcome(parse_response(text, rules), self.orderings[ordering])

        self.choice = choice
        self.cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}

    def row(self, model: str, face: str, image: str, name: str, data: bytes) -> None:
        sid, oid, seed = self.name_keys(image, name)
        if sid not in self.scenarios:
            raise _Bad(
                f"unknown scenario {sid}; valid: {min(self.scenarios)}..{max(self.scenarios)}"
            )
        if oid not in self.orderings:
            raise _Bad(f"unknown order {oid}; valid: {sorted(self.orderings)}")
        try:
            doc = _loads(data)
        except ValueError as e:
            raise _Bad(f"bad JSON ({str(e).splitlines()[0][:80]})") from None
        if not isinstance(doc, dict):
            raise _Bad("not a JSON object")
        extra = doc.get(EXTRA)
        if isinstance(extra, dict):  # our export: the row itself
            rec = extra
            if (rec.get("scenario_id"), rec.get("ordering"), rec.get("seed")) != (sid, oid, seed):
                raise _Bad("its stylisticbias row does not match the file name")
        else:
            opts = doc.get("options")
            if not isinstance(opts, dict) or "raw_output" not in doc:
                raise _Bad("no 'options' object or no 'raw_output'")
            got = (opts.get("a"), opts.get("b"))
            if got != self.exact[(sid, oid)]:  # fast path: the protocol's own spelling
                want = self.shown[(sid, oid)]
                if (str(got[0]).lower(), str(got[1]).lower()) != want[:2]:
                    raise _Bad(
                        f"options {got} do not match scenario {sid} order {oid} of the "
                        f"protocol {want[:2]}"
                    )
            text = doc["raw_output"]
            text = None if text is None else str(text)
            choice = self.choice(text, oid) if text is not None else "invalid"
            image_id = self.image_map.get(image, image)
            if self.known is not None and image_id not in self.known:
                raise _Bad(f"image {image_id!r} is not in the dataset")
            p = _ONE_HOT[choice]
            c = self.cols
            c["image_id"].append(image_id)
            c["face_id"].append(face)
            c["model"].append(model)
            c["engine"].append(ENGINE)
            c["decoding"].append("generate")
            c["scenario_id"].append(sid)
            c["ordering"].append(oid)
            c["seed"].append(seed)
            c["response"].append(text)
            c["choice"].append(choice)
            c["p_pos"].append(p[0])
            c["p_neg"].append(p[1])
            c["p_invalid"].append(p[2])
            c["p_undecided"].append(0.0)
            c["simulated"].append(False)
            return
        known = self.known
        if known is not None and rec.get("image_id") not in known:
            raise _Bad(f"image {rec.get('image_id')!r} is not in the dataset")
        try:
            vals = [rec[c] for c in COLUMNS]
        except KeyError as e:
            raise _Bad(f"its stylisticbias row lacks {e}") from None
        for lst, v in zip(self.cols.values(), vals):
            lst.append(v)

    @staticmethod
    def name_keys(image: str, name: str) -> tuple[int, int, int]:
        """(scenario, order, seed) of ``<image>_scenario{S}_order{O}_seed{K}.json``."""
        parts = name[:-5].rsplit("_", 3) if name.endswith(".json") else ()
        if (
            len(parts) == 4
            and parts[0] == image
            and parts[1][:8] == "scenario"
            and parts[2][:5] == "order"
            and parts[3][:4] == "seed"
            and parts[1][8:].isdigit()
            and parts[2][5:].isdigit()
            and parts[3][4:].isdigit()
        ):
            return int(parts[1][8:]), int(parts[2][5:]), int(parts[3][4:])
        raise _Bad("not a file of the layout <image>_scenario{S}_order{O}_seed{K}.json")

    def take(self) -> pa.Table:
        t = pa.table({c: pa.array(v, type=COLUMNS[c]) for c, v in self.cols.items()})
        self.cols = {c: [] for c in COLUMNS}
        return t


def _faces(spec: ImportSpec) -> Iterator[tuple[str, str]]:
    """(model, face directory) in sorted order."""
    if spec.model is not None:
        models = [(spec.model, str(spec.root))]
    else:
        models = [(e.name, e.path) for e in _sorted_dirs(str(spec.root))]
    for model, mpath in models:
        for f in _sorted_dirs(mpath):
            yield model, f.path


def _read(path: str) -> bytes:
    """A whole file (unbuffered: fewer calls than ``open().read()`` for small files)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, 1 << 16)
        if len(data) == 1 << 16:  # a large file: read the rest
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
        return data
    finally:
        os.close(fd)


def _progress(out: Path) -> tuple[set[tuple[str, str]], list[str]]:
    done: set[tuple[str, str]] = set()
    parts: list[str] = []
    p = out / "_progress.jsonl"
    if p.exists():
        for line in p.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                break  # a torn last line: the part it names is redone
            parts.append(rec["part"])
            done.update((m, f) for m, f in rec["faces"])
    return done, parts


def import_official(spec: ImportSpec, benchmark: Benchmark) -> ImportStats:
    """Stream the released code's raw files under ``spec.root`` into
    ``spec.out/judgments.parquet`` (see the module docstring); resumable."""
    if not spec.root.is_dir():
        raise StylisticBiasError(f"official import: {spec.root} is not a directory")
    out = spec.out
    out.mkdir(parents=True, exist_ok=True)
    done, parts = _progress(out)
    for p in out.glob("part-*.parquet"):  # parts of an interrupted run that no line names
        if p.name not in parts:
            p.unlink()
    reader = _Reader(benchmark, spec)
    t0 = time.perf_counter()
    files = rows = bad = skipped = 0
    pending: list[tuple[str, str]] = []
    in_part = 0

    def flush() -> None:
        nonlocal in_part, rows
        name = f"part-{len(parts):06d}.parquet"
        t = reader.take()
        pq.write_table(t, out / name)
        rows += t.num_rows
        with (out / "_progress.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"part": name, "faces": pending}) + "\n")
        parts.append(name)
        pending.clear()
        in_part = 0

    for model, fpath in _faces(spec):
        face = os.path.basename(fpath)
        if (model, face) in done:
            skipped += 1
            continue
        for img in _sorted_dirs(fpath):
            for f in _sorted_files(img.path):
                files += 1
                in_part += 1
                try:
                    data = _read(f.path)
                    reader.row(model, face, img.name, f.name, data)
                except (_Bad, OSError) as e:
                    bad += 1
                    line = f"official import: {f.path}: {e}"
                    if spec.on_error == "stop":
                        raise StylisticBiasError(line + " (on_error stop)") from None
                    log.warning("%s", line)
        pending.append((model, face))
        if in_part >= spec.batch_files:
            flush()
    if pending:
        flush()
    _merge(out, parts)
    secs = time.perf_counter() - t0
    stats = ImportStats(files, rows, bad, skipped, secs, out / "judgments.parquet")
    log.info(
        "official import: %d file(s) in %.1fs (%.0f/s), %d row(s), %d bad, %d face(s) resumed "
        "-> %s",
        files,
        secs,
        stats.files_per_s,
        rows,
        bad,
        skipped,
        stats.output,
    )
    return stats


def _merge(out: Path, parts: list[str]) -> None:
    """Concatenate the parts into ``judgments.parquet``, one part in memory at a time."""
    tmp = out / "judgments.parquet.tmp"
    with pq.ParquetWriter(tmp, SCHEMA) as w:
        for name in parts:
            w.write_table(pq.read_table(out / name, schema=SCHEMA))
    os.replace(tmp, out / "judgments.parquet")


def clean(out: Path) -> None:
    """Remove the parts and the progress file of a finished import (keeps judgments.parquet)."""
    for p in out.glob("part-*.parquet"):
        p.unlink()
    (out / "_progress.jsonl").unlink(missing_ok=True)


def read_image_map(path: Path) -> dict[str, str]:
    """A CSV with columns ``official_image`` and ``image_id``."""
    df = pd.read_csv(path, dtype=str)
    need = {"official_image", "image_id"}
    if not need <= set(df.columns):
        raise StylisticBiasError(
            f"{path}: columns {sorted(df.columns)}; need official_image and image_id"
        )
    return dict(zip(df["official_image"], df["image_id"]))
