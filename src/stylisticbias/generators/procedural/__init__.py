"""Offline, deterministic procedural faces: a layered vector-drawn scene per identity.

Modules: ``palette`` (colours), ``geometry`` (identity from the demographic cell + seed),
``canvas`` (masks, layers, exact compositing), ``face`` + ``face_features`` (the bare base face:
head and body; eyes, brows, nose, mouth), one module per attribute family (``hair`` with
``hair_colour`` and ``hair_shapes``, ``skin``, ``facial_hair``, ``makeup``, ``accessories``
with ``headwear``), ``scene`` (the layer stack and edits), ``body`` (the full-body figure),
``garments`` (garment pieces), ``fashion_tailored`` + ``fashion_casual`` (one function per
fashion style), ``fashion`` (the style table) and ``generator`` (the
:class:`ProceduralGenerator` backend).
"""

from stylisticbias.generators.procedural.generator import ProceduralGenerator

__all__ = ["ProceduralGenerator"]
