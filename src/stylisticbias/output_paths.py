"""Where a stage may write: every output path checked against the data root and the others.

- :func:`stage_output` refuses an output path that is not strictly inside the data root
  (``paths.data``; ``paths.reports``: the project's ``reports/``), or overlaps another stage's
  output, the render cache, the tracking output or an input such as ``data/import``
  (``paths.faces=data`` would otherwise hold -- and replace -- the judgments and the render
  cache); the data root itself may be neither the project, its sources, nor a system-wide
  directory; :func:`check_all_outputs` checks every such path, at compose time and when any
  stage script starts;
- :func:`safe_member` refuses a manifest path that leaves the data root (never opened).

How an output is then written (one writer, atomically) is :mod:`stylisticbias.outputs`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

#: project paths no stage output may be, contain or sit inside
PROTECTED = ("conf", "src", "pipelines", "tests", "docs", ".git", ".dvc", ".locks")
#: ``params['paths']`` keys that are stage outputs (``data`` is their common parent, not one):
#: every path a stage writes or deletes is one of them, inside one of them, the render cache
#: or the tracking output (:func:`declared_outputs`)
OUTPUT_KEYS = (
    "faces",
    "variations",
    "judgments",
    "scores",
    "qa",
    "annotations",
    "soda",
    "analysis_cache",
    "reports",
)


# --------------------------------------------------------------------------- paths
def _resolve(root: Path, raw: str | os.PathLike[str], key: str) -> Path:
    text = str(raw).strip()
    if not text:
        raise StylisticBiasError(f"{key}: empty path")
    p = Path(text).expanduser()
    return (p if p.is_absolute() else Path(root) / p).resolve()


def data_root(root: Path, raw: str | os.PathLike[str], key: str = "paths.data") -> Path:
    """The resolved data root: inside the project (not the project itself, not its sources),
    or a dedicated directory elsewhere (e.g. ``/scratch/me/stylisticbias``) that is neither a
    top-level directory, the home directory, nor an ancestor of the project."""
    rootr = Path(root).resolve()
    d = _resolve(rootr, raw, key)
    if d == rootr or rootr.is_relative_to(d):
        raise StylisticBiasError(
            f"{key}={str(raw)!r}: resolves to {d}, which holds the whole project; "
            "use a directory of its own such as data"
        )
    if d.is_relative_to(rootr):
        for name in PROTECTED:
            prot = rootr / name
            if d == prot or d.is_relative_to(prot):
                raise StylisticBiasError(
                    f"{key}={str(raw)!r}: lies in the project's {name}/ directory; use data"
                )
        return d
    home = Path.home().resolve()
    if len(d.parts) < 3 or d == home or home.is_relative_to(d):
        raise StylisticBiasError(
            f"{key}={str(raw)!r}: {d} is a system-wide directory; give a dedicated "
            "directory (e.g. /scratch/<you>/stylisticbias) or keep the default data"
        )
    return d


def reports_roots(root: Path, data: Path) -> tuple[Path, ...]:
    """Where ``paths.reports`` may point (the directory itself or inside it): the project's
    ``reports/``, and ``reports/`` beside a data root of its own (a sweep job's directory)."""
    return tuple(dict.fromkeys((Path(root).resolve() / "reports", data.parent / "reports")))


def check_output_path(
    root: Path,
    raw: str | os.PathLike[str],
    key: str,
    data: Path,
    others: Mapping[str, str | os.PathLike[str]],
) -> Path:
    """The resolved output path of ``key``, refused when writing it could destroy other data.

    One rule for every path a stage writes or deletes: a data output must lie strictly inside
    the data root ``data`` (so ``paths.faces=data`` or an absolute directory elsewhere is
    refused); ``paths.reports`` inside a reports root (:func:`reports_roots`) or strictly inside
    the data root. No output may be, hold or sit inside any of ``others`` (the other stages'
    outputs, the render cache, the tracking output, the inputs such as ``data/import``).
    """
    rootr = Path(root).resolve()
    out = _resolve(rootr, raw, key)
    inside_data = out != data and out.is_relative_to(data)
    if key == "paths.reports":
        allowed = reports_roots(rootr, data)
        if not inside_data and not any(out.is_relative_to(r) for r in allowed):
            raise StylisticBiasError(
                f"{key}={str(raw)!r}: resolves to {out}, outside the reports root "
                f"{allowed[0]} and the data root {data}; reports must lie in one of them "
                "(e.g. reports)"
            )
    elif not inside_data:
        raise StylisticBiasError(
            f"{key}={str(raw)!r}: resolves to {out}, which is "
            + ("the data root itself" if out == data else "outside the data root")
            + f" {data}; stage outputs must lie inside it (e.g. {data.name}/faces)"
        )
    for other_key, other_raw in others.items():
        if other_key == key or other_raw is None:
            continue
        other = _resolve(rootr, other_raw, other_key)
        if out == other or out.is_relative_to(other) or other.is_relative_to(out):
            raise StylisticBiasError(
                f"{key}={str(raw)!r}: overlaps {other_key}={str(other_raw)!r} "
                f"({other}); each stage needs an output of its own"
                + (" and never writes into an input" if other_key in _INPUT_NAMES else "")
            )
    return out


#: names of the inputs in :func:`declared_outputs` (refused as outputs, never written)
_INPUT_NAMES = ("input data/import", "input generator.source", "input generator.watch_dir")


def declared_outputs(params: Mapping[str, Any]) -> dict[str, str]:
    """Every path a stage writes or deletes, and the inputs no stage may write, from composed
    params: ``{'paths.faces': 'data/faces', ..., 'render cache': 'data/.render-cache',
    'tracking output': 'data/tracking', 'input data/import': 'data/import', ...}``."""
    paths = dict(params.get("paths") or {})
    out = {f"paths.{k}": str(paths[k]) for k in OUTPUT_KEYS if paths.get(k) is not None}
    data = paths.get("data")
    if data is not None:
        out["render cache"] = str(Path(str(data)) / ".render-cache")
        out["tracking output"] = str(Path(str(data)) / "tracking")
    out["input data/import"] = "data/import"  # the import generator's watched folder (dvc.yaml)
    generator = dict(params.get("generator") or {})
    for k in ("source", "watch_dir"):
        if generator.get(k):
            out[f"input generator.{k}"] = str(generator[k])
    return out


def stage_output(params: Mapping[str, Any], key: str, root: Path) -> Path:
    """Resolve and check ``paths.<key>`` of ``params`` against every other declared output."""
    paths = dict(params.get("paths") or {})
    for k in ("data", key):
        if paths.get(k) is None:
            raise StylisticBiasError(f"paths.{k}: missing; valid keys: {', '.join(sorted(paths))}")
    data = data_root(root, paths["data"])
    return check_output_path(root, paths[key], f"paths.{key}", data, declared_outputs(params))


def check_all_outputs(params: Mapping[str, Any], root: Path) -> None:
    """Check every path a stage of ``params`` writes or deletes (at compose time and by every
    stage script before it starts, :func:`stylisticbias.cli.stage`)."""
    paths = dict(params.get("paths") or {})
    if paths.get("data") is None:
        raise StylisticBiasError(f"paths.data: missing; valid keys: {', '.join(sorted(paths))}")
    data_root(root, paths["data"])
    for key in OUTPUT_KEYS:
        if paths.get(key) is not None:
            stage_output(params, key, root)


def safe_member(
    base: Path, rel: str | os.PathLike[str], what: str, root: Path | None = None
) -> Path:
    """``base / rel`` for a path read from a manifest, refused unless it stays inside ``root``.

    ``rel`` is relative to the manifest's directory ``base``; ``root`` is the data root (default:
    ``base`` itself). An absolute path, one that climbs out of ``root`` with ``..``, or a symlink
    that points outside it raises :class:`StylisticBiasError` naming ``what`` (e.g.
    ``faces.parquet row 3``); such a path is never opened. (Imported images referenced in place
    live under ``data/import/`` and are reached as ``../import/...``: inside the data root.)
    """
    text = str(rel)
    p = Path(text)
    limit = Path(root if root is not None else base).resolve()
    if not text or p.is_absolute():
        raise StylisticBiasError(
            f"{what}: image path {text!r} is absolute or empty; manifest paths must be relative "
            f"to the manifest's directory"
        )
    full = (Path(base).resolve() / p).resolve()
    if not full.is_relative_to(limit):
        raise StylisticBiasError(
            f"{what}: image path {text!r} leaves the data root {limit} (resolves to {full}); "
            "refused, not read"
        )
    return full
