"""Offline batch files of the ``openai`` engine: export the requests, import the answers.

``python -m stylisticbias.judge.batch export MODEL OUT.jsonl [HYDRA_OVERRIDE ...]``
    writes the requests judging the run's images with MODEL still needs (those not in the
    response cache; a task protocol's: every task prompt of its faces and pairs -- the
    protocol family's ``requests`` hook) as Batch-API JSONL lines
    ``{custom_id: <cache key>, method, url, body}``, images inline as data URLs -- for
    ``vllm run-batch -i OUT.jsonl -o ANSWERS.jsonl`` or a provider's console. Its size is
    logged before it is written; ``--max-lines`` / ``--max-bytes`` split it into
    ``OUT.partNNN.jsonl`` files within a provider's limits.
``python -m stylisticbias.judge.batch import MODEL ANSWERS.jsonl [HYDRA_OVERRIDE ...]``
    reads an output file (``{custom_id, response: {status_code, body}}`` per line, vLLM's and
    the Batch API's shape) into the response cache; the judge stage then sends nothing for
    those requests.

``exact`` needs one export/import per round of partial answers (each round's requests depend
on the last round's answers): repeat until ``export`` reports 0 requests. ``--params FILE``
reads a params.yaml view instead of composing ``conf/``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Exported:
    """What :func:`export_requests` wrote."""

    requests: int
    bytes: int
    files: list[Path]


def forced_choice_requests(
    config: Any, benchmark: Any, model_cfg: Mapping[str, Any]
) -> tuple[Any, list[Any]]:
    """The model's engine and the API requests judging the run's images still needs under a
    forced-choice protocol (the ``requests`` hook of its family)."""
    from stylisticbias.judge.engines.factory import make_engine
    from stylisticbias.judge.items import judge_items
    from stylisticbias.judge.protocol.settings import JudgeSettings

    judge_cfg = asdict(config.judge)
    settings = JudgeSettings.from_config(judge_cfg, benchmark.ordering_ids)
    judge_cfg["orderings"] = list(settings.orderings)
    engine = make_engine(model_cfg, judge_cfg, benchmark)
    return engine, list(engine.missing_requests(judge_items(config, benchmark)))


def export_requests(
    engine: Any,
    requests: Sequence[Any],
    path: str | Path,
    *,
    max_lines: int | None = None,
    max_bytes: int | None = None,
) -> Exported:
    """Write ``requests`` (what ``engine`` still needs: the family's ``requests`` hook) as batch
    JSONL at ``path`` (or ``path``'s ``.partNNN.jsonl`` files when the limits split it); the
    size is logged first."""
    from stylisticbias.judge.engines.openai.batch import PartWriter, batch_line, line_url
    from stylisticbias.judge.engines.openai.spec import BatchSpec

    path = Path(path)
    url = line_url(engine.endpoint)
    reqs = list(requests)
    sizes = [len(batch_line(r, url)) for r in reqs]
    total = sum(sizes)
    lines_cap = max_lines or max(1, len(reqs))
    bytes_cap = max_bytes or max(1, total)
    split = max_lines is not None or max_bytes is not None
    where = f"{path.stem}.partNNN.jsonl" if split else path
    log.info(
        "export %s: %d request(s), %.1f MB (images inline) -> %s",
        engine.model_name,
        len(reqs),
        total / 1e6,
        where,
    )
    if not reqs:
        return Exported(0, 0, [])
    files: list[Path] = []

    def new_path() -> Path:
        if not split:
            return path
        return path.with_name(f"{path.stem}.part{len(files) + 1:03d}{path.suffix or '.jsonl'}")

    def done(part: Any) -> None:
        files.append(part.path)

    spec = BatchSpec(enabled=True, max_lines=lines_cap, max_bytes=bytes_cap)
    writer = PartWriter(new_path, url, spec, done)
    for r in reqs:
        writer.add(r)
    writer.close()
    for f in files:
        log.info("wrote %s (%.1f MB)", f, f.stat().st_size / 1e6)
    return Exported(len(reqs), total, files)


def import_file(engine: Any, requests: Sequence[Any], path: str | Path) -> Any:
    """Read a batch output file into ``engine``'s response cache; lines about requests this run
    does not need (another model's, or already cached) are skipped and counted."""
    from stylisticbias.judge.engines.openai.batch import import_lines

    path = Path(path)
    if not path.is_file():
        raise StylisticBiasError(f"{path}: no such batch output file")
    known = {r.key: (r.kind, r.image_sha256) for r in requests}
    with open(path, encoding="utf-8") as fh:
        res = import_lines(fh, engine.cache, engine.endpoint, known, source=str(path))
    log.info(
        "import %s: %d line(s) stored, %d failed (asked again by the stage), %d not "
        "needed by this run (skipped); %d request(s) still missing",
        engine.model_name,
        res.done,
        len(res.failed),
        res.unknown,
        len(known) - res.done,
    )
    return res


def _engine(
    model: str, overrides: Sequence[str], params_file: str | None, protocol: str | None = None
) -> tuple[Any, list]:
    """The model's engine and the requests its protocol's judging still needs (the family's
    ``requests`` hook: forced-choice images, or task prompts of faces and pairs). ``protocol``:
    that protocol's job of the experiment (``params_file``, default ``params.yaml``; without it
    the experiment's first protocol)."""
    from stylisticbias.benchmark import load_benchmark
    from stylisticbias.config import compose, load_params
    from stylisticbias.family import family_of
    from stylisticbias.judge.run import model_section
    from stylisticbias.spec.parse import config_from_params

    if protocol:
        from stylisticbias.config import load_yaml_file, project_root
        from stylisticbias.protocols import job_params

        path = params_file or str(project_root() / "params.yaml")
        config = config_from_params(job_params(load_yaml_file(path), protocol, path), path)
    elif params_file:
        config = config_from_params(load_params(params_file), params_file)
    else:
        config = config_from_params(compose([f"model=[{model}]", *overrides]))
    model_cfg = model_section(config, model)
    if (model_cfg.get("engine") or {}).get("name") != "openai":
        raise StylisticBiasError(
            f"model {model!r} does not use the openai engine; valid: a "
            "model file with '/engine@engine: openai'"
        )
    benchmark = load_benchmark(config.protocol)
    family = family_of(benchmark)
    if "requests" in family.lacks:
        raise StylisticBiasError(
            f"protocol {benchmark.name!r} (family {family.name}) is not judged: "
            f"{family.lacks['requests']}"
        )
    return family.hook("requests")(config, benchmark, model_cfg)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m stylisticbias.judge.batch", description=__doc__.splitlines()[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export", help="write the requests still needed as batch JSONL")
    ex.add_argument("model")
    ex.add_argument("path")
    ex.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. judge.seeds=[1]")
    ex.add_argument("--max-lines", type=int, default=None)
    ex.add_argument("--max-bytes", type=int, default=None)
    ex.add_argument("--params", default=None, help="a params.yaml view instead of conf/")
    ex.add_argument("--protocol", default=None, help="that protocol's job of --params")
    im = sub.add_parser("import", help="read a batch output file into the response cache")
    im.add_argument("model")
    im.add_argument("path")
    im.add_argument("overrides", nargs="*")
    im.add_argument("--params", default=None)
    im.add_argument("--protocol", default=None)
    args = ap.parse_args(argv)
    from stylisticbias.cli import setup_logging

    setup_logging()
    try:
        engine, requests = _engine(args.model, args.overrides, args.params, args.protocol)
        if args.cmd == "export":
            export_requests(
                engine, requests, args.path, max_lines=args.max_lines, max_bytes=args.max_bytes
            )
        else:
            import_file(engine, requests, args.path)
    except StylisticBiasError as exc:
        log.error("error: %s", exc)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
