"""SODA with a real text-to-image generator's code path (``soda.generator: configured``), faked
at its API boundary: the Gemini API by the local fake Google server of the gemini backend's
tests, diffusers by the tiny random-weight pipelines of the diffusers backend's tests. Every SODA
prompt reaches the generator verbatim, one seeded request per image; a blocked image is kept in
the manifest with its reason and left out of the labelling; the audit runs end to end."""

from __future__ import annotations

import functools
import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generators"))
from test_diffusers_backend import make as make_diffusers
from test_diffusers_backend import tiny_diffusers  # noqa: F401 - a fixture
from test_gemini_backend import SECRET, FakeGoogleAPI

from stylisticbias.config import compose, project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.soda.protocol import load_soda
from stylisticbias.soda.stage import _generated_images, configured_generator, run_soda
from stylisticbias.spec.parse import config_from_params


@pytest.fixture
def api(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    server = FakeGoogleAPI()
    yield server
    server.stop()


def _config(tmp_path: Path, monkeypatch, overrides: list[str]):
    shutil.copytree(project_root() / "conf", tmp_path / "conf")
    monkeypatch.chdir(tmp_path)
    return config_from_params(
        compose(
            [
                "experiment=soda-demo",
                "soda.objects=[car]",
                "soda.images_per_prompt=2",
                "soda.n_perm=200",
                "soda.mitigation=null",
                *overrides,
            ]
        )
    )


def _gemini(api) -> list[str]:
    return [
        "soda.generator=configured",
        "generator=gemini",
        f"generator.base_url={api.base_url}",
        "generator.vertexai=false",
        "generator.base_model=gemini-2.5-flash-image",
        "generator.max_retries=0",
        "generator.concurrency=2",
    ]


def test_gemini_gets_every_soda_prompt_verbatim_and_blocks_are_kept(tmp_path, monkeypatch, api):
    config = _config(tmp_path, monkeypatch, _gemini(api))
    api.script["generateContent"].append(
        (200, {"candidates": [{"finishReason": "IMAGE_SAFETY", "content": {"parts": []}}]})
    )
    proto = load_soda(config.soda.protocol)
    gen = configured_generator(config)
    try:
        images = _generated_images(config.soda, proto, gen, tmp_path / "out")
    finally:
        gen.close()
    conds = proto.conditions(None)
    assert len(images) == len(conds) * 2 == api.count("generateContent")
    sent = sorted(r["body"]["contents"][0]["parts"][0]["text"] for r in api.requests)
    assert sent == sorted(proto.prompt("car", c) for c in conds for _ in range(2))
    assert "car, one product only, no people" in sent
    seeds = [r["body"]["generationConfig"]["seed"] for r in api.requests]
    assert len(set(seeds)) == len(seeds)  # one seed per image
    bad = images[images["status"] != "ok"]
    assert len(bad) == 1 and bad["status"].iloc[0] == "blocked" and bad["path"].isna().all()
    ok = images[images["status"] == "ok"]
    assert all((tmp_path / "out" / p).is_file() for p in ok["path"])


def test_soda_stage_end_to_end_with_gemini(tmp_path, monkeypatch, api):
    out = run_soda(_config(tmp_path, monkeypatch, _gemini(api)))
    summary = json.loads((out / "metrics.json").read_text())
    assert summary["generator"] == "configured" and summary["images_failed"] == 0
    assert len(pd.read_csv(out / "tables/soda_bds.csv")) == 9
    manifest = pd.read_csv(out / "images.csv")
    assert (manifest["status"] == "ok").all() and manifest["prompt"].str.startswith("car").all()
    assert "SIMULATED" not in (out / "README.md").read_text()


def test_diffusers_gets_every_soda_prompt(tmp_path, tiny_diffusers):  # noqa: F811
    gen = make_diffusers(tiny_diffusers)
    prompts: list[str] = []
    pipe = gen.pipeline("base")
    call = type(pipe).__call__

    @functools.wraps(call)  # the signature kept: the generator filters kwargs by it
    def spy(self, *args, **kwargs):
        prompts.extend(kwargs["prompt"])
        return call(self, *args, **kwargs)

    proto = load_soda()
    spec = config_from_params(
        compose(["soda.objects=[cup]", "soda.images_per_prompt=2", "soda.mitigation=null"])
    ).soda
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(pipe), "__call__", spy)
        images = _generated_images(spec, proto, gen, tmp_path)
    gen.close()
    want = sorted(proto.prompt("cup", c) for c in proto.conditions(None) for _ in range(2))
    assert sorted(prompts) == want
    assert (images["status"] == "ok").all() and len(images) == 20
    assert all((tmp_path / p).is_file() for p in images["path"])


def test_a_face_generator_is_refused(tmp_path, monkeypatch):
    config = _config(tmp_path, monkeypatch, ["soda.generator=configured"])
    with pytest.raises(StylisticBiasError, match="needs a text-to-image generator"):
        run_soda(config)
