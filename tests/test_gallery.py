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


def _dump_dom(page: Path, tmp_path: Path) -> str:
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--allow-file-access-from-files",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    return subprocess.run(cmd, check=True, capture_output=True, timeout=60, text=True).stdout


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium not installed (apt-get install chromium)"
)
def test_gallery_shows_the_qa_checks_of_every_edit(tmp_path: Path) -> None:
    """The qa stage's data script fills in a badge row under every edit (run in Chromium)."""
    import json

    from stylisticbias.qa.gallery import write_gallery_data

    faces, variations, fdir, vdir = _tiny_dataset(tmp_path)
    qa_dir = tmp_path / "data" / "qa"
    out = write_gallery(
        faces, variations, vdir / "gallery.html", fdir, vdir, qa_script="../qa/gallery_qa.js"
    )
    before = _dump_dom(out, tmp_path)  # the qa stage has not run yet: the page says so
    assert "not run yet" in before and 'class="qa"' not in before
    ok = variations[variations["status"] == "ok"].reset_index(drop=True)
    flags = [True, False, None]
    table = pd.DataFrame(
        {
            "image_id": ok["image_id"],
            "locality_pass": [flags[i % 3] for i in range(len(ok))],
            "attribute_pass": [flags[(i + 1) % 3] for i in range(len(ok))],
            "identity_pass": [True] * len(ok),
            "attribute_reason": [
                None if i % 3 != 1 else "outside_schema: x" for i in range(len(ok))
            ],
            "identity_reason": [None] * len(ok),
            "excluded": [i == 0 for i in range(len(ok))],
        }
    )
    summary = {"policy": "exclude", "failed_any": 7, "edits": len(ok), "excluded": ["x"]}
    qa_dir.mkdir(parents=True)
    js = write_gallery_data(table, summary, qa_dir)
    data = json.loads(js.read_text().removeprefix("window.STYLISTICBIAS_QA = ").rstrip(";\n"))
    assert data["images"][ok["image_id"][1]][:4] == [False, None, True, False]
    dom = _dump_dom(out, tmp_path)
    assert dom.count('<div class="qa">') == len(ok)
    assert f"7 of {len(ok)} edits fail a check; 1 excluded" in dom
    assert dom.count('title="excluded from judging (qa.policy=exclude)"') == 1
    first = dom.split(f'data-image-id="{ok["image_id"][0]}"')[1].split("</figure>")[0]
    assert "L\u2713" in first and "A\u2717" in first and "I\u2713" in first


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium not installed (apt-get install chromium)"
)
def test_gallery_fits_the_window_and_shows_something(tmp_path: Path) -> None:
    """The browser check of tests/report/test_html_layout.py on the gallery: no horizontal
    overflow at 1280 and 1500 px, a first viewport that is not blank."""
    from stylisticbias_dev.headless import layout_problems

    faces, variations, fdir, vdir = _tiny_dataset(tmp_path)
    out = write_gallery(faces, variations, vdir / "gallery.html", fdir, vdir)
    ready = "Array.from(document.images).every(i => i.complete)"
    assert layout_problems(out, ready) == []
