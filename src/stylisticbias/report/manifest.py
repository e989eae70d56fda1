"""A protocol's finished report as one small file the run-wide stages depend on.

DVC refuses a stage whose dependency holds its own output, so the audit (``reports/audit/``)
cannot depend on ``reports/``. Instead each protocol's last stage (``report@<protocol>``, or
``soda@soda`` for the generator audit) writes a manifest, ``data/report_manifests/<protocol>.json``
(every file of its report folder and its SHA-256), and the audit and track stages depend on the
folder of manifests: any change to any protocol's report changes its manifest, and adding or
removing a protocol adds or removes one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from stylisticbias.outputs import atomic_write_json

#: the manifests' folder, under ``paths.data``
MANIFESTS = "report_manifests"


def manifest_path(data_root: str | Path, protocol: str) -> Path:
    """``<data>/report_manifests/<protocol>.json``."""
    return Path(data_root) / MANIFESTS / f"{protocol}.json"


def folder_manifest(folder: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every regular file under ``folder`` (sorted; none if it is
    missing)."""
    out: dict[str, str] = {}
    if not folder.is_dir():
        return out
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h = hashlib.sha256()
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        out[f.relative_to(folder).as_posix()] = h.hexdigest()
    return out


def write_manifest(data_root: str | Path, protocol: str, folder: Path) -> Path:
    """Write ``protocol``'s manifest of ``folder`` (its report); returns its path."""
    path = manifest_path(data_root, protocol)
    atomic_write_json(path, {"protocol": protocol, "files": folder_manifest(folder)})
    return path
