"""Hydra/OmegaConf composition errors as one line: the key, the file (or override), the choices."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

from stylisticbias.spec.engines import ENGINE_SPECS, LightningSpec, TransportSpec
from stylisticbias.spec.generators import (
    GENERATOR_SPECS,
    DiffusersPipelineSpec,
    FullBodySpec,
)
from stylisticbias.spec.models import MODEL_SPECS
from stylisticbias.spec.root import Config
from stylisticbias.spec.sections import (
    AnalysisSpec,
    AnalysisTablesSpec,
    BootstrapSpec,
    FacesSpec,
    GallerySpec,
    GenerationSpec,
    JudgeSpec,
    PathsSpec,
    SweepSpec,
    TrackingSpec,
    VariationsSpec,
)

_CLASSES: dict[str, type] = {
    c.__name__: c
    for c in (
        Config,
        PathsSpec,
        FacesSpec,
        GenerationSpec,
        GallerySpec,
        VariationsSpec,
        JudgeSpec,
        TrackingSpec,
        SweepSpec,
        AnalysisSpec,
        BootstrapSpec,
        AnalysisTablesSpec,
        LightningSpec,
        TransportSpec,
        DiffusersPipelineSpec,
        FullBodySpec,
        *ENGINE_SPECS.values(),
        *MODEL_SPECS.values(),
        *GENERATOR_SPECS.values(),
    )
}


def valid_keys(class_name: str) -> list[str]:
    """Field names of the spec class called ``class_name`` (empty if unknown)."""
    cls = _CLASSES.get(class_name)
    return [f.name for f in dataclasses.fields(cls)] if cls else []


def options(group: str, conf_dir: Path | None) -> list[str]:
    """Option names of ``conf/<group>/`` (none when the conf directory is not known)."""
    if conf_dir is None:
        return []
    return sorted(p.stem for p in (conf_dir / group).glob("*.yaml"))


def _chain(exc: BaseException) -> str:
    parts, seen = [], set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        parts.append(str(cur))
        cur = cur.__cause__ or cur.__context__
    return "\n".join(parts)


def explain(exc: BaseException, overrides: Sequence[str] = (), conf_dir: Path | None = None) -> str:
    """One line saying which key is wrong, where it came from, and what is valid."""
    text = _chain(exc)
    where = ""
    m = re.search(r"In '([^']+)'", text)
    if m:
        where = f"conf/{m.group(1)}.yaml"
    ov = re.search(r"(?:Could not override '([^']+)'|Error merging override (\S+))", text)
    if ov:
        key = ov.group(1) or ov.group(2).split("=", 1)[0]
        full = next((o for o in overrides if o.lstrip("+~").split("=", 1)[0] == key), key)
        where = f"override {full}"
    missing = re.search(r"Could not (?:find|load) '([^']+)'", text)
    if missing:
        avail = re.search(r"Available options in '([^']+)':\s*\n((?:\s+\S.*\n?)+)", text)
        group = missing.group(1).rsplit("/", 1)[0]
        lines = avail.group(2).splitlines() if avail else options(group, conf_dir)
        opts = ", ".join(a.strip() for a in lines if a.strip())
        return f"{where or 'conf/'}: no config {missing.group(1)!r}" + (
            f"; valid {group} options: {opts}" if opts else ""
        )
    key = re.search(r"Key '([^']+)' not in '(\w+)'", text)
    full_key = re.search(r"full_key: (\S+)", text)
    if key:
        fk = full_key.group(1) if full_key else key.group(1)
        parent = fk.rsplit(".", 1)[0] if "." in fk else "the top level"
        keys = valid_keys(key.group(2))
        return f"{where or 'conf/'}: unknown key {fk!r}; valid keys of {parent}: " + ", ".join(keys)
    value = re.search(
        r"(Value '.*?' (?:of type '\w+' )?(?:could not be converted to|is not a valid) [^\n]*)",
        text,
    )
    if value:
        fk = f" ({full_key.group(1)})" if full_key else ""
        return f"{where or 'conf/'}: {value.group(1).rstrip('.')}{fk}"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    fk = f" (key {full_key.group(1)})" if full_key else ""
    return f"{where or 'conf/'}: {first}{fk}"
