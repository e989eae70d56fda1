"""The QA table: locality and an annotator's attribute and identity checks per variation.

``<paths.qa>/checks.parquet`` (:data:`CHECKS`), one row per variation:

* ``locality_pass`` -- from ``locality.parquet`` (null: no mask, or not comparable);
* ``attribute_pass`` / ``identity_pass`` -- the annotator's yes/no answer (``P(yes) >=
  qa.min_confidence`` where it gives a distribution); null when it was not asked, or its answer
  is invalid (the reason is in ``attribute_reason`` / ``identity_reason``);
* ``qa_pass`` -- no known check failed (unknown checks do not fail an edit);
* ``excluded`` -- ``qa.policy == "exclude"`` and the edit failed: the judge leaves it out.

``summary.json``: for each check, how many edits were checked, passed and failed (overall and per
attribute value), the policy, and the excluded image ids (stated in the report).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd
import pandera.pandas as pa

from stylisticbias import schemas
from stylisticbias.config import config_output, config_path, configured_annotator, project_root
from stylisticbias.outputs import OutputLock, atomic_write_json
from stylisticbias.qa.stage import LOCALITY_FILE
from stylisticbias.qa.tables import LOCALITY
from stylisticbias.spec import Config
from stylisticbias.spec.qa import QASpec

log = logging.getLogger(__name__)

CHECKS_FILE = "checks.parquet"
SUMMARY_FILE = "summary.json"
#: the checks, in report order
CHECK_COLUMNS = ("locality_pass", "attribute_pass", "identity_pass")

CHECKS = pa.DataFrameSchema(
    {
        "image_id": pa.Column(str, unique=True),
        "face_id": pa.Column(str),
        "attribute": pa.Column(str),
        "value": pa.Column(str),
        "locality_pass": pa.Column("boolean", nullable=True),
        "attribute_pass": pa.Column("boolean", nullable=True),
        "identity_pass": pa.Column("boolean", nullable=True),
        "attribute_reason": pa.Column(str, nullable=True),
        "identity_reason": pa.Column(str, nullable=True),
        "qa_pass": pa.Column(bool),
        "excluded": pa.Column(bool),
    },
    strict=True,
    coerce=True,
    name="qa_checks",
)


def _yes(answer: Any, probs: Any, min_confidence: float) -> bool | None:
    """A yes/no answer as pass/fail: P(yes) when given, else the answer itself."""
    if isinstance(probs, str):
        return float(json.loads(probs).get("yes", 0.0)) >= min_confidence
    if isinstance(answer, str):
        return json.loads(answer) == "yes"
    return None


def annotator_checks(annotations: pd.DataFrame, spec: QASpec) -> pd.DataFrame:
    """``image_id`` -> ``<q>_pass`` and ``<q>_reason`` for the attribute and identity questions."""
    out = pd.DataFrame(index=pd.Index(sorted(annotations["image_id"].unique()), name="image_id"))
    for q in ("attribute", "identity"):
        rows = annotations[annotations["question_id"] == q].set_index("image_id")
        passed = [
            _yes(None if pd.isna(a) else a, None if pd.isna(p) else p, float(spec.min_confidence))
            if ok
            else None
            for a, p, ok in zip(rows["answer"], rows["probs"], rows["valid"])
        ]
        out[f"{q}_pass"] = pd.Series(passed, index=rows.index, dtype="boolean")
        out[f"{q}_reason"] = rows["reason"].where(~rows["valid"], None)
    return out


def checks_table(
    variations: pd.DataFrame,
    locality: pd.DataFrame,
    annotations: pd.DataFrame | None,
    spec: QASpec,
) -> pd.DataFrame:
    """One :data:`CHECKS` row per rendered variation, sorted by image id."""
    ok = variations[variations["status"] == "ok"]
    table = ok[["image_id", "face_id", "attribute", "value"]].set_index("image_id")
    table = table.join(locality.set_index("image_id")[["locality_pass"]], how="left")
    if annotations is not None and not annotations.empty:
        table = table.join(annotator_checks(annotations, spec), how="left")
    for q in ("attribute", "identity"):
        if f"{q}_pass" not in table:
            table[f"{q}_pass"] = pd.Series(pd.NA, index=table.index, dtype="boolean")
            table[f"{q}_reason"] = None
    failed = pd.Series(False, index=table.index)
    for col in CHECK_COLUMNS:
        failed |= table[col].astype("boolean").eq(False).fillna(False).astype(bool)
    table["qa_pass"] = ~failed
    table["excluded"] = failed & (spec.policy == "exclude")
    table = table.reset_index().sort_values("image_id", kind="stable").reset_index(drop=True)
    return table[list(CHECKS.columns)]


def summary(table: pd.DataFrame, spec: QASpec) -> dict[str, Any]:
    """Counts per check (overall and per attribute value), the policy and the exclusions."""
    checks: dict[str, Any] = {}
    for col in CHECK_COLUMNS:
        known = table[table[col].notna()]
        per_value = []
        for (attr, val), rows in known.groupby(["attribute", "value"], sort=True):
            n_pass = int(rows[col].astype(bool).sum())
            per_value.append(
                {
                    "attribute": str(attr),
                    "value": str(val),
                    "checked": len(rows),
                    "passed": n_pass,
                    "pass_share": n_pass / len(rows),
                }
            )
        n_pass = int(known[col].astype(bool).sum())
        checks[col.removesuffix("_pass")] = {
            "checked": len(known),
            "passed": n_pass,
            "failed": len(known) - n_pass,
            "unknown": int(table[col].isna().sum()),
            "pass_share": n_pass / len(known) if len(known) else None,
            "per_value": per_value,
        }
    excluded = sorted(table.loc[table["excluded"], "image_id"].tolist())
    return {
        "policy": spec.policy,
        "annotator": spec.annotator,
        "edits": len(table),
        "failed_any": int((~table["qa_pass"]).sum()),
        "checks": checks,
        "excluded": excluded,
    }


def build_checks(config: Config) -> Path:
    """The ``qa`` stage: ``checks.parquet``, ``summary.json``, ``gallery.html`` and the
    variations gallery's ``gallery_qa.js`` in paths.qa."""
    spec = config.qa
    root = project_root()
    out_dir = config_output(config, "qa")
    var_dir = config_path(config, "variations")
    variations = schemas.read_table(var_dir / "variations.parquet", schemas.VARIATIONS)
    locality = schemas.read_table(out_dir / LOCALITY_FILE, LOCALITY)
    annotations = None
    if spec.annotator is not None:
        configured_annotator(config, spec.annotator)  # one line listing the configured ones
        path = config_path(config, "annotations") / spec.annotator / "annotations.parquet"
        annotations = schemas.read_table(path, schemas.ANNOTATIONS)
    table = checks_table(variations, locality, annotations, spec)
    with OutputLock(root, out_dir / "checks"):
        schemas.write_table(table, out_dir / CHECKS_FILE, CHECKS)
        summ = summary(table, spec)
        atomic_write_json(out_dir / SUMMARY_FILE, summ)
        from stylisticbias.qa.gallery import write_gallery_data, write_qa_gallery

        write_qa_gallery(table, variations, config, out_dir / "gallery.html")
        write_gallery_data(table, summ, out_dir)
    log.info(
        "qa: %d edits, %d fail a check (policy %s: %d excluded from judging)",
        len(table),
        summ["failed_any"],
        spec.policy,
        len(summ["excluded"]),
    )
    return out_dir / CHECKS_FILE


def qa_exclusions(config: Config) -> set[str]:
    """Image ids the judge leaves out: none under ``qa.policy: report``; else ``excluded``."""
    if config.qa.policy != "exclude":
        return set()
    table = schemas.read_table(config_path(config, "qa") / CHECKS_FILE, CHECKS)
    return set(table.loc[table["excluded"], "image_id"].astype(str))
