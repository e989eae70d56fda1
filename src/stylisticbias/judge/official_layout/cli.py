"""The command line: ``python -m stylisticbias.judge.official_layout export|import``.

Reads ``params.yaml`` (typed, :func:`~stylisticbias.config.load_config`) for the protocol and
the dataset's paths; bad input is one line and exit status 2. ``import --on-error skip`` logs
every file it could not map (and lists them in ``<out>/skipped.txt``) and exits 1 when there was
one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.official_layout.export import characteristics_of, export_judgments
from stylisticbias.judge.official_layout.importer import (
    ImportSpec,
    clean,
    import_official,
    read_image_map,
)

log = logging.getLogger(__name__)


def _export_cli(args: Any) -> int:
    from stylisticbias.benchmark import load_benchmark
    from stylisticbias.config import judged_models, load_config, project_root
    from stylisticbias.schemas import FACES, JUDGMENT_RECORDS, VARIATIONS, read_table

    config = load_config()
    benchmark = load_benchmark(config.protocol)

    def path(key: str) -> Path:
        p = Path(getattr(config.paths, key))
        return p if p.is_absolute() else project_root() / p

    models = args.model or judged_models(config)
    faces = read_table(path("faces") / "faces.parquet", FACES)
    variations = read_table(path("variations") / "variations.parquet", VARIATIONS)
    chars = characteristics_of(faces, variations, benchmark)
    released = pd.read_parquet(args.released) if args.released else None
    n = 0
    for m in models:
        j = read_table(path("judgments") / m / "judgments.parquet", JUDGMENT_RECORDS)
        n += export_judgments(
            j, benchmark, Path(args.out), characteristics=chars, released=released
        )
    log.info("exported %d file(s) of %d model(s) to %s", n, len(models), args.out)
    return 0


def _import_cli(args: Any) -> int:
    from stylisticbias.benchmark import load_benchmark
    from stylisticbias.config import load_config, project_root
    from stylisticbias.schemas import FACES, VARIATIONS, read_table

    config = load_config()
    benchmark = load_benchmark(config.protocol)
    known = None
    if args.check_images:
        root = project_root()
        f = read_table(root / config.paths.faces / "faces.parquet", FACES)
        v = read_table(root / config.paths.variations / "variations.parquet", VARIATIONS)
        known = frozenset(map(str, f["image_id"])) | frozenset(map(str, v["image_id"]))
    spec = ImportSpec(
        root=Path(args.root),
        out=Path(args.out),
        on_error=args.on_error,
        model=args.model,
        image_map=read_image_map(Path(args.image_map)) if args.image_map else {},
        known_images=known,
        batch_files=args.batch_files,
        choice=args.choice,
    )
    stats = import_official(spec, benchmark)
    if args.clean:
        clean(spec.out)
    if stats.skipped:
        log.error(
            "official import: %d file(s) could not be mapped and were skipped (listed above and "
            "in %s)",
            len(stats.skipped),
            spec.out / "skipped.txt",
        )
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point (``python -m stylisticbias.judge.official_layout``); returns the exit status:
    0, or 2 with one line naming the bad file or setting."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m stylisticbias.judge.official_layout",
        description="judgments in and out in the paper's released code's raw layout",
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export", help="our judgments -> <out>/<model>/<face>/<image>/*.json")
    ex.add_argument("--out", required=True, help="output root")
    ex.add_argument("--model", action="append", help="a judged model (default: all)")
    ex.add_argument(
        "--released", default=None, help="an import's released.parquet: its rows as they were read"
    )
    im = sub.add_parser("import", help="a released-code run -> <out>/judgments.parquet")
    im.add_argument("root", help="directory of model directories (or one model's with --model)")
    im.add_argument("--out", required=True, help="output directory (resumes if present)")
    im.add_argument("--model", default=None, help="ROOT is this model's directory")
    im.add_argument(
        "--on-error",
        choices=["skip", "stop"],
        default="stop",
        help="stop at the first file that cannot be mapped (default), or skip and list them all "
        "(exit status 1)",
    )
    im.add_argument(
        "--choice",
        choices=["parse", "released"],
        default="parse",
        help="a row's choice: our parser on raw_output (default) or the file's chosen_option",
    )
    im.add_argument("--image-map", default=None, help="CSV: official_image (folder),image_id")
    im.add_argument("--check-images", action="store_true", help="refuse images not in the dataset")
    im.add_argument("--batch-files", type=int, default=50_000, help="files per part (resume unit)")
    im.add_argument("--clean", action="store_true", help="remove parts and progress when done")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        return _export_cli(args) if args.cmd == "export" else _import_cli(args)
    except StylisticBiasError as e:
        log.error("%s", e)
        return 2
