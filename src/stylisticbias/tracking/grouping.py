"""Which runs belong together: a sweep's (or a DVC experiment queue's) parent run in MLflow.

A run logged inside ``dvc exp run`` (queued or not: DVC sets ``DVC_EXP_NAME`` and
``DVC_EXP_BASELINE_REV`` for every experiment it runs) belongs to the sweep of its baseline
commit, ``dvc-exp:<baseline>``; one parent run per sweep (tagged ``stylisticbias.sweep_id``,
``stylisticbias.run_kind=sweep``) holds the judge, model and comparison runs of all its
experiments, each named after its experiment (``judge/simulated-weak @exp-3f2a1``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

SWEEP_ENV = "STYLISTICBIAS_SWEEP_ID"
TAG_SWEEP = "stylisticbias.sweep_id"
TAG_KIND = "stylisticbias.run_kind"
#: the DVC experiment a run was logged in (its name, as ``dvc exp show`` lists it)
TAG_EXP_NAME = "dvc.exp_name"
EXP_NAME_ENV = "DVC_EXP_NAME"
EXP_BASELINE_ENV = "DVC_EXP_BASELINE_REV"


def dvc_exp_name(env: Mapping[str, str] | None = None) -> str | None:
    """The name of the DVC experiment being run (``dvc exp run``), or None outside one."""
    env = os.environ if env is None else env
    return env.get(EXP_NAME_ENV) or None


def sweep_id(env: Mapping[str, str] | None = None) -> str | None:
    """The id of the sweep this run belongs to, or None outside a sweep.

    ``$STYLISTICBIAS_SWEEP_ID`` if set; inside a DVC experiment ``dvc-exp:<baseline[:12]>``;
    inside a Hydra multirun ``hydra:<sweep dir>``.
    """
    env = os.environ if env is None else env
    if env.get(SWEEP_ENV):
        return str(env[SWEEP_ENV])
    if env.get(EXP_NAME_ENV) and env.get(EXP_BASELINE_ENV):
        return f"dvc-exp:{env[EXP_BASELINE_ENV][:12]}"
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
            return f"hydra:{HydraConfig.get().sweep.dir}"
    except (ImportError, ValueError):  # hydra not installed / not configured
        pass
    return None


def find_or_create_parent(experiment_id: str, sweep: str, tags: Mapping[str, str]) -> str:
    """The parent run of ``sweep`` (the oldest one tagged with it), created if there is none.

    MLflow must point at the store already (:func:`stylisticbias.tracking.ensure_experiment`).
    """
    import mlflow

    filt = f"tags.`{TAG_SWEEP}` = '{sweep}' and tags.`{TAG_KIND}` = 'sweep'"

    def oldest() -> str | None:
        runs = mlflow.search_runs(
            [experiment_id], filt, order_by=["attributes.start_time ASC"], output_format="list"
        )
        return runs[0].info.run_id if runs else None

    found = oldest()
    if found:
        return found
    client = mlflow.MlflowClient()
    run = client.create_run(
        experiment_id, run_name=f"sweep {sweep}", tags={**tags, TAG_SWEEP: sweep, TAG_KIND: "sweep"}
    )
    client.set_terminated(run.info.run_id)
    winner = oldest() or run.info.run_id  # two workers racing: both settle on the oldest
    if winner != run.info.run_id:
        client.delete_run(run.info.run_id)
    return winner
