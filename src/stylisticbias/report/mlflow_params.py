"""The params every report run logs to MLflow: what differs between the members of a sweep.

The composed configuration is logged as written (nested sections flattened to dotted keys with
their YAML types), plus the name of the ``conf/generator`` option the generator section was
composed from.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from stylisticbias.errors import StylisticBiasError
from stylisticbias.report.inputs import ReportInputs

log = logging.getLogger(__name__)


#: ``analysis`` settings that do not change a number (display labels, parallelism): not logged
ANALYSIS_NOT_LOGGED = ("group_abbrev", "workers")


def _differences(option: Mapping[str, Any], section: Mapping[str, Any]) -> int:
    """How many leaves of ``option`` ``section`` overrides (or lacks)."""
    n = 0
    for k, v in option.items():
        if isinstance(v, Mapping):
            sub = section.get(k)
            n += _differences(v, sub if isinstance(sub, Mapping) else {})
        elif k not in section or section[k] != v:
            n += 1
    return n


def generator_option(section: Mapping[str, Any]) -> str:
    """The ``conf/generator/<name>.yaml`` option the ``generator`` section was composed from.

    ``params.yaml`` keeps the option's content, not its name: the name is the section's
    ``name`` key if it has one, else the option with the same ``_target_`` whose settings the
    section overrides least (ties: the first name in sort order). A section that matches no
    option (a generator outside ``conf/``) is named by its class.
    """
    from omegaconf.errors import OmegaConfBaseException

    from stylisticbias.config import available, load_group_option

    if section.get("name"):
        return str(section["name"])
    target = section.get("_target_")
    best: tuple[int, str] | None = None
    for name in available("generator"):
        try:
            option = load_group_option("generator", name)
        except (StylisticBiasError, OmegaConfBaseException, OSError):
            continue
        option.pop("name", None)  # added by load_group_option
        if option.get("_target_") != target:
            continue
        diff = _differences(option, section)
        if best is None or diff < best[0]:
            best = (diff, name)
    if best is None:
        log.warning("generator %s matches no conf/generator option; logged by class", target)
        return str(target or "?").rsplit(".", 1)[-1]
    return best[1]


def run_params(params: Mapping[str, Any], inputs: ReportInputs) -> dict[str, Any]:
    """The params every report run logs (what differs between sweep members).

    Nested settings (``analysis``) are given as mappings: :func:`stylisticbias.tracking.
    log_params` flattens them to dotted keys with their YAML types (``analysis.bootstrap.
    n_resamples`` = ``1000``, ``analysis.wilcoxon_correction`` = ``false``).
    """
    s = inputs.settings
    judge = params.get("judge") or {}
    analysis = {
        k: v for k, v in (params.get("analysis") or {}).items() if k not in ANALYSIS_NOT_LOGGED
    }
    return {
        "seed": params.get("seed"),
        "faces.n": (params.get("faces") or {}).get("n"),
        "models": [m.name for m in s.models],
        "judge.orderings": list(s.orderings),
        "judge.seeds": judge.get("seeds"),
        "judge.temperature": judge.get("temperature"),
        "engine": s.engine,
        "decoding": s.decoding,
        "generator": generator_option(params.get("generator") or {}),
        "n_faces": s.n_faces,
        "n_images": s.n_images,
        "n_scenarios": s.n_scenarios,
        "analysis": analysis,
    }
