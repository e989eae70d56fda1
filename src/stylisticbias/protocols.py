"""The protocols an experiment runs, each as a job of its own.

An experiment chooses its protocols with the ``protocols`` group (``conf/protocols/<name>.yaml``;
``protocols=[stylisticbias, reflect]`` on the command line, ``-S 'protocols=[reflect]'`` under
``dvc exp run``): the judged-model protocols land under ``protocols``, the protocols that audit
an image generator (SODA) under ``generator_protocols``. Each runs as a **job**: the whole
configuration with ``protocol`` set to it and ``protocol_settings.<name>`` merged on top
(:func:`stylisticbias.config.compose` composes it), so its outputs are its own
(``paths.*`` name ``${protocol}``: ``data/<protocol>/...``, ``reports/<protocol>/``).

The pipeline's first stage writes each job's configuration to
``data/config/<protocol>/resolved.yaml`` (:func:`job_params_path`); a stage of that protocol
(``python pipelines/faces.py --protocol reflect``) reads it (:func:`use_job`). The audit and the
MLflow runs read every job (:func:`job_configs`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stylisticbias.config import (
    PARAMS_ENV,
    RESOLVED,
    VIEW_ONLY,
    choices,
    compose,
    is_view,
    load_config,
    project_root,
    user_values,
)
from stylisticbias.errors import StylisticBiasError

if TYPE_CHECKING:
    from stylisticbias.spec import Config

#: where the first stage writes a job's whole configuration
JOB_PARAMS = "data/config/{protocol}/resolved.yaml"


def chosen(params: Mapping[str, Any] | Config) -> list[str]:
    """Every protocol a configuration runs: the judged ones, then the generator audits."""
    if isinstance(params, Mapping):
        return [*(params.get("protocols") or {}), *(params.get("generator_protocols") or {})]
    return [*params.protocols, *params.generator_protocols]


def judged(params: Mapping[str, Any] | Config) -> list[str]:
    """The protocols whose stages judge the configuration's models (not SODA's)."""
    if isinstance(params, Mapping):
        return [str(p) for p in params.get("protocols") or {}]
    return list(params.protocols)


def job_params(
    view: Mapping[str, Any], protocol: str, where: str = "params.yaml"
) -> dict[str, Any]:
    """The whole configuration of ``protocol``'s job in the experiment ``view`` stands for."""
    if protocol not in chosen(view):
        raise StylisticBiasError(
            f"{where}: protocol {protocol!r} is not run by this experiment; run: "
            f"{', '.join(chosen(view)) or '(none)'}"
        )
    values = {k: v for k, v in view.items() if k not in VIEW_ONLY}
    after = user_values(view, values)  # what a user set applies to every protocol
    values["protocol"] = protocol
    return compose(choices(view), values=values, where=where, after=after)


def jobs(view: Mapping[str, Any], where: str = "params.yaml") -> dict[str, dict[str, Any]]:
    """Every job of an experiment: ``{protocol: its whole configuration}``, in order.

    ``view`` is an experiment's view (``params.yaml``); a whole configuration stands for the one
    job of its ``protocol`` (several protocols need a view: ``configure compose`` writes one)."""
    if not is_view(view):
        names = chosen(view)
        if len(names) > 1:
            raise StylisticBiasError(
                f"{where}: a whole configuration of protocol {view.get('protocol')!r} that names "
                f"{len(names)} protocols; compose the experiment's view instead "
                "(python -m stylisticbias.configure compose)"
            )
        return {str(view.get("protocol")): dict(view)}
    return {p: job_params(view, p, where) for p in chosen(view)}


def job_params_path(protocol: str, root: Path | None = None) -> Path:
    """``data/config/<protocol>/resolved.yaml`` (under ``root``, default the project root)."""
    return (root or project_root()) / JOB_PARAMS.format(protocol=protocol)


def use_job(protocol: str) -> None:
    """Make this process's stages read ``protocol``'s job (``$STYLISTICBIAS_PARAMS``), unless a
    sweep job already points them at its own file. A protocol the first stage wrote no job for is
    one line naming the ones it did."""
    if os.environ.get(PARAMS_ENV):
        return
    path = job_params_path(protocol)
    if not path.is_file():
        written = (project_root() / RESOLVED.parent).glob("*/resolved.yaml")
        have = sorted(p.parent.name for p in written)
        raise StylisticBiasError(
            f"--protocol {protocol}: {path.relative_to(project_root())} not found (run the check "
            f"stage first: dvc repro check); jobs written: {', '.join(have) or '(none)'}"
        )
    os.environ[PARAMS_ENV] = str(path)


def job_configs(config: Config | None = None) -> dict[str, Config]:
    """Every job of the run's configuration (default: :func:`load_config`), typed:
    ``{protocol: Config}`` read from ``data/config/<protocol>/resolved.yaml``."""
    config = config or load_config()
    return {p: load_config(job_params_path(p)) for p in chosen(config)}
