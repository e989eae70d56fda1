"""Offline, deterministic procedural faces: a layered vector-drawn scene per identity.

Modules: ``palette`` (colours), ``geometry`` (identity from the demographic cell + seed),
``canvas`` (masks, layers, exact compositing), ``face`` (the bare base face), one module per
attribute family (``hair``, ``skin``, ``facial_hair``, ``makeup``, ``accessories``),
``scene`` (the layer stack and edits), ``body`` + ``garments`` + ``fashion_tailored`` +
``fashion_casual`` + ``fashion`` (full-body images: figure, garment pieces, styles, style table) and
``generator`` (the :class:`ProceduralGenerator` backend).
"""

from stylisticbias.generators.procedural.generator import ProceduralGenerator

__all__ = ["ProceduralGenerator"]
