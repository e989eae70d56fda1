"""A self-contained HTML contact sheet of base faces and their variations.

One row per base face: the face (with its demographic cell as the row header) beside its
variations grouped by attribute, each labelled ``attribute: value`` (evaluated values marked
with a star). Images are referenced by paths relative to the HTML file; refused, blocked and
failed generations appear as labelled placeholders with their reason.

QA of the edits (``qa_script``): the ``qa`` stage runs after the gallery is written, so its
results come as a data script beside its outputs (``<paths.qa>/gallery_qa.js``, written by
:func:`stylisticbias.qa.gallery.write_gallery_data`) that the page loads by a relative
``<script src>`` (which works from ``file://``): under every edit its locality, attribute and
identity checks (pass, fail or unknown, the annotator's reason on hover), excluded edits
outlined, and a line of counts under the title. Before the ``qa`` stage has run the page says so.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

import pandas as pd

CSS = """
body{font-family:system-ui,sans-serif;margin:12px;background:#fafafa;color:#222}
h1{font-size:18px}
.face{display:flex;gap:10px;border-bottom:1px solid #ddd;padding:8px 0;align-items:flex-start}
.head{width:150px;flex:none;font-size:12px}
.head img{width:128px;height:128px;object-fit:contain;background:#fff;border:1px solid #ccc}
.groups{display:flex;flex-wrap:wrap;gap:8px}
.group{border:1px solid #e2e2e2;border-radius:4px;padding:3px;background:#fff}
.group h3{font-size:11px;margin:0 0 3px 0;color:#555}
.cells{display:flex;gap:3px}
figure{margin:0;width:84px;font-size:10px;text-align:center}
figure img{width:84px;height:84px;object-fit:contain;background:#fff;display:block}
figure img.body{height:168px}
.ph{width:84px;height:84px;
background:repeating-linear-gradient(45deg,#eee,#eee 6px,#ddd 6px,#ddd 12px);
display:flex;align-items:center;justify-content:center;font-size:9px;color:#a00;overflow:hidden}
.ev{color:#b35c00;font-weight:bold}
table.cov{border-collapse:collapse;font-size:11px;margin:4px 0}
table.cov td,table.cov th{border:1px solid #ddd;padding:1px 5px;text-align:left}
.qa{font-size:9px;font-weight:bold} .qa .pass{color:#070} .qa .fail{color:#b00}
.qa .unk{color:#999} figure.excluded{outline:2px solid #b00}
"""

#: the qa stage's data script (in ``<paths.qa>``) the contact sheet loads
QA_DATA = "gallery_qa.js"
#: fills in the QA badges from ``window.STYLISTICBIAS_QA`` (the qa stage's data script)
QA_JS = """(function(){var q=window.STYLISTICBIAS_QA,n=document.getElementById('qa-note');
if(!q){n.textContent='QA of the edits: not run yet (dvc repro qa); its checks then show under '
+'each edit.';return;}
n.textContent=q.note;var names=['locality','attribute','identity'];
document.querySelectorAll('figure[data-image-id]').forEach(function(f){
var r=q.images[f.getAttribute('data-image-id')];if(!r)return;
var d=document.createElement('div');d.className='qa';
names.forEach(function(k,i){var v=r[i],s=document.createElement('span');
s.className=v===null?'unk':(v?'pass':'fail');
s.textContent=' '+k.charAt(0).toUpperCase()+(v===null?'?':(v?'\u2713':'\u2717'));
s.title=k+': '+(v===null?'unknown':(v?'pass':'fail'))+(r[4+i]?' ('+r[4+i]+')':'');
d.appendChild(s);});
if(r[3]){f.className+=' excluded';f.title='excluded from judging (qa.policy=exclude)';}
f.appendChild(d);});})();"""


def _rel(target: Path, out_dir: Path) -> str:
    return Path(os.path.relpath(target.resolve(), out_dir.resolve())).as_posix()


def _cell(row: pd.Series, img_dir: Path, out_dir: Path, label: str, *, body: bool = False) -> str:
    iid = row.get("image_id") if "image_id" in row else None
    tag = (
        f'<figure data-image-id="{html.escape(str(iid))}">' if isinstance(iid, str) else "<figure>"
    )
    star = (
        '<span class="ev" title="evaluated">&#9733;</span> ' if bool(row.get("evaluated")) else ""
    )
    cap = f"<figcaption>{star}{html.escape(label)}</figcaption>"
    if row.get("status") == "ok" and isinstance(row.get("path"), str) and row["path"]:
        src = html.escape(_rel(img_dir / row["path"], out_dir))
        cls = ' class="body"' if body else ""
        alt = html.escape(label)
        return f'{tag}<img{cls} src="{src}" alt="{alt}" loading="lazy">{cap}</figure>'
    reason = html.escape(f"{row.get('status')}: {row.get('reason') or 'no reason given'}")
    return f'{tag}<div class="ph" title="{reason}">{reason}</div>{cap}</figure>'


def write_gallery(
    faces: pd.DataFrame,
    variations: pd.DataFrame,
    out_html: Path,
    faces_dir: Path,
    variations_dir: Path,
    max_faces: int | None = None,
    preamble: str = "",
    qa_script: str | None = None,
) -> Path:
    """Write the contact sheet to ``out_html`` and return its path.

    :param faces: rows of the FACES schema (``path`` relative to ``faces_dir``)
    :param variations: rows of the VARIATIONS schema (``path`` relative to ``variations_dir``)
    :param max_faces: show only the first N faces (None = all)
    :param preamble: HTML placed under the title (e.g. an imported set's coverage report)
    :param qa_script: the QA data script's path relative to ``out_html`` (module docstring);
        None: no QA badges
    """
    out_html = Path(out_html)
    out_dir = out_html.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    shown = (
        faces.sort_values("face_id").head(max_faces) if max_faces else faces.sort_values("face_id")
    )
    by_face = dict(tuple(variations.groupby("face_id", sort=False))) if len(variations) else {}
    rows = []
    for _, f in shown.iterrows():
        demo = f"{f['age']} {f['gender']}, {f['ethnicity']}, {f['body_type']}"
        head = _cell(f, Path(faces_dir), out_dir, "base face")
        groups = []
        vs = by_face.get(f["face_id"])
        if vs is not None:
            for attr, g in vs.groupby("attribute", sort=False):
                cells = "".join(
                    _cell(
                        v,
                        Path(variations_dir),
                        out_dir,
                        f"{attr}: {v['value']}",
                        body=v.get("framing") == "full_body",
                    )
                    for _, v in g.iterrows()
                )
                title = html.escape(str(attr))
                groups.append(
                    f'<div class="group"><h3>{title}</h3><div class="cells">{cells}</div></div>'
                )
        rows.append(
            f'<div class="face"><div class="head"><b>{html.escape(str(f["face_id"]))}</b><br>'
            f'{html.escape(demo)}{head}</div><div class="groups">{"".join(groups)}</div></div>'
        )
    n_var = int(variations["face_id"].isin(shown["face_id"]).sum()) if len(variations) else 0
    qa_head = qa_tail = ""
    if qa_script is not None:
        qa_head = '<p id="qa-note"></p>'
        qa_tail = f'<script src="{html.escape(qa_script)}"></script><script>{QA_JS}</script>'
    doc = (
        '<!doctype html><html><head><meta charset="utf-8"><title>StylisticBias gallery</title>'
        f"<style>{CSS}</style></head><body><h1>StylisticBias gallery: {len(shown)} of {len(faces)} "
        f"faces, {n_var} variations (&#9733; = evaluated)</h1>"
        f"{preamble}{qa_head}{''.join(rows)}{qa_tail}</body></html>"
    )
    out_html.write_text(doc, encoding="utf-8")
    return out_html
