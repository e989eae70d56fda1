"""A released-code run (millions of raw files, :mod:`.layout`) streamed into our judgments table.

Every file is mapped back: the scenario *index* of its name to our scenario id (the protocol's
``released.scenario_order``), its ``options`` to our poles (checked against the released
spelling, ``Emotionally stable`` for our ``Stable``), its folder to our image id (the folder
named like the face is the base, ``<face>-base``; any other is the variation its
``characteristics.variation`` names, ``<face>-<slug>``, the value read in the released
spelling; ``image_map`` overrides). What the row cannot give back (the folder names, the
timestamp, the characteristics, the prompt and ``chosen_option`` as written) goes to
``released.parquet`` beside ``judgments.parquet``, so an export writes the same files again.

Files are read in sorted directory order, a face directory at a time; rows are written to
Parquet parts of ``batch_files`` files; ``_progress.jsonl`` records every finished part, so an
interrupted import resumes after the last one; memory holds one part. A file that cannot be
mapped stops the import with one line naming it (``on_error="stop"``, the default); with
``on_error="skip"`` each is one log line, all are listed in ``skipped.txt`` and in
:attr:`ImportStats.skipped`, and the command line exits 1.
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
from stylisticbias.judge.official_layout.layout import (
    COLUMNS,
    ENGINE,
    EXTRA,
    KEYS,
    META,
    META_SCHEMA,
    SCHEMA,
    UNKNOWN,
    options,
    released_of,
)
from stylisticbias.judge.protocol.parsing import letter_outcome, parse_response

try:  # a fast JSON reader when present (a dependency of the locked environment)
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover
    _loads = json.loads

log = logging.getLogger(__name__)

OnError = Literal["skip", "stop"]
#: where an imported row's choice comes from: our parser on ``raw_output`` (``parse``) or the
#: file's ``chosen_option`` as the released code decided it (``released``)
ChoiceFrom = Literal["parse", "released"]
_ONE_HOT = {"positive": (1.0, 0.0, 0.0), "negative": (0.0, 1.0, 0.0), "invalid": (0.0, 0.0, 1.0)}


@dataclass(frozen=True)
class ImportSpec:
    """What :func:`import_official` reads and how.

    ``root``: the directory holding one directory per model (``model`` set: ``root`` *is* that
    model's directory). ``out``: the output directory (``judgments.parquet`` plus the parts and
    the progress file while it runs). ``image_map``: the released code's image folder -> our
    image id (default: the base face's folder -> ``<face>-base``, a variation's ->
    ``<face>-<slug>`` of the variation its characteristics name). ``known_images``: our image
    ids; a file of another image is bad (None: no check). ``batch_files``: files per Parquet
    part (the resume granularity). ``choice``: :data:`ChoiceFrom`.
    """

    root: Path
    out: Path
    on_error: OnError = "stop"
    model: str | None = None
    image_map: Mapping[str, str] = field(default_factory=dict)
    known_images: frozenset[str] | None = None
    batch_files: int = 50_000
    choice: ChoiceFrom = "parse"

    def __post_init__(self) -> None:
        if self.choice not in ("parse", "released"):
            raise StylisticBiasError(
                f"official import: choice {self.choice!r}; valid: parse, released"
            )
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
    skipped: tuple[str, ...] = ()  # the bad files of this run (on_error skip), one line each

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
        self.rel = released_of(benchmark)
        self.scenarios = {sc.id: sc for sc in benchmark.scenarios}
        self.orderings = {o.id: o for o in benchmark.orderings}
        self.exact = {
            (s, o): options(benchmark, sc, od)
            for s, sc in self.scenarios.items()
            for o, od in self.orderings.items()
        }
        self.shown = {k: tuple(x.lower() for x in v) for k, v in self.exact.items()}
        # (feature key, value) in the released spelling (and ours), case-folded -> our slug
        self.slugs: dict[tuple[str, str], str] = {}
        for v in benchmark.variations:
            for spelt in (self.rel.value(v.key, v.value), v.value):
                self.slugs.setdefault((v.key.casefold(), spelt.casefold()), v.slug)
        self.image_map = spec.image_map
        self.known = spec.known_images
        rules = benchmark.parser

        @functools.lru_cache(maxsize=65536)
        def choice(text: str, ordering: int) -> str:
            return letter_outcome(parse_response(text, rules), self.orderings[ordering])

        self.choice = choice
        self.cols: dict[str, list[Any]] = {c: [] for c in (*COLUMNS, *META)}

    def image_id(self, face: str, image: str, doc: Mapping[str, Any]) -> str:
        """Our image id of the released image folder ``image`` of face folder ``face``."""
        if image in self.image_map:
            return self.image_map[image]
        if image == face:
            return f"{face}-base"
        chars = doc.get("characteristics")
        var = chars.get("variation") if isinstance(chars, dict) else None
        if not isinstance(var, dict) or len(var) != 1:
            raise _Bad(
                "cannot map its image folder: not the face's folder (its base) and "
                f"characteristics.variation is {var!r}, not one key: value"
            )
        ((key, value),) = var.items()
        slug = self.slugs.get((str(key).strip().casefold(), str(value).strip().casefold()))
        if slug is None:
            raise _Bad(f"variation {key}:{value} is not in the protocol {self.benchmark.name}")
        return f"{face}-{slug}"

    def row(self, model: str, face: str, image: str, name: str, data: bytes) -> None:
        index, oid, seed = self.name_keys(image, name)
        sid = self.rel.scenario_at(index)
        if sid is None:
            raise _Bad(f"unknown scenario index {index}; valid: 1..{len(self.rel.scenario_order)}")
        if oid not in self.orderings:
            raise _Bad(f"unknown order {oid}; valid: {sorted(self.orderings)}")
        try:
            doc = _loads(data)
        except ValueError as e:
            raise _Bad(f"bad JSON ({str(e).splitlines()[0][:80]})") from None
        if not isinstance(doc, dict):
            raise _Bad("not a JSON object")
        opts = doc.get("options")
        if not isinstance(opts, dict) or "raw_output" not in doc:
            raise _Bad("no 'options' object or no 'raw_output'")
        got = (opts.get("a"), opts.get("b"))
        if got != self.exact[(sid, oid)]:  # fast path: the released spelling
            want = self.shown[(sid, oid)]
            if (str(got[0]).lower(), str(got[1]).lower()) != want:
                raise _Bad(
                    f"options {got} do not match scenario index {index} (our {sid}) order {oid} "
                    f"of the protocol {self.exact[(sid, oid)]}"
                )
        extra = doc.get(EXTRA)
        if isinstance(extra, dict):  # our export: the row itself
            rec = extra
            if (rec.get("scenario_id"), rec.get("ordering"), rec.get("seed")) != (sid, oid, seed):
                raise _Bad("its stylisticbias row does not match the file name")
            if self.known is not None and rec.get("image_id") not in self.known:
                raise _Bad(f"image {rec.get('image_id')!r} is not in the dataset")
            try:
                vals = [rec[c] for c in COLUMNS]
            except KeyError as e:
                raise _Bad(f"its stylisticbias row lacks {e}") from None
        else:
            text = doc["raw_output"]
            text = None if text is None else str(text)
            image_id = self.image_id(face, image, doc)
            if self.known is not None and image_id not in self.known:
                raise _Bad(f"image {image_id!r} is not in the dataset")
            if self.spec.choice == "released":
                chosen = str(doc.get("chosen_option") or "").strip().lower()
                a, b = self.shown[(sid, oid)]
                if chosen not in (a, b, UNKNOWN):
                    raise _Bad(
                        f"chosen_option {doc.get('chosen_option')!r} is neither option nor "
                        f"{UNKNOWN!r}"
                    )
                od = self.orderings[oid]
                letter = {a: "a", b: "b"}.get(chosen)
                choice = od.pole_of(letter) if letter else "invalid"
            else:
                choice = self.choice(text, oid) if text is not None else "invalid"
            p = _ONE_HOT[choice]
            vals = [
                image_id,
                face,
                model,
                ENGINE,
                "generate",
                sid,
                oid,
                seed,
                text,
                choice,
                p[0],
                p[1],
                p[2],
                0.0,
                False,
            ]
        chars = doc.get("characteristics")
        meta = [
            face,
            image,
            _text(doc.get("face_image_name")),
            json.dumps(chars if chars is not None else {}, ensure_ascii=False),
            _text(doc.get("timestamp")),
            _text(doc.get("prompt")),
            _text(doc.get("chosen_option")),
        ]
        c = self.cols
        for col, v in zip(COLUMNS, vals):
            c[col].append(v)
        for col, v in zip(META, meta):
            c[col].append(v)

    @staticmethod
    def name_keys(image: str, name: str) -> tuple[int, int, int]:
        """(scenario index, order, seed) of ``<image>_scenario{S}_order{O}_seed{K}.json``."""
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
        types = {**COLUMNS, **META}
        t = pa.table({c: pa.array(v, type=types[c]) for c, v in self.cols.items()})
        self.cols = {c: [] for c in types}
        return t


def _text(v: Any) -> str | None:
    return None if v is None else str(v)


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


def _progress(out: Path) -> tuple[set[tuple[str, str]], list[str], list[str]]:
    """Faces done, parts written and files skipped by earlier runs (``_progress.jsonl``)."""
    done: set[tuple[str, str]] = set()
    parts: list[str] = []
    bad: list[str] = []
    p = out / "_progress.jsonl"
    if p.exists():
        for line in p.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                break  # a torn last line: the part it names is redone
            parts.append(rec["part"])
            done.update((m, f) for m, f in rec["faces"])
            bad.extend(rec.get("skipped", []))
    return done, parts, bad


def import_official(spec: ImportSpec, benchmark: Benchmark) -> ImportStats:
    """Stream the released code's raw files under ``spec.root`` into
    ``spec.out/judgments.parquet`` (see the module docstring); resumable."""
    if not spec.root.is_dir():
        raise StylisticBiasError(f"official import: {spec.root} is not a directory")
    out = spec.out
    out.mkdir(parents=True, exist_ok=True)
    done, parts, earlier = _progress(out)
    for p in out.glob("part-*.parquet"):  # parts of an interrupted run that no line names
        if p.name not in parts:
            p.unlink()
    reader = _Reader(benchmark, spec)
    t0 = time.perf_counter()
    files = rows = bad = skipped = 0
    skipped_files: list[str] = []  # this run's
    part_skipped: list[str] = []  # the current part's
    pending: list[tuple[str, str]] = []
    in_part = 0

    def flush() -> None:
        nonlocal in_part, rows
        name = f"part-{len(parts):06d}.parquet"
        t = reader.take()
        pq.write_table(t, out / name)
        rows += t.num_rows
        del t
        pa.default_memory_pool().release_unused()
        with (out / "_progress.jsonl").open("a", encoding="utf-8") as fh:
            line = {"part": name, "faces": pending, "skipped": part_skipped}
            fh.write(json.dumps(line) + "\n")
        parts.append(name)
        pending.clear()
        part_skipped.clear()
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
                        raise StylisticBiasError(
                            line + " (stopped; --on-error skip lists every such file)"
                        ) from None
                    log.warning("%s", line)
                    skipped_files.append(f"{f.path}: {e}")
                    part_skipped.append(f"{f.path}: {e}")
        pending.append((model, face))
        if in_part >= spec.batch_files:
            flush()
    if pending:
        flush()
    _merge(out, parts)
    if earlier or skipped_files:  # every run's, so a resumed import still lists them all
        text = "\n".join(earlier + skipped_files) + "\n"
        (out / "skipped.txt").write_text(text, encoding="utf-8")
    else:
        (out / "skipped.txt").unlink(missing_ok=True)
    secs = time.perf_counter() - t0
    stats = ImportStats(
        files, rows, bad, skipped, secs, out / "judgments.parquet", tuple(skipped_files)
    )
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


#: rows per record batch when the parts are concatenated (memory stays flat in the run's size)
MERGE_ROWS = 10_000


def _merge(out: Path, parts: list[str]) -> None:
    """Concatenate the parts into ``judgments.parquet`` and ``released.parquet`` (the fields
    a row cannot give back, :data:`.layout.META`), one part in memory at a time."""
    tmp, tmp_meta = out / "judgments.parquet.tmp", out / "released.parquet.tmp"
    with pq.ParquetWriter(tmp, SCHEMA) as w, pq.ParquetWriter(tmp_meta, META_SCHEMA) as wm:
        for name in parts:
            for batch in pq.ParquetFile(out / name).iter_batches(batch_size=MERGE_ROWS):
                t = pa.Table.from_batches([batch])
                w.write_table(t.select(list(COLUMNS)).cast(SCHEMA))
                wm.write_table(t.select([*KEYS, *META]).cast(META_SCHEMA))
            pa.default_memory_pool().release_unused()
    os.replace(tmp, out / "judgments.parquet")
    os.replace(tmp_meta, out / "released.parquet")


def clean(out: Path) -> None:
    """Remove the parts and the progress file of a finished import (keeps judgments.parquet
    and released.parquet)."""
    for p in out.glob("part-*.parquet"):
        p.unlink()
    (out / "_progress.jsonl").unlink(missing_ok=True)


def read_image_map(path: Path) -> dict[str, str]:
    """A CSV with columns ``official_image`` (a released image folder) and ``image_id``."""
    df = pd.read_csv(path, dtype=str)
    need = {"official_image", "image_id"}
    if not need <= set(df.columns):
        raise StylisticBiasError(
            f"{path}: columns {sorted(df.columns)}; need official_image and image_id"
        )
    return dict(zip(df["official_image"], df["image_id"]))
