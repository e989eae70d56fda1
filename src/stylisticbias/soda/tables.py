"""The SODA tables (``<paths.soda>/tables/*.csv``): one pandera schema each (the registry)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pandera.pandas as pa

from stylisticbias.outputs import atomic_write_text
from stylisticbias.registry import Registry
from stylisticbias.schemas import validate

_P = pa.Check.in_range(0.0, 1.0)
_NONNEG = pa.Check.ge(0.0)


def _f(check: pa.Check = _NONNEG) -> pa.Column:
    return pa.Column(float, check, nullable=True)


#: name -> (description, schema)
SODA_TABLES: Registry[tuple[str, pa.DataFrameSchema]] = Registry(
    "SODA table",
    {
        "soda_bds": (
            "BDS per (object, group) with its permutation p-value (Eq. 1, App. F)",
            pa.DataFrameSchema(
                {
                    "object": pa.Column(str),
                    "dimension": pa.Column(str),
                    "group": pa.Column(str),
                    "bds": _f(),
                    "pval": _f(_P),
                    "significant": pa.Column(bool),
                    "n_base": pa.Column(int),
                    "n_group": pa.Column(int),
                    "planted_shift": pa.Column(bool),
                },
                strict=True,
                coerce=True,
                name="soda_bds",
            ),
        ),
        "soda_cds": (
            "CDS per (object, dimension, variant): per attribute and over attributes (Eq. 2)",
            pa.DataFrameSchema(
                {
                    "object": pa.Column(str),
                    "dimension": pa.Column(str),
                    "variant": pa.Column(str),
                    "attribute": pa.Column(str),
                    "cds": _f(),
                },
                strict=True,
                coerce=True,
                name="soda_cds",
            ),
        ),
        "soda_vac": (
            "VAC per (object, condition) (Eq. 3; H_max = log of the observed values)",
            pa.DataFrameSchema(
                {
                    "object": pa.Column(str),
                    "condition": pa.Column(str),
                    "vac": _f(_P),
                    "n": pa.Column(int),
                },
                strict=True,
                coerce=True,
                name="soda_vac",
            ),
        ),
        "soda_cds_released": (
            "soda.definitions=official: the released cds_score.py -- CDS per (dimension, "
            "attribute) with the label counts pooled over objects (empty under paper)",
            pa.DataFrameSchema(
                {
                    "dimension": pa.Column(str),
                    "variant": pa.Column(str),
                    "attribute": pa.Column(str),
                    "cds": _f(),
                },
                strict=True,
                coerce=True,
                name="soda_cds_released",
            ),
        ),
        "soda_vac_released": (
            "soda.definitions=official: the released vac_score.py -- VAC per object, the mean "
            "of the scores >= 0.05 (base: every attribute; groups: product ones)",
            pa.DataFrameSchema(
                {"object": pa.Column(str), "vac": _f(_P)},
                strict=True,
                coerce=True,
                name="soda_vac_released",
            ),
        ),
        "soda_mitigation": (
            "CDS and VAC under the original vs the mitigated prompt: the mean change, its "
            "swap-permutation p (paper definitions) or the paired t-test's (official, §5.5)",
            pa.DataFrameSchema(
                {
                    "metric": pa.Column(str),
                    "dimension": pa.Column(str),
                    "variant": pa.Column(str),
                    "n": pa.Column(int),
                    "mean_original": _f(),
                    "mean_mitigated": _f(),
                    "change_pct": pa.Column(float, nullable=True),
                    "t": pa.Column(float, nullable=True),
                    "pval": _f(_P),
                    "test": pa.Column(str),
                },
                strict=True,
                coerce=True,
                name="soda_mitigation",
            ),
        ),
    },
)


def write_soda_table(name: str, df: pd.DataFrame, out_dir: Path) -> Path:
    """Validate ``df`` against the registered schema of ``name`` and write ``<name>.csv``."""
    _, schema = SODA_TABLES[name]
    path = out_dir / f"{name}.csv"
    frame = validate(df.reset_index(drop=True), schema, path)
    atomic_write_text(path, frame.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
    return path


def empty(name: str) -> pd.DataFrame:
    """An empty frame with the columns of table ``name``."""
    return pd.DataFrame({c: pd.Series(dtype=object) for c in SODA_TABLES[name][1].columns})
