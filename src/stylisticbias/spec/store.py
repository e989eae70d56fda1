"""Register the specs in Hydra's ConfigStore (the schemas ``conf/`` is composed against).

Called by the ``hydra_plugins.stylisticbias_schemas`` plugin, which Hydra imports whenever it
composes (ours, DVC's ``dvc exp run``, a sweep), and by :mod:`stylisticbias.config`.

Registered: ``stylisticbias_schema`` (the root, :class:`~stylisticbias.spec.root.Config`),
``schema/engine/<name>``, ``schema/model/<engine>``, ``schema/generator/<kind>``.
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from stylisticbias.spec.engines import ENGINE_SPECS
from stylisticbias.spec.generators import GENERATOR_SPECS
from stylisticbias.spec.models import MODEL_SPECS
from stylisticbias.spec.nodes import schema
from stylisticbias.spec.root import Config

ROOT_SCHEMA = "stylisticbias_schema"
_done = False


def register() -> None:
    """Store every schema once per process."""
    global _done
    if _done:
        return
    cs = ConfigStore.instance()
    cs.store(name=ROOT_SCHEMA, node=schema(Config))
    for name, cls in ENGINE_SPECS.items():
        cs.store(group="schema/engine", name=name, node=schema(cls))
    for name, cls in MODEL_SPECS.items():
        cs.store(group="schema/model", name=name, node=schema(cls))
    for name, cls in GENERATOR_SPECS.items():
        cs.store(group="schema/generator", name=name, node=schema(cls))
    _done = True
