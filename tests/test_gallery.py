"""The HTML gallery: built from a tiny procedural dataset and screenshotted in headless Chromium."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from stylisticbias.benchmark import benchmark_from_params, slug
from stylisticbias.config import load_params
from stylisticbias.gallery import write_gallery
from stylisticbias.generators.base import FaceSpec
from stylisticbias.generators.procedural import ProceduralGenerator
from stylisticbias.schemas import FACES, VARIATIONS, validate

CHROMIUM = Path("/usr/bin/chromium")
BENCH = benchmark_from_params(load_params())


def _tiny_dataset(root: Path) -> tuple[pd.DataFrame, pd.DataFrame, Path, Path]:
    gen = ProceduralGenerator(size=96)
    faces_dir, var_dir = root / "data" / "faces", root / "data" / "variations"
    (faces_dir / "images").mkdir(parents=True)
    (var_dir / "images").mkdir(parents=True)
    specs = [
        FaceSpec("face-0000", "young adult", "female", "African", "normal", 1, "p"),
        FaceSpec("face-0001", "elderly", "male", "European", "obese", 2, "p"),
    ]
    faces, variations = [], []
    for spec in specs:
        img = Image.fromarray(gen.render_face(spec))
        rel = f"images/{spec.face_id}.png"
        img.save(faces_dir / rel)
        demo = {k: getattr(spec, k) for k in ("age", "gender", "ethnicity", "body_type")}
        faces.append(
            {
                "face_id": spec.face_id,
                "image_id": spec.face_id,
                **demo,
                "generator": "procedural",
                "prompt": "p",
                "seed": spec.seed,
                "path": rel,
                "sha256": hashlib.sha256((faces_dir / rel).read_bytes()).hexdigest(),
                "width": img.width,
                "height": img.height,
                "status": "ok",
                "reason": None,
                "evaluated": True,
            }
        )
        chosen = [
            *BENCH.variations_for(spec.gender)[:12],
            BENCH.variation("Fashion style", "Casual"),
        ]
        for i, v in enumerate(chosen):
            iid = f"{spec.face_id}--{v.slug}"
            row = {
                "image_id": iid,
                "face_id": spec.face_id,
                "category": v.category,
                "attribute": v.attribute,
                "value": v.value,
                "framing": v.framing,
                **demo,
                "generator": "procedural",
                "prompt": "p",
                "seed": i,
                "evaluated": v.evaluated,
            }
            if i == 3:  # one refused edit shows as a placeholder
                row.update(
                    path=None,
                    sha256=None,
                    width=None,
                    height=None,
                    status="refused",
                    reason="policy: test refusal",
                )
            else:
                out = Image.fromarray(gen.render_edit(spec, v))
                rel = f"images/{slug(iid)}.png"
                out.save(var_dir / rel)
                row.update(
                    path=rel,
                    sha256=hashlib.sha256((var_dir / rel).read_bytes()).hexdigest(),
                    width=out.width,
                    height=out.height,
                    status="ok",
                    reason=None,
                )
            variations.append(row)
    f = validate(pd.DataFrame(faces), FACES, "faces")
    v = validate(pd.DataFrame(variations), VARIATIONS, "variations")
    return f, v, faces_dir, var_dir


def test_gallery_html_structure(tmp_path: Path) -> None:
    faces, variations, fdir, vdir = _tiny_dataset(tmp_path)
    out = write_gallery(faces, variations, tmp_path / "reports" / "gallery.html", fdir, vdir)
    text = out.read_text()
    assert text.count('<div class="face">') == 2
    assert "../data/faces/images/face-0000.png" in text  # relative to the HTML file
    assert "Hair color: Blonde" in text or "Hair color: Black" in text
    assert "refused: policy: test refusal" in text
    assert "young adult female, African, normal" in text
    assert "&#9733;" in text
    one = write_gallery(faces, variations, tmp_path / "g1.html", fdir, vdir, max_faces=1)
    assert one.read_text().count('<div class="face">') == 1


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium not installed (apt-get install chromium)"
)
def test_gallery_renders_images_in_chromium(tmp_path: Path) -> None:
    faces, variations, fdir, vdir = _tiny_dataset(tmp_path)
    out = write_gallery(faces, variations, tmp_path / "reports" / "gallery.html", fdir, vdir)
    shot = tmp_path / "shot.png"
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}",
        "--window-size=1400,900",
        out.resolve().as_uri(),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.std() > 20  # far from a blank page
    # the first face's skin tone appears in the screenshot
    base = np.asarray(Image.open(fdir / faces.iloc[0]["path"]).convert("RGB")).astype(int)
    skin = np.median(base[44:50, 34:44].reshape(-1, 3), axis=0)  # forehead/cheek skin
    close = (np.abs(img - skin).sum(-1) < 30).mean()
    assert close > 0.001, f"skin tone {skin} not found in the screenshot"
