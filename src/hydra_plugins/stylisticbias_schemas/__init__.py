"""Hydra plugin: registers StylisticBias's config schemas whenever Hydra composes.

Hydra imports every module under the ``hydra_plugins`` namespace when it discovers plugins, so
``conf/`` is checked against the same typed specs whoever composes it: our
``python -m stylisticbias.configure compose``, a ``python -m stylisticbias.sweep`` job, or DVC's
``dvc exp run`` (which composes ``conf/`` itself).
"""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

try:  # another checkout's stylisticbias on the path may predate the specs
    from stylisticbias.spec.store import register

    register()
except ImportError:  # pragma: no cover
    pass


class StylisticBiasSchemas(SearchPathPlugin):
    """Nothing to add to the search path: importing this module registered the schemas."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        """No-op."""
