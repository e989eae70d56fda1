"""DiffusersGenerator on tiny random-weight pipelines, loaded through ``from_pretrained``.

StableDiffusionPipeline stands in for the text-to-image model and
StableDiffusionInstructPix2PixPipeline for the edit model (both real pipelines). They are built
once from constructor configs (the diffusers test-suite pattern), with a CLIP tokenizer made
from a local byte-level vocabulary (no hub download), saved with ``save_pretrained`` under
``tests/.tiny_models/`` (git-ignored) and loaded back by the generator through the same
``from_pretrained`` path a hub id takes.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from stylisticbias.benchmark import VariationValue
from stylisticbias.errors import StylisticBiasError
from stylisticbias.generators.base import EditSpec, FaceSpec
from stylisticbias.generators.diffusers_backend import DiffusersGenerator, full_body_canvas

pytest.importorskip("diffusers")

REPO = Path(__file__).resolve().parents[2]
#: bump when the tiny models change, so stale caches are rebuilt
TINY_VERSION = "1"
TINY_DIR = REPO / "tests" / ".tiny_models" / f"diffusers-v{TINY_VERSION}"

FACE_V = VariationValue(
    "Eyewear", "eyewear", "Eyewear", "Sunglasses", "sunglasses", "Sunglasses", "all", "face", True
)
BODY_V = VariationValue(
    "Fashion style",
    "fashion_style",
    "Fashion",
    "Casual",
    "casual",
    "Casual",
    "all",
    "full_body",
    True,
)


# ---- tiny pipelines ---------------------------------------------------------------------------
def _bytes_to_unicode() -> list[str]:
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def tiny_clip_tokenizer(workdir: Path) -> Any:
    """A CLIPTokenizer over single byte-level characters (no merges), 514 tokens."""
    from transformers import CLIPTokenizer

    chars = _bytes_to_unicode()
    vocab: dict[str, int] = {}
    for tok in ["<|startoftext|>", "<|endoftext|>", *chars, *(c + "</w>" for c in chars)]:
        vocab.setdefault(tok, len(vocab))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (workdir / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return CLIPTokenizer(
        vocab=str(workdir / "vocab.json"), merges=str(workdir / "merges.txt"), model_max_length=77
    )


_TEXT = dict(
    bos_token_id=0,
    eos_token_id=1,
    pad_token_id=1,
    hidden_size=32,
    intermediate_size=37,
    num_attention_heads=4,
    vocab_size=600,
)


def _text_encoder() -> Any:
    from transformers import CLIPTextConfig, CLIPTextModel

    return CLIPTextModel(CLIPTextConfig(num_hidden_layers=2, **_TEXT))


def _unet(in_channels: int) -> Any:
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(
        block_out_channels=(8, 16),
        layers_per_block=1,
        sample_size=16,
        in_channels=in_channels,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=4,
        norm_num_groups=4,
    )


def _vae() -> Any:
    from diffusers import AutoencoderKL

    return AutoencoderKL(
        block_out_channels=[8, 16],
        in_channels=3,
        out_channels=3,
        down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"],
        latent_channels=4,
        norm_num_groups=4,
        sample_size=32,
    )


def _flag_everything_safety_checker() -> tuple[Any, Any]:
    """A tiny StableDiffusionSafetyChecker whose concept thresholds flag every image."""
    import torch
    from diffusers.pipelines.stable_diffusion.safety_checker import StableDiffusionSafetyChecker
    from transformers import CLIPConfig, CLIPImageProcessor

    cfg = CLIPConfig(
        text_config={**_TEXT, "num_hidden_layers": 1},
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 37,
            "num_attention_heads": 4,
            "num_hidden_layers": 1,
            "image_size": 32,
            "patch_size": 8,
        },
        projection_dim=32,
    )
    checker = StableDiffusionSafetyChecker(cfg)
    with torch.no_grad():
        checker.concept_embeds_weights.fill_(-10.0)  # cosine - (-10) > 0: always flagged
    fe = CLIPImageProcessor(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}, do_center_crop=True
    )
    return checker, fe


def build_tiny_pipelines(root: Path) -> dict[str, Path]:
    """Build and ``save_pretrained`` the three tiny pipelines under ``root``; return their dirs."""
    import torch
    from diffusers import (
        DDIMScheduler,
        EulerAncestralDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
        StableDiffusionPipeline,
    )

    tokenizer = tiny_clip_tokenizer(root / "_tokenizer_src")
    sched = dict(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", steps_offset=1)
    dirs = {k: root / k for k in ("t2i", "edit", "t2i-nsfw")}

    def t2i(checker: Any = None, fe: Any = None) -> Any:
        return StableDiffusionPipeline(
            vae=_vae(),
            text_encoder=_text_encoder(),
            tokenizer=tokenizer,
            unet=_unet(4),
            scheduler=DDIMScheduler(clip_sample=False, set_alpha_to_one=False, **sched),
            safety_checker=checker,
            feature_extractor=fe,
            requires_safety_checker=checker is not None,
        )

    torch.manual_seed(0)
    t2i().save_pretrained(dirs["t2i"])
    torch.manual_seed(1)
    StableDiffusionInstructPix2PixPipeline(
        vae=_vae(),
        text_encoder=_text_encoder(),
        tokenizer=tokenizer,
        unet=_unet(8),
        scheduler=EulerAncestralDiscreteScheduler(**sched),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    ).save_pretrained(dirs["edit"])
    torch.manual_seed(2)
    t2i(*_flag_everything_safety_checker()).save_pretrained(dirs["t2i-nsfw"])
    shutil.rmtree(root / "_tokenizer_src", ignore_errors=True)
    return dirs


@pytest.fixture(scope="session")
def tiny_diffusers() -> dict[str, Path]:
    """Paths of the tiny pipelines (``t2i``, ``edit``, ``t2i-nsfw``), cached across sessions."""
    from filelock import FileLock

    paths = {n: TINY_DIR / n for n in ("t2i", "edit", "t2i-nsfw")}

    def ready() -> bool:
        return all((p / "model_index.json").exists() for p in paths.values())

    if ready():
        return paths
    TINY_DIR.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(TINY_DIR.parent / f"{TINY_DIR.name}.lock")):
        if ready():  # built by a concurrent session while we waited
            return paths
        tmp = Path(tempfile.mkdtemp(prefix="build-", dir=TINY_DIR.parent))
        try:
            build_tiny_pipelines(tmp)
            shutil.rmtree(TINY_DIR, ignore_errors=True)
            os.replace(tmp, TINY_DIR)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return paths


# ---- helpers ----------------------------------------------------------------------------------
def make(paths: dict[str, Path], t2i: str = "t2i", **kw: Any) -> DiffusersGenerator:
    opts: dict[str, Any] = dict(
        base={
            "model": str(paths[t2i]),
            "revision": "main",
            "num_inference_steps": 2,
            "guidance_scale": 5.0,
            "height": 32,
            "width": 32,
        },
        edit={
            "model": str(paths["edit"]),
            "revision": "main",
            "num_inference_steps": 2,
            "guidance_scale": 5.0,
            "call_kwargs": {"image_guidance_scale": 1.5},
        },
        dtype="float32",
        device="cpu",
        local_files_only=True,
        batch_size=2,
        keep_both_loaded=True,
    )
    opts.update(kw)
    return DiffusersGenerator(**opts)


@pytest.fixture(scope="module")
def gen(tiny_diffusers):
    g = make(tiny_diffusers)
    yield g
    g.close()


def spec(i: int, seed: int) -> FaceSpec:
    return FaceSpec(f"f{i}", "young adult", "male", "Asian", "thin", seed, f"portrait number {i}")


def arr(img: Image.Image) -> np.ndarray:
    return np.asarray(img, dtype=np.int16)


@pytest.fixture
def spy(monkeypatch):
    """Record every pipeline call's kwargs (signature kept, so kwarg filtering still applies)."""
    calls: list[tuple[str, dict[str, Any]]] = []

    def install(pipe: Any, post: Any = None) -> list:
        cls = type(pipe)
        orig = cls.__call__

        @functools.wraps(orig)
        def wrapped(self, *args, **kwargs):
            calls.append((cls.__name__, kwargs))
            out = orig(self, *args, **kwargs)
            return post(out) if post else out

        monkeypatch.setattr(cls, "__call__", wrapped)
        return calls

    return install


# ---- tests ------------------------------------------------------------------------------------
def test_base_faces_count_size_and_prompts(gen, spy):
    calls = spy(gen.pipeline("base"))
    specs = [spec(i, 10 + i) for i in range(3)]
    res = gen.generate_faces(specs)
    assert [r.status for r in res] == ["ok"] * 3
    assert all(r.image.size == (32, 32) and r.image.mode == "RGB" for r in res)
    # batched: 3 requests at batch_size 2 -> two calls, prompts verbatim, one generator each
    assert [len(kw["prompt"]) for _, kw in calls] == [2, 1]
    assert [p for _, kw in calls for p in kw["prompt"]] == [s.prompt for s in specs]
    assert [g.initial_seed() for _, kw in calls for g in kw["generator"]] == [10, 11, 12]
    assert calls[0][1]["num_inference_steps"] == 2
    assert (calls[0][1]["height"], calls[0][1]["width"]) == (32, 32)


def test_base_faces_seeded(gen):
    a1, b1 = gen.generate_faces([spec(1, 123), spec(2, 456)])
    a2, b2 = gen.generate_faces([spec(1, 123), spec(2, 456)])
    assert np.array_equal(arr(a1.image), arr(a2.image))
    assert np.array_equal(arr(b1.image), arr(b2.image))
    (c,) = gen.generate_faces([spec(1, 124)])
    assert np.abs(arr(a1.image) - arr(c.image)).mean() > 1.0
    # the seed, not the batch position, decides the image (up to batched-kernel noise)
    _, a3 = gen.generate_faces([spec(2, 456), spec(1, 123)])
    assert np.abs(arr(a1.image) - arr(a3.image)).max() <= 2


def test_edit_receives_base_image_and_keeps_size(gen, spy):
    calls = spy(gen.pipeline("edit"))
    base = gen.generate_faces([spec(1, 5)])[0].image
    edits = [EditSpec(spec(1, 5), FACE_V, f"edit prompt {i}", 50 + i) for i in range(3)]
    res = gen.edit(base, edits)
    assert [r.status for r in res] == ["ok"] * 3
    assert all(r.image.size == base.size for r in res)
    assert [p for _, kw in calls for p in kw["prompt"]] == [e.prompt for e in edits]
    assert [g.initial_seed() for _, kw in calls for g in kw["generator"]] == [50, 51, 52]
    for _, kw in calls:
        assert all(np.array_equal(arr(im), arr(base)) for im in kw["image"])
        assert kw["image_guidance_scale"] == 1.5
        assert "height" not in kw  # InstructPix2Pix takes no height/width: not passed


def test_edit_seeded(gen):
    base = Image.new("RGB", (32, 32), (180, 160, 150))
    r1, r2, r3 = gen.edit(base, [EditSpec(spec(1, 5), FACE_V, "sunglasses", s) for s in (7, 7, 8)])
    assert np.array_equal(arr(r1.image), arr(r2.image))
    assert np.abs(arr(r1.image) - arr(r3.image)).mean() > 1.0


def test_full_body_edits_use_canvas(gen, spy):
    calls = spy(gen.pipeline("edit"))
    base = Image.new("RGB", (32, 32), (0, 0, 0))
    edits = [
        EditSpec(spec(1, 5), FACE_V, "face edit", 1),
        EditSpec(spec(1, 5), BODY_V, "full body edit", 2),
        EditSpec(spec(1, 5), FACE_V, "face edit 2", 3),
    ]
    res = gen.edit(base, edits)
    assert [r.image.size for r in res] == [(32, 32), (32, 48), (32, 32)]  # order kept
    body_call = next(kw for _, kw in calls if kw["prompt"] == ["full body edit"])
    canvas = body_call["image"][0]
    assert canvas.size == (32, 48)
    assert canvas.getpixel((16, 3)) == (0, 0, 0)  # the portrait, top-centre
    assert canvas.getpixel((16, 40)) == (255, 255, 255)  # white below it


def test_full_body_canvas_geometry():
    base = Image.new("RGB", (100, 100), (10, 20, 30))
    c = full_body_canvas(base, 200, 300, face_scale=0.5, top_margin=0.1)
    assert c.size == (200, 300)
    assert c.getpixel((100, 30 + 50)) == (10, 20, 30)
    assert c.getpixel((10, 10)) == (255, 255, 255)
    assert c.getpixel((100, 200)) == (255, 255, 255)


def test_full_body_reference_mode_needs_height_width(tiny_diffusers):
    g = make(tiny_diffusers, full_body={"mode": "reference"})
    with pytest.raises(StylisticBiasError, match="height/width"):
        g.edit(Image.new("RGB", (32, 32)), [EditSpec(spec(1, 5), BODY_V, "p", 1)])
    g.close()


def test_safety_checker_flags_are_blocked(tiny_diffusers):
    g = make(tiny_diffusers, t2i="t2i-nsfw")
    res = g.generate_faces([spec(1, 1), spec(2, 2)])
    assert [(r.status, r.reason, r.image) for r in res] == [("blocked", "nsfw filter", None)] * 2
    g.close()


def test_mixed_flags_map_per_image(gen, spy):
    def flag_first(out):
        out.nsfw_content_detected = [i == 0 for i in range(len(out.images))]
        return out

    spy(gen.pipeline("base"), post=flag_first)
    res = gen.generate_faces([spec(1, 1), spec(2, 2)])
    assert [r.status for r in res] == ["blocked", "ok"]
    assert res[1].image is not None


def test_config_errors(tiny_diffusers, tmp_path):
    with pytest.raises(StylisticBiasError, match=r"offload.*valid: none, model, sequential"):
        make(tiny_diffusers, offload="gpu")
    with pytest.raises(StylisticBiasError, match="file_format"):
        make(tiny_diffusers, file_format="gif")
    with pytest.raises(StylisticBiasError, match="not a diffusers pipeline class"):
        make(tiny_diffusers, edit={"model": "x", "pipeline": "NoSuchPipeline"})
    with pytest.raises(StylisticBiasError, match="unknown key"):
        make(tiny_diffusers, base={"model": "x", "steps": 3})
    g = make(tiny_diffusers, base={"model": str(tmp_path / "missing"), "revision": "main"})
    with pytest.raises(StylisticBiasError, match=r"cannot load base\.model"):
        g.generate_faces([spec(1, 1)])


@pytest.mark.parametrize("name", ["diffusers", "diffusers-sdxl", "diffusers-qwen"])
def test_configs_instantiate_without_loading(name):
    from stylisticbias.config import load_group_option
    from stylisticbias.dataset.rendering import BUILDER_KEYS, make_generator

    cfg = load_group_option("generator", name)
    cfg.pop("name")
    g = make_generator({k: v for k, v in cfg.items() if k not in BUILDER_KEYS})  # as the builder
    assert isinstance(g, DiffusersGenerator) and g._pipes == {}  # lazy: nothing downloaded
    assert g.file_format in ("jpg", "webp") and g.save_kwargs == {"quality": 95}
    assert "/" in g.base_settings.model and "/" in g.edit_settings.model


@pytest.mark.gpu
@pytest.mark.parametrize("offload", ["none", "model", "sequential"])
def test_cuda_dtype_and_offload_modes(tiny_diffusers, offload):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    g = make(tiny_diffusers, device="cuda", dtype="float16", offload=offload)
    r1 = g.generate_faces([spec(1, 3), spec(2, 4)])
    r2 = g.generate_faces([spec(1, 3)])
    assert [r.status for r in r1] == ["ok", "ok"]
    assert np.array_equal(arr(r1[0].image), arr(r2[0].image))
    (e,) = g.edit(r1[0].image, [EditSpec(spec(1, 3), BODY_V, "full body", 9)])
    assert e.status == "ok" and e.image.size == (32, 48)
    g.close()


def test_edit_size_without_height_width_resizes_the_input(tiny_diffusers, spy):
    edit = {
        "model": str(tiny_diffusers["edit"]),
        "num_inference_steps": 2,
        "height": 16,
        "width": 16,
    }
    g = make(tiny_diffusers, edit=edit)
    calls = spy(g.pipeline("edit"))
    (r,) = g.edit(Image.new("RGB", (32, 32)), [EditSpec(spec(1, 5), FACE_V, "p", 1)])
    assert r.image.size == (16, 16) and calls[0][1]["image"][0].size == (16, 16)
    g.close()
