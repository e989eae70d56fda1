"""``<paths.qa>/gallery.html``: the QA checks of the edits, failing edits first, with images.

A summary table (checked, passed, failed, unknown per check) and one card per edit that failed
a check (its image beside its base face, the failed checks and the annotator's reasons), then
a sample of passing edits. Images are referenced relative to the HTML file.

``<paths.qa>/gallery_qa.js`` (:func:`write_gallery_data`): the same checks per image for the
variations stage's contact sheet (``stylisticbias.gallery``), which loads it.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.config import config_path
from stylisticbias.gallery import QA_DATA
from stylisticbias.outputs import atomic_write_text
from stylisticbias.spec import Config

#: edits shown per section
MAX_CARDS = 200

CSS = """
body{font-family:system-ui,sans-serif;margin:12px;background:#fafafa;color:#222}
h1{font-size:18px} h2{font-size:15px}
table.sum{border-collapse:collapse;font-size:12px}
table.sum td,table.sum th{border:1px solid #ddd;padding:2px 6px}
.cards{display:flex;flex-wrap:wrap;gap:8px}
.card{border:1px solid #ddd;background:#fff;padding:4px;width:220px;font-size:11px}
.card img{width:100px;height:100px;object-fit:contain;background:#fff}
.fail{color:#b00;font-weight:bold} .pass{color:#070} .unk{color:#888}
"""


def _badge(value: Any, name: str) -> str:
    if pd.isna(value):
        return f'<span class="unk">{name}: ?</span>'
    return (
        f'<span class="{"pass" if value else "fail"}">{name}: {"pass" if value else "fail"}</span>'
    )


def write_qa_gallery(
    table: pd.DataFrame, variations: pd.DataFrame, config: Config, out: Path
) -> Path:
    """Write the QA gallery of ``table`` (the QA checks) to ``out``."""
    var_dir = config_path(config, "variations")
    faces_dir = config_path(config, "faces")
    faces = pd.read_parquet(faces_dir / "faces.parquet", columns=["face_id", "path"])
    face_path = dict(zip(faces["face_id"], faces["path"]))
    var_path = dict(zip(variations["image_id"], variations["path"]))

    def rel(p: Path) -> str:
        return html.escape(Path(os.path.relpath(p.resolve(), out.parent.resolve())).as_posix())

    def card(r: Any) -> str:
        img = rel(var_dir / str(var_path[r.image_id]))
        base = rel(faces_dir / str(face_path.get(r.face_id, "")))
        badges = " ".join(
            _badge(getattr(r, c), c.removesuffix("_pass"))
            for c in ("locality_pass", "attribute_pass", "identity_pass")
        )
        why = " ".join(
            html.escape(str(x))
            for x in (r.attribute_reason, r.identity_reason)
            if isinstance(x, str)
        )
        return (
            f'<div class="card"><img src="{base}" alt="base"><img src="{img}" alt="edit">'
            f"<br><b>{html.escape(r.attribute)}: {html.escape(r.value)}</b> "
            f"({html.escape(r.image_id)}){' excluded' if r.excluded else ''}<br>{badges}"
            f"{'<br>' + why if why else ''}</div>"
        )

    rows = []
    for col in ("locality_pass", "attribute_pass", "identity_pass"):
        known = table[col].dropna()
        rows.append(
            f"<tr><td>{col.removesuffix('_pass')}</td><td>{len(known)}</td>"
            f"<td>{int(known.astype(bool).sum())}</td><td>{int((~known.astype(bool)).sum())}</td>"
            f"<td>{int(table[col].isna().sum())}</td></tr>"
        )
    failing = table[~table["qa_pass"]]
    passing = table[table["qa_pass"]]
    text = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>QA of the edits</title>"
        f"<style>{CSS}</style></head><body><h1>QA of the edits</h1>"
        f"<p>Policy: <b>{html.escape(str(config.qa.policy))}</b>; "
        f"{int(table['excluded'].sum())} edit(s) excluded from judging.</p>"
        "<table class='sum'><tr><th>check</th><th>checked</th><th>passed</th><th>failed</th>"
        f"<th>unknown</th></tr>{''.join(rows)}</table>"
        f"<h2>Edits that fail a check ({len(failing)}; first {MAX_CARDS})</h2><div class='cards'>"
        + "".join(card(r) for r in failing.head(MAX_CARDS).itertuples())
        + f"</div><h2>Edits that pass (first {min(len(passing), MAX_CARDS)})</h2>"
        "<div class='cards'>"
        + "".join(card(r) for r in passing.head(MAX_CARDS).itertuples())
        + "</div></body></html>\n"
    )
    atomic_write_text(out, text)
    return out


def _flag(x: Any) -> bool | None:
    return None if pd.isna(x) else bool(x)


def _reason(x: Any) -> str | None:
    return str(x) if isinstance(x, str) else None


def write_gallery_data(table: pd.DataFrame, summary: dict[str, Any], out_dir: Path) -> Path:
    """``<out_dir>/gallery_qa.js``: ``window.STYLISTICBIAS_QA = {note, images}`` with, per
    image id, ``[locality, attribute, identity, excluded, locality reason, attribute reason,
    identity reason]`` (null: unknown) -- the QA badges of the variations gallery."""
    images = {
        str(r.image_id): [
            _flag(r.locality_pass),
            _flag(r.attribute_pass),
            _flag(r.identity_pass),
            bool(r.excluded),
            None,
            _reason(r.attribute_reason),
            _reason(r.identity_reason),
        ]
        for r in table.itertuples()
    }
    n_ex = len(summary["excluded"])
    note = (
        f"QA of the edits (policy {summary['policy']}): {summary['failed_any']} of "
        f"{summary['edits']} edits fail a check; {n_ex} excluded from judging"
        f"{' (outlined)' if n_ex else ''}. Under each edit: L locality, A attribute, I identity "
        "(\u2713 pass, \u2717 fail, ? unknown); hover for the reason."
    )
    body = json.dumps({"note": note, "images": images}, sort_keys=True, ensure_ascii=True)
    path = out_dir / QA_DATA
    atomic_write_text(path, f"window.STYLISTICBIAS_QA = {body};\n")
    return path
