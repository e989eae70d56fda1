"""``generator: import`` -- an existing image set enters the pipeline in place of rendering.

Two source layouts (:mod:`.sources`): the paper's release (a folder per base face with
``_metadata.json`` files) and a generic CSV/Parquet manifest. Spellings are mapped to the
benchmark's vocabulary through an alias table (:mod:`.vocabulary`), every row is checked
(:mod:`.plan`, :mod:`.images`) and the ``faces``/``variations`` stages write the same manifests
as a generator would (:mod:`.stage`), plus a coverage report (:mod:`.coverage`).
"""

from stylisticbias.dataset.importer.settings import ImportSettings, is_import
from stylisticbias.dataset.importer.stage import import_faces, import_variations

__all__ = ["ImportSettings", "import_faces", "import_variations", "is_import"]
