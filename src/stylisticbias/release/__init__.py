"""The publishable dataset release: images, a per-image Parquet table, the protocol, judgments
and phi per model, ``croissant.json`` (Croissant 1.1 with RAI fields) and a dataset card.

A command, not a DVC stage (docs/release.md): ``python -m stylisticbias.release`` reads the DVC
outputs of ``faces``, ``variations``, ``judge`` and ``scores`` and writes ``release.out``.
"""

from stylisticbias.release.build import ReleaseResult, build_release

__all__ = ["ReleaseResult", "build_release"]
