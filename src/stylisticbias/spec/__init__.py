"""Typed, frozen specs of every configuration section, registered as Hydra structured configs.

``conf/`` is composed against these dataclasses (:mod:`stylisticbias.spec.store` registers them
in Hydra's ConfigStore, through the ``hydra_plugins.stylisticbias_schemas`` plugin so DVC's own
composition sees them too): an unknown or misspelt key, a wrong type or an out-of-range value
fails composition before ``params.yaml`` is written. Stages parse ``params.yaml`` once into a
:class:`~stylisticbias.spec.root.Config` (:func:`stylisticbias.config.load_config`) and hand
its sections to library functions.
"""

from stylisticbias.spec.root import Config

__all__ = ["Config"]
