"""Where a command may write: every output path checked against the data root and the others.

One rule for every path a command writes, replaces or deletes:

- :func:`stage_output` refuses an output path that is not strictly inside the data root
  (``paths.data``; ``paths.reports``: the project's ``reports/``), or that is, holds or sits
  inside another declared output (:func:`declared_outputs`: the other stages' outputs, the
  render cache, the tracking output, the ``check`` stage's ``data/config`` -- which DVC deletes
  before that stage runs -- and the committed report's folders), an input such as
  ``data/import``, or a folder holding git-tracked files (``paths.reports=reports/bench``
  would replace the benchmarks' ``README.md``; the committed ``reports/`` holds the report
  stages' own tracked outputs); :func:`check_all_outputs` checks every such
  path, at compose time and when any stage script starts;
- :func:`writable_place` is the part every written folder obeys, the data root and ``release
  --out`` included: not the project or an ancestor of it, not its sources, ``.git``, ``.dvc``,
  ``.venv``, ``.cache``, ``mlruns`` or ``multirun``, not a home or system directory, not a file
  or inside one;
- :func:`check_replaceable` lets a command replace a folder only if it created it (its marker
  file is inside) or the folder is empty; :func:`tracked_files` lists what git tracks there;
- :func:`safe_member` refuses a manifest path that leaves the data root (never opened).

How an output is then written (one writer, atomically) is :mod:`stylisticbias.outputs`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

#: project paths no output may be, contain or sit inside
PROTECTED = (
    "conf",
    "src",
    "pipelines",
    "tests",
    "docs",
    ".git",
    ".dvc",
    ".locks",
    ".venv",
    ".cache",
    "mlruns",
)
#: folder names no output may be or sit inside, wherever they are (a virtualenv, a cache such as
#: the paid-for API responses in ``.cache/``, MLflow's file store, version control)
FOREIGN = (".git", ".dvc", ".venv", ".cache", "mlruns")
#: the sweeps' folder: no output may be it (a sweep's job directories lie inside it)
SWEEPS = "multirun"
#: system directories (and everything inside them) no command writes into
SYSTEM_DIRS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/snap",
    "/sys",
    "/usr",
    "/var/cache",
    "/var/lib",
    "/var/log",
    "/var/mail",
    "/var/spool",
    "/Applications",
    "/Library",
    "/System",
    "/private/etc",
    "/private/var/db",
)
#: folders holding one home directory per user
HOMES = ("/home", "/Users")
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
#: what the analyze, calibrate and report stages write inside ``paths.reports`` (the only names
#: they replace there; anything else in that folder is left alone)
REPORT_MEMBERS = (
    "README.md",
    "calibration.json",
    "figures",
    "leaderboard",
    "metrics.json",
    "metrics_all.json",
    "plots",
    "tables",
)
#: the committed reports (dvc.yaml's ``reports/<protocol>/...`` outputs, one folder per
#: protocol): their git-tracked files are the report stages' own outputs
COMMITTED_REPORTS = "reports"
#: the run-wide outputs (dvc.yaml's audit stage, the protocols' report manifests), under the
#: project root and ``paths.data``
AUDIT_OUTPUT = "reports/audit"
MANIFEST_OUTPUT = "report_manifests"


def committed_report(params: Mapping[str, Any]) -> str:
    """``reports/<protocol>``: the committed report folder of a protocol's job (a protocol given
    as a file path counts by its file name)."""
    return f"{COMMITTED_REPORTS}/{Path(str(params.get('protocol'))).stem}"


#: the ``check`` stage's output (dvc.yaml; not persistent: DVC deletes it before the stage runs)
CHECK_OUTPUT = "data/config"


# --------------------------------------------------------------------------- paths
def _resolve(root: Path, raw: str | os.PathLike[str], key: str) -> Path:
    text = str(raw).strip()
    if not text:
        raise StylisticBiasError(f"{key}: empty path")
    p = Path(text).expanduser()
    return (p if p.is_absolute() else Path(root) / p).resolve()


def _file_around(path: Path) -> Path | None:
    """The file ``path`` is or lies inside (its first existing ancestor that is no folder)."""
    for p in (path, *path.parents):
        if p.exists():
            return None if p.is_dir() else p
    return None


def _system_or_home(d: Path) -> str | None:
    """Why ``d`` (outside the project) is no place to write, or None."""
    home = Path.home().resolve()
    if len(d.parts) < 3:
        return f"{d} is a top-level directory"
    if d == home or home.is_relative_to(d):
        return f"{d} is the home directory or holds it"
    if d.is_relative_to(home) and d.relative_to(home).parts[0].startswith("."):
        return f"{d} lies in a hidden folder of the home directory (settings and caches)"
    if d == Path("/root") or any(d.parent == Path(h) for h in HOMES):
        return f"{d} is a home directory"
    for s in SYSTEM_DIRS:
        if d == Path(s) or d.is_relative_to(s):
            return f"{d} is a system directory ({s})"
    return None


def writable_place(
    root: Path,
    raw: str | os.PathLike[str],
    key: str,
    protected: Iterable[str] = PROTECTED,
) -> Path:
    """``raw`` resolved, refused (one line naming ``key``) unless a command may write there.

    Refused: the project root or one of its ancestors; inside the project, one of its
    ``protected`` folders (its sources, ``.git``, ``.venv``, ``.cache``, ``mlruns``, ...) or the
    sweeps' ``multirun/`` itself; outside it, a top-level, home or system directory, a hidden
    folder of the home directory, or a folder named in :data:`FOREIGN` (or inside one); and
    anywhere, an existing file or a path inside one.
    """
    rootr = Path(root).resolve()
    d = _resolve(rootr, raw, key)
    shown = f"{key}={str(raw)!r}"
    if d == rootr or rootr.is_relative_to(d):
        raise StylisticBiasError(
            f"{shown}: resolves to {d}, which holds the whole project; "
            "use a folder of its own such as data"
        )
    inside = d.is_relative_to(rootr)
    parts = d.relative_to(rootr).parts if inside else d.parts
    if inside:
        for name in protected:
            prot = rootr / name
            if d == prot or d.is_relative_to(prot):
                raise StylisticBiasError(
                    f"{shown}: lies in the project's {name}/ folder; use a folder of its own "
                    "such as data"
                )
        if d == rootr / SWEEPS:
            raise StylisticBiasError(
                f"{shown}: is the sweeps' folder {d} (every sweep's jobs); use a folder of "
                "its own such as data"
            )
    foreign = next((p for p in parts if p in FOREIGN), None)
    if foreign is not None:
        raise StylisticBiasError(
            f"{shown}: resolves to {d}, inside a {foreign} folder (a tool's own data); use a "
            "folder of its own"
        )
    why = None if inside else _system_or_home(d)
    if why is not None:
        raise StylisticBiasError(
            f"{shown}: {why}; give a dedicated folder (e.g. /scratch/<you>/stylisticbias) "
            "or keep the default"
        )
    blocker = _file_around(d)
    if blocker is not None:
        raise StylisticBiasError(f"{shown}: {blocker} is a file, not a folder; give a folder path")
    return d


def data_root(root: Path, raw: str | os.PathLike[str], key: str = "paths.data") -> Path:
    """The resolved data root: inside the project (not the project itself, not its sources,
    ``.venv``, ``.cache``, ``mlruns`` or ``multirun``), or a dedicated directory elsewhere (e.g.
    ``/scratch/me/stylisticbias``) that is neither a top-level, home or system directory, nor
    an ancestor of the project (:func:`writable_place`)."""
    return writable_place(root, raw, key)


def reports_roots(root: Path, data: Path) -> tuple[Path, ...]:
    """Where ``paths.reports`` may point (the directory itself or inside it): the project's
    ``reports/``, and ``reports/`` beside a data root of its own (a sweep job's directory)."""
    return tuple(dict.fromkeys((Path(root).resolve() / "reports", data.parent / "reports")))


def tracked_files(root: Path, paths: Iterable[Path]) -> list[Path]:
    """The files git tracks in the project at or under ``paths`` (absolute, resolved; those
    outside ``root`` are not asked about). None where the project is no git checkout or git
    is not installed: then nothing is known to be tracked."""
    rootr = Path(root).resolve()
    rels = sorted(
        {str(p.relative_to(rootr)) for p in paths if p != rootr and p.is_relative_to(rootr)}
    )
    if not rels:
        return []
    cmd = ["git", "--literal-pathspecs", "-C", str(rootr), "ls-files", "-z", "--", *rels]
    try:
        proc = subprocess.run(cmd, capture_output=True, check=False, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    if proc.returncode != 0:
        return []
    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [rootr / n for n in names if n]


def _check_tracked(
    root: Path, outs: Mapping[str, tuple[str, Path]], committed_rel: str = COMMITTED_REPORTS
) -> None:
    """Refuse an output that is or holds a git-tracked file its stage does not own.

    ``outs``: ``{key: (raw value, resolved path)}``. The committed report (``paths.reports``
    at the project's ``reports/``) is exempt: its tracked files are the report stages' own
    outputs (:data:`REPORT_MEMBERS`), and the other tracked files there (``reports/bench/``)
    are names those stages never write.
    """
    rootr = Path(root).resolve()
    committed = rootr / committed_rel
    asked = {
        out: (key, raw)
        for key, (raw, out) in outs.items()
        if not (key == "paths.reports" and out == committed)
    }
    for f in tracked_files(rootr, asked):
        for p, (key, raw) in asked.items():
            if f == p or f.is_relative_to(p):
                raise StylisticBiasError(
                    f"{key}={raw!r}: {'is' if f == p else 'holds'} {f.relative_to(rootr)}, a "
                    "file tracked by git that no stage writes; choose a folder without tracked "
                    f"files (e.g. {_DEFAULTS.get(key, 'data/<name>')})"
                )


#: the default of each output key, named in errors
_DEFAULTS = {f"paths.{k}": f"data/{k}" for k in OUTPUT_KEYS} | {
    "paths.reports": "reports",
    "paths.analysis_cache": "data/analysis",
}


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
    outputs, the render cache, the tracking output, the check stage's ``data/config``, the
    committed report's folders, the inputs such as ``data/import``), nor a file; git-tracked
    files are checked by :func:`stage_output` and :func:`check_all_outputs`.
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
        if other_key.startswith(_REPORT_OUTPUT) and key == "paths.reports" and other.parent == out:
            continue  # the committed report's folders are this output's own
        if out == other or out.is_relative_to(other) or other.is_relative_to(out):
            raise StylisticBiasError(
                f"{key}={str(raw)!r}: overlaps {other_key}={str(other_raw)!r} "
                f"({other}); each stage needs an output of its own"
                + (" and never writes into an input" if other_key in _INPUT_NAMES else "")
            )
    blocker = _file_around(out)
    if blocker is not None:
        raise StylisticBiasError(
            f"{key}={str(raw)!r}: {blocker} is a file, not a folder; give a folder path "
            f"(e.g. {_DEFAULTS.get(key, 'data/<name>')})"
        )
    return out


#: names of the inputs in :func:`declared_outputs` (refused as outputs, never written)
_INPUT_NAMES = ("input data/import", "input generator.source", "input generator.watch_dir")
#: the prefix of the committed report's folders in :func:`declared_outputs`
_REPORT_OUTPUT = "report output "


def declared_outputs(params: Mapping[str, Any]) -> dict[str, str]:
    """Every path a stage writes or deletes, and the inputs no stage may write, from composed
    params: ``{'paths.faces': 'data/faces', ..., 'render cache': 'data/.render-cache',
    'tracking output': 'data/tracking', 'check output': 'data/config', 'report output
    reports/tables': 'reports/tables', ..., 'input data/import': 'data/import', ...}``."""
    paths = dict(params.get("paths") or {})
    out = {f"paths.{k}": str(paths[k]) for k in OUTPUT_KEYS if paths.get(k) is not None}
    data = paths.get("data")
    if data is not None:
        out["render cache"] = str(Path(str(data)) / ".render-cache")
        out["tracking output"] = str(Path(str(data)) / "tracking")
        out["report manifests"] = str(Path(str(data)) / MANIFEST_OUTPUT)
    out["check output"] = CHECK_OUTPUT  # dvc.yaml: DVC deletes it before `check` runs
    out["audit output"] = AUDIT_OUTPUT  # dvc.yaml's audit stage (committed, run-wide)
    committed = committed_report(params)
    for m in REPORT_MEMBERS:  # dvc.yaml's committed report (cache: false, not persistent)
        out[f"{_REPORT_OUTPUT}{committed}/{m}"] = f"{committed}/{m}"
    out["input data/import"] = "data/import"  # the import generator's watched folder (dvc.yaml)
    generator = dict(params.get("generator") or {})
    for k in ("source", "watch_dir"):
        if generator.get(k):
            out[f"input generator.{k}"] = str(generator[k])
    return out


def stage_output(params: Mapping[str, Any], key: str, root: Path, *, tracked: bool = True) -> Path:
    """Resolve and check ``paths.<key>`` of ``params`` against every other declared output and
    (``tracked``) the files git tracks."""
    paths = dict(params.get("paths") or {})
    for k in ("data", key):
        if paths.get(k) is None:
            raise StylisticBiasError(f"paths.{k}: missing; valid keys: {', '.join(sorted(paths))}")
    data = data_root(root, paths["data"])
    out = check_output_path(root, paths[key], f"paths.{key}", data, declared_outputs(params))
    if tracked:
        _check_tracked(root, {f"paths.{key}": (str(paths[key]), out)}, committed_report(params))
    return out


def check_all_outputs(params: Mapping[str, Any], root: Path) -> None:
    """Check every path a stage of ``params`` writes or deletes (at compose time and by every
    stage script before it starts, :func:`stylisticbias.cli.stage`)."""
    paths = dict(params.get("paths") or {})
    if paths.get("data") is None:
        raise StylisticBiasError(f"paths.data: missing; valid keys: {', '.join(sorted(paths))}")
    data_root(root, paths["data"])
    outs = {
        f"paths.{key}": (str(paths[key]), stage_output(params, key, root, tracked=False))
        for key in OUTPUT_KEYS
        if paths.get(key) is not None
    }
    for name in ("render cache", "tracking output"):
        raw = declared_outputs(params)[name]
        outs[name] = (raw, _resolve(Path(root).resolve(), raw, name))
    _check_tracked(root, outs, committed_report(params))


def check_replaceable(path: Path, key: str, raw: str, marker: str) -> None:
    """Refuse (one line naming ``key``) to replace ``path`` unless this command created it.

    A command that replaces a whole folder writes ``marker`` into each folder it creates; it
    may then replace a folder holding that marker, an empty folder or nothing. A file, or a
    non-empty folder without the marker, is refused and left as it is.
    """
    if not path.exists():
        return
    if not path.is_dir():
        raise StylisticBiasError(
            f"{key}={raw!r}: {path} is a file, not a folder; give the path of a new folder"
        )
    if (path / marker).is_file() or not any(path.iterdir()):
        return
    raise StylisticBiasError(
        f"{key}={raw!r}: {path} is a non-empty folder this command did not create (no {marker} "
        "in it); it is never replaced: give a new or empty folder, or delete it yourself"
    )


def safe_member(
    base: Path, rel: str | os.PathLike[str], what: str, root: Path | None = None
) -> Path:
    """``base / rel`` for a path read from a manifest, refused unless it stays inside ``root``.

    ``rel`` is relative to the manifest's directory ``base``; ``root`` is the data root (default:
    ``base`` itself). An absolute path, one that climbs out of ``root`` with ``..``, or a symlink
    that points outside it raises :class:`StylisticBiasError` naming ``what`` (e.g.
    ``faces.parquet row 3``); such a path is never opened. (Imported images referenced in place
    live under ``data/import/`` and are reached as ``../../import/...`` from
    ``data/<protocol>/faces``: inside the data root, ``paths.data``.)
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
