"""What one sweep job runs: its composed config in, its own ``params.yaml`` out.

Pure functions (no Hydra runtime, no MLflow): selecting the job's judged model, the dataset key
that lets jobs share one dataset build, rewriting ``paths.*`` into a directory, and the checks
of a sweep's overrides (``faces.n`` swept needs the nested sampler).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stylisticbias.config import project_root, subtree
from stylisticbias.errors import StylisticBiasError

#: keys of ``conf/sweep.yaml`` that are the sweep's own, not the pipeline's
SWEEP_KEYS = ("model", "sweep")
#: params the ``faces`` and ``variations`` stages depend on (dvc.yaml; a test checks): jobs that
#: agree on all of them share one dataset build
DATASET_KEYS = (
    "seed",
    "faces",
    "generator",
    "variations",
    "gallery",
    "protocol",  # the faces/variations stages depend on conf/benchmark/<protocol>.yaml
)
#: ``(base, target)`` paths the dataset stages write relative to each other, keyed by the relative
#: path only: the variations gallery links the QA stage's badges (``<paths.qa>/gallery_qa.js``)
#: by a link relative to ``paths.variations``. Every job of a sweep has its own absolute paths
#: (:data:`JOB_PATHS`, in its own directory) but the same link, so they share one build, which
#: :func:`dataset_params` lays out with that same link.
DATASET_LINKS = (("paths.variations", "paths.qa"),)
#: the sampler whose faces at N are the first N of a larger N (``stylisticbias.sampling``)
NESTED_SAMPLER = "paper_nested"
#: ``paths.*`` of a job, relative to its directory
JOB_PATHS = {
    "data": "data",
    "faces": "data/faces",
    "variations": "data/variations",
    "judgments": "data/judgments",
    "scores": "data/scores",
    "analysis_cache": "data/analysis",
    "reports": "reports",
    "qa": "data/qa",
    "annotations": "data/annotations",
    "soda": "data/soda",
    "audit": "audit",  # the job's own (its track stage reads it): never the project's
}
_UNSAFE = re.compile(r"[^0-9A-Za-z_.,=+\-\[\]]+")


@dataclass(frozen=True)
class JobSpec:
    """One job of a sweep, resolved: where it writes and what it runs."""

    name: str  #: the swept values, e.g. ``model=simulated-weak judge.seeds=[2]``
    job_dir: Path
    params: dict[str, Any]  #: the job's params.yaml content (paths inside ``job_dir``)
    dataset_key: str
    models: tuple[str, ...]

    @property
    def params_file(self) -> Path:
        """The job's own ``params.yaml``."""
        return self.job_dir / "params.yaml"

    @property
    def digest(self) -> str:
        """Hash of the job's params: a finished job with the same digest is reused."""
        return _digest(self.params)


def judged_models(params: Mapping[str, Any]) -> list[str]:
    """The judged models' names: keys of a top-level ``models`` mapping (composed model group),
    else the ``judge.models`` list."""
    models = params.get("models")
    if isinstance(models, Mapping):
        return [str(m) for m in models]
    return [str(m) for m in ((params.get("judge") or {}).get("models") or [])]


def select_model(params: Mapping[str, Any]) -> dict[str, Any]:
    """The pipeline's params with the sweep's ``model`` (one ``conf/model`` option, composed by
    ``conf/sweep.yaml``) as the only judged model, and the sweep's own keys removed."""
    out = {k: copy.deepcopy(v) for k, v in params.items() if k not in SWEEP_KEYS}
    model = params.get("model")
    if model is None:  # the model group composes into `models` (conf/model/*.yaml)
        return out
    if not isinstance(model, Mapping) or not model.get("name"):
        raise StylisticBiasError(
            f"model={model!r}: expected one option of conf/model/*.yaml, e.g. model=simulated-weak"
        )
    name = str(model["name"])
    if isinstance(out.get("models"), Mapping):  # composed model group (one entry per model)
        out["models"] = {name: dict(model)}
    else:
        out.setdefault("judge", {})["models"] = [name]
    return out


def _digest(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def relative_link(params: Mapping[str, Any], base: str, target: str) -> str | None:
    """Where ``target`` (a dotted path setting) lies relative to ``base``, as a POSIX path
    (``../qa`` for ``paths.variations`` -> ``paths.qa`` in every job); None where one is unset.
    Relative settings are taken from the project root, as the stages take them."""
    where, what = subtree(params, base), subtree(params, target)
    if where is None or what is None:
        return None
    root = project_root()
    return Path(os.path.relpath(root / str(what), root / str(where))).as_posix()


def dataset_key(params: Mapping[str, Any]) -> str:
    """12 hex digits identifying the dataset ``params`` build: :data:`DATASET_KEYS` and the
    relative links of :data:`DATASET_LINKS` (never an absolute job path)."""
    values = {k: subtree(params, k) for k in DATASET_KEYS}
    for base, target in DATASET_LINKS:
        values[f"{target} from {base}"] = relative_link(params, base, target)
    return _digest(values)[:12]


def with_paths(params: Mapping[str, Any], base: Path, layout: Mapping[str, str]) -> dict[str, Any]:
    """``params`` with ``paths.<key>`` set to ``base / layout[key]`` (absolute)."""
    out = copy.deepcopy(dict(params))
    paths = dict(out.get("paths") or {})
    for key, rel in layout.items():
        paths[key] = str((base / rel).resolve())
    out["paths"] = paths
    return out


def dataset_params(params: Mapping[str, Any], datasets: Path, key: str) -> dict[str, Any]:
    """Params that build dataset ``key`` in ``datasets/<key>/`` (data root ``datasets``, so the
    render cache ``datasets/.render-cache`` is shared: a larger nested N renders only its new
    faces). Judgments/scores paths point at unused directories (every output must be set).
    ``paths.qa`` (never written by the dataset stages) lies where the job's lies relative to its
    ``paths.variations``, so the build's gallery links the QA badges as the job's own would."""
    link = relative_link(params, "paths.variations", "paths.qa")
    layout = {
        "data": ".",
        "faces": f"{key}/faces",
        "variations": f"{key}/variations",
        "judgments": f"{key}/.unused-judgments",
        "scores": f"{key}/.unused-scores",
        "analysis_cache": f"{key}/.unused-analysis",
        "reports": f"{key}/.unused-reports",
        "qa": posixpath.normpath(f"{key}/variations/{link}") if link else f"{key}/.unused-qa",
        "annotations": f"{key}/.unused-annotations",
        "soda": f"{key}/.unused-soda",
        "audit": f"{key}/.unused-audit",
    }
    return with_paths(params, datasets, layout)


def job_name(task_overrides: Sequence[str], swept: Sequence[str]) -> str:
    """The job's run name: its overrides of swept keys (when none is known: all its overrides
    but ``tracking.*``)."""
    keys = set(swept)
    chosen = [o for o in task_overrides if override_key(o) in keys] if keys else []
    if not chosen:
        chosen = [o for o in task_overrides if not override_key(o).startswith("tracking")]
    return " ".join(chosen) or "defaults"


def override_key(override: str) -> str:
    """``model`` for ``model=x``, ``faces.n`` for ``+faces.n=3`` / ``~faces.n``."""
    return override.split("=", 1)[0].lstrip("+~")


def safe_name(text: str, limit: int = 80) -> str:
    """A file/metric-safe form of ``text`` (long ones shortened with a hash suffix)."""
    name = _UNSAFE.sub("_", text).strip("_") or "sweep"
    if len(name) > limit:
        name = f"{name[: limit - 13]}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    return name


def metric_key(name: str) -> str:
    """A job name as an MLflow metric prefix: ``model=a judge.seeds=[2]`` ->
    ``model:a judge.seeds:2`` (MLflow allows letters, digits, ``_-. /:`` only)."""
    text = name.replace("=", ":").replace(",", "_")
    return re.sub(r"[^\w.\- /:]", "", text).strip() or "job"


@dataclass(frozen=True)
class SweepPlan:
    """What the sweep's command line says, checked before any job starts."""

    overrides: tuple[str, ...]  #: the pipeline overrides (no ``hydra.*``), as typed
    swept: tuple[str, ...]  #: keys with several values
    sampler: str | None  #: the faces sampler every job must use (None: as configured)

    @property
    def name(self) -> str:
        """The parent run's name: the sweep's overrides (not where it is tracked)."""
        shown = [o for o in self.overrides if not override_key(o).startswith("tracking")]
        return " ".join(shown) or "defaults"


def plan_sweep(overrides: Sequence[str]) -> SweepPlan:
    """Parse the sweep's overrides: which keys are swept, and the sampler a ``faces.n`` sweep
    needs (:data:`NESTED_SAMPLER`; an explicit other sampler is refused in one line)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    task = [o for o in overrides if not override_key(o).startswith(("hydra.", "hydra/"))]
    task = [o for o in task if override_key(o) != "hydra"]
    try:
        parsed = OverridesParser.create().parse_overrides(task)
    except HydraException as exc:
        first = str(exc).strip().splitlines()[0]
        raise StylisticBiasError(f"bad override: {first}") from None
    swept = tuple(o.get_key_element().lstrip("+~") for o in parsed if o.is_sweep_override())
    sampler = None
    if "faces.n" in swept:
        given = [o.value() for o in parsed if o.get_key_element().lstrip("+") == "faces.sampler"]
        if given and given[-1] != NESTED_SAMPLER:
            raise StylisticBiasError(
                f"faces.n is swept with faces.sampler={given[-1]}: a larger N must extend a "
                f"smaller one; use faces.sampler={NESTED_SAMPLER} (or leave it out)"
            )
        sampler = NESTED_SAMPLER
    return SweepPlan(overrides=tuple(task), swept=swept, sampler=sampler)


def job_params(params: Mapping[str, Any], sampler: str | None) -> dict[str, Any]:
    """The composed job config as pipeline params: one judged model, the plan's sampler."""
    out = select_model(params)
    if sampler is not None:
        out.setdefault("faces", {})["sampler"] = sampler
    return out


def check(params: Mapping[str, Any]) -> None:
    """The project's checks of a composed configuration (one line naming the bad key)."""
    from stylisticbias.validate import validate_params

    validate_params(dict(params))
    if not judged_models(params):
        raise StylisticBiasError("no judged model: give model=<name> (conf/model/*.yaml)")
