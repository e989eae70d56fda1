"""How much of the paper's design an imported set covers, so thin tables are known in advance.

* faces per demographic cell (age x gender x ethnicity x body type; the paper's grid has 90),
  and the marginals beside the paper's observed shares (Table 9 / DESIGN §1);
* per face, how many of its evaluated values (31 for a male, 32 for a female face under the
  34-value whitelist) are present, and which are missing;
* per evaluated value, on how many faces it is present and missing.

:func:`coverage` returns a JSON-ready dict (deterministic: no timings, no paths outside the
data root); :func:`coverage_html` renders it for the gallery; :func:`log_coverage` logs it.
"""

from __future__ import annotations

import html
import itertools
import logging
from typing import Any

import pandas as pd

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark

log = logging.getLogger(__name__)


def coverage(faces: pd.DataFrame, variations: pd.DataFrame, benchmark: Benchmark) -> dict[str, Any]:
    """Coverage of the ok faces and variations relative to the benchmark's design."""
    f = faces[faces["status"] == "ok"]
    v = variations[(variations["status"] == "ok") & variations["face_id"].isin(f["face_id"])]
    demo = benchmark.demographics
    counts = f.groupby(list(DEMOGRAPHIC_AXES)).size().to_dict() if len(f) else {}
    cells = [
        {**dict(zip(DEMOGRAPHIC_AXES, combo)), "faces": int(counts.get(combo, 0))}
        for combo in itertools.product(*(demo[a] for a in DEMOGRAPHIC_AXES))
    ]
    marg = benchmark.observed_marginals or {}
    n_paper = float(marg.get("n", 0) or 0)
    marginals = {
        axis: [
            {
                "value": g,
                "faces": int((f[axis] == g).sum()),
                "share": round(float((f[axis] == g).mean()), 4) if len(f) else 0.0,
                "paper_share": round(float(marg.get(axis, {}).get(g, 0)) / n_paper, 4)
                if n_paper
                else None,
            }
            for g in demo[axis]
        ]
        for axis in DEMOGRAPHIC_AXES
    }
    present = {(r.face_id, r.attribute, r.value) for r in v.itertuples()}
    per_face = []
    for r in f.sort_values("face_id").itertuples():
        want = benchmark.variations_for(str(r.gender), evaluated_only=True)
        miss = [
            f"{x.attribute} / {x.value}"
            for x in want
            if (r.face_id, x.attribute, x.value) not in present
        ]
        full = benchmark.variations_for(str(r.gender))
        per_face.append(
            {
                "face_id": r.face_id,
                "evaluated_expected": len(want),
                "evaluated_present": len(want) - len(miss),
                "all_expected": len(full),
                "all_present": sum((r.face_id, x.attribute, x.value) in present for x in full),
                "missing_evaluated": miss,
            }
        )
    per_value = []
    for x in benchmark.variations:
        if not x.evaluated:
            continue
        faces_for = f[[x.applies_to(str(g)) for g in f["gender"]]] if len(f) else f
        have = sum((fid, x.attribute, x.value) in present for fid in faces_for["face_id"])
        per_value.append(
            {
                "attribute": x.attribute,
                "value": x.value,
                "faces_expected": len(faces_for),
                "faces_present": int(have),
                "faces_missing": len(faces_for) - int(have),
            }
        )
    exp = sum(p["evaluated_expected"] for p in per_face)
    got = sum(p["evaluated_present"] for p in per_face)
    return {
        "n_faces": len(f),
        "n_variations": len(v),
        "n_evaluated_variations": int(v["evaluated"].astype(bool).sum()) if len(v) else 0,
        "cells_total": len(cells),
        "cells_with_faces": sum(c["faces"] > 0 for c in cells),
        "evaluated_expected": exp,
        "evaluated_present": got,
        "evaluated_share": round(got / exp, 4) if exp else 0.0,
        "cells": cells,
        "marginals": marginals,
        "per_face": per_face,
        "per_value": per_value,
    }


def summary_lines(cov: dict[str, Any], *, thin: int = 5) -> list[str]:
    """A few human lines: totals, empty cells, the thinnest evaluated values."""
    lines = [
        f"{cov['n_faces']} faces in {cov['cells_with_faces']} of {cov['cells_total']} "
        f"demographic cells; {cov['evaluated_present']} of {cov['evaluated_expected']} evaluated "
        f"(face, value) pairs present ({100 * cov['evaluated_share']:.1f}%)",
    ]
    for axis, rows in cov["marginals"].items():
        empty = [r["value"] for r in rows if r["faces"] == 0]
        if empty:
            lines.append(f"no faces with {axis} {', '.join(empty)}")
    worst = sorted(
        (p for p in cov["per_value"] if p["faces_missing"]),
        key=lambda p: (p["faces_present"] - p["faces_expected"], p["attribute"], p["value"]),
    )[:thin]
    for p in worst:
        lines.append(
            f"{p['attribute']} / {p['value']}: present on {p['faces_present']} of "
            f"{p['faces_expected']} faces"
        )
    return lines


def log_coverage(cov: dict[str, Any], source: str) -> None:
    """Log the coverage summary (one line each)."""
    log.info("import coverage (%s):", source)
    for line in summary_lines(cov):
        log.info("  %s", line)


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r[c]))}</td>" for c in cols) + "</tr>" for r in rows
    )
    return f'<table class="cov"><tr>{head}</tr>{body}</table>'


def coverage_html(cov: dict[str, Any], source: str) -> str:
    """The coverage report as an HTML section for the gallery."""
    lines = "".join(f"<li>{html.escape(s)}</li>" for s in summary_lines(cov, thin=10))
    marg = [
        {"axis": a, **r, "paper_share": "-" if r["paper_share"] is None else r["paper_share"]}
        for a, rows in cov["marginals"].items()
        for r in rows
    ]
    cells = [c for c in cov["cells"] if c["faces"]]
    faces = [
        {**p, "missing_evaluated": "; ".join(p["missing_evaluated"]) or "-"}
        for p in cov["per_face"]
    ]
    return (
        '<section class="coverage"><h2>Imported image set: coverage</h2>'
        f"<p>Source: {html.escape(source)}</p><ul>{lines}</ul>"
        "<details><summary>Faces per demographic value (vs the paper's shares)</summary>"
        + _table(marg, ["axis", "value", "faces", "share", "paper_share"])
        + "</details><details><summary>Demographic cells with faces "
        f"({cov['cells_with_faces']} of {cov['cells_total']})</summary>"
        + _table(cells, [*DEMOGRAPHIC_AXES, "faces"])
        + "</details><details open><summary>Evaluated values: faces present / missing"
        "</summary>"
        + _table(
            cov["per_value"],
            ["attribute", "value", "faces_expected", "faces_present", "faces_missing"],
        )
        + "</details><details><summary>Per face</summary>"
        + _table(
            faces,
            [
                "face_id",
                "evaluated_present",
                "evaluated_expected",
                "all_present",
                "all_expected",
                "missing_evaluated",
            ],
        )
        + "</details></section>"
    )
