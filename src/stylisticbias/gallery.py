"""A self-contained HTML contact sheet of base faces and their variations.

One row per base face: the face (with its demographic cell as the row header) beside its
variations grouped by attribute, each labelled ``attribute: value`` (evaluated values marked
with a star). Images are referenced by paths relative to the HTML file; refused, blocked and
failed generations appear as labelled placeholders with their reason.
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
"""


def _rel(target: Path, out_dir: Path) -> str:
    return Path(os.path.relpath(target.resolve(), out_dir.resolve())).as_posix()


def _cell(row: pd.Series, img_dir: Path, out_dir: Path, label: str, *, body: bool = False) -> str:
    star = (
        '<span class="ev" title="evaluated">&#9733;</span> ' if bool(row.get("evaluated")) else ""
    )
    cap = f"<figcaption>{star}{html.escape(label)}</figcaption>"
    if row.get("status") == "ok" and isinstance(row.get("path"), str) and row["path"]:
        src = html.escape(_rel(img_dir / row["path"], out_dir))
        cls = ' class="body"' if body else ""
        alt = html.escape(label)
        return f'<figure><img{cls} src="{src}" alt="{alt}" loading="lazy">{cap}</figure>'
    reason = html.escape(f"{row.get('status')}: {row.get('reason') or 'no reason given'}")
    return f'<figure><div class="ph" title="{reason}">{reason}</div>{cap}</figure>'


def write_gallery(
    faces: pd.DataFrame,
    variations: pd.DataFrame,
    out_html: Path,
    faces_dir: Path,
    variations_dir: Path,
    max_faces: int | None = None,
    preamble: str = "",
) -> Path:
    """Write the contact sheet to ``out_html`` and return its path.

    :param faces: rows of the FACES schema (``path`` relative to ``faces_dir``)
    :param variations: rows of the VARIATIONS schema (``path`` relative to ``variations_dir``)
    :param max_faces: show only the first N faces (None = all)
    :param preamble: HTML placed under the title (e.g. an imported set's coverage report)
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
    doc = (
        '<!doctype html><html><head><meta charset="utf-8"><title>StylisticBias gallery</title>'
        f"<style>{CSS}</style></head><body><h1>StylisticBias gallery: {len(shown)} of {len(faces)} "
        f"faces, {n_var} variations (&#9733; = evaluated)</h1>"
        f"{preamble}{''.join(rows)}</body></html>"
    )
    out_html.write_text(doc, encoding="utf-8")
    return out_html
