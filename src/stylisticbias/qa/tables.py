"""Pandera schemas of the QA tables (``paths.qa``): edit locality and the per-variation checks."""

from __future__ import annotations

import pandera.pandas as pa

from stylisticbias.qa.locality import MASK_SOURCES

_UNIT = pa.Check.in_range(0.0, 1.0)

#: ``<paths.qa>/locality.parquet`` -- one row per variation of the variations manifest.
LOCALITY = pa.DataFrameSchema(
    {
        "image_id": pa.Column(str, unique=True),
        "face_id": pa.Column(str),
        "attribute": pa.Column(str),
        "value": pa.Column(str),
        "framing": pa.Column(str),
        "mask_source": pa.Column(str, pa.Check.isin(list(MASK_SOURCES))),
        "mask_share": pa.Column(float, _UNIT, nullable=True),
        "diff_inside": pa.Column(float, _UNIT, nullable=True),
        "diff_outside": pa.Column(float, _UNIT, nullable=True),
        "diff_all": pa.Column(float, _UNIT, nullable=True),
        "gap": pa.Column(float, pa.Check.in_range(-1.0, 1.0), nullable=True),
        "ratio": pa.Column(float, pa.Check.ge(0.0), nullable=True),
        "changed_outside": pa.Column(float, _UNIT, nullable=True),
        "leak": pa.Column(float, _UNIT, nullable=True),
        "locality_pass": pa.Column("boolean", nullable=True),
        "reason": pa.Column(str, nullable=True),
    },
    strict=True,
    coerce=True,
    name="locality",
)
