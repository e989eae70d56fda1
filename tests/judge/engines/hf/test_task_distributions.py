"""Exact k-option distributions of ``choice_k`` prompts on the tiny checkpoints.

The engine's shared-prefix expansion over the k labels (:func:`label_distributions`) must equal
an independent full enumeration of every answer the tiny model can give (a full forward over
prompt + answer for each node, no cache, ``generate``'s logits processors, each finished answer
read by the parser over the k labels) to 1e-5, for every option and ``invalid``. The
enumeration is the one of ``test_exact_enumeration`` with the task's parser rules. The engine
prunes at 1e-6 here (production: 1e-4): the pruned mass is reported as undecided, and at 1e-4
a two-image prompt's undecided mass (~1.6e-5) alone exceeds the tolerance.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from stylisticbias.benchmark import load_benchmark
from stylisticbias.judge.engines.hf.engine import HFJudgeEngine
from stylisticbias.judge.engines.hf.tasks import label_distributions
from stylisticbias.judge.protocol.parsing import parse_response
from stylisticbias.judge.protocol.tasks.registry import task_of
from stylisticbias_dev import tiny

ROOT = Path(__file__).resolve().parents[4]
TINY_DIR = ROOT / "tests" / ".tiny_models"
TASKS = ROOT / "tests" / "data" / "protocols" / "tasks.yaml"
TOL = 1e-5
EPS = 1e-11
ARCHS = [
    pytest.param(
        a,
        marks=pytest.mark.skipif(
            tiny.missing_requirement(a) is not None,
            reason=f"{a} processor needs {tiny.missing_requirement(a)}",
        ),
    )
    for a in tiny.ARCHITECTURES
]


def _image(i: int) -> Image.Image:
    rs = np.random.RandomState(i)
    return Image.fromarray((rs.rand(48, 80, 3) * 255).astype("uint8"))


def _engine(arch: str, temperature: float = 0.2) -> HFJudgeEngine:
    path = tiny.ensure_built(arch, TINY_DIR / arch)
    eng = HFJudgeEngine(
        {"name": f"tiny-{arch}", "hub_id": str(path), "dtype": "float32"},
        {
            "name": "hf",
            "decoding": "exact",
            "device": "cpu",
            "prune_threshold": 1e-6,
            "max_branches_per_suffix": 64,
        },
        {
            "orderings": [1],
            "seeds": [1],
            "scenarios": [7],
            "temperature": temperature,
            "max_new_tokens": 6,
        },
        load_benchmark(TASKS),
    )
    eng.setup("cpu")
    return eng


def _processors(model, temperature: float, prompt_ids: torch.Tensor, max_new: int):
    kwargs = {"do_sample": True, "temperature": temperature, "max_new_tokens": max_new}
    cfg, _ = model._prepare_generation_config(None, **kwargs)
    model._prepare_special_tokens(cfg, True, device=model.device, batch_size=1)
    procs = model._get_logits_processor(
        generation_config=cfg,
        input_ids_seq_length=prompt_ids.shape[-1],
        encoder_input_ids=prompt_ids,
        prefix_allowed_tokens_fn=None,
        logits_processor=None,
        device=prompt_ids.device,
        model_kwargs={},
    )
    eos = cfg._eos_token_tensor
    return procs, set() if eos is None else {int(x) for x in eos.reshape(-1).tolist()}


@torch.inference_mode()
def enumerate_labels(eng: HFJudgeEngine, img: Image.Image, text: str, rules) -> dict[str, float]:
    """Every answer sequence, full forward per node; mass per label and invalid."""
    enc = eng.encode_prompt(text, img)
    seq = enc["input_ids"].shape[1]
    max_new = eng.decoding_params.max_new_tokens
    procs, eos = _processors(eng.model, eng.decoding_params.temperature, enc["input_ids"], max_new)
    tok = eng.processor.tokenizer

    def next_probs(gen: list[int]) -> torch.Tensor:
        inputs = {}
        for key, v in enc.items():
            if hasattr(v, "shape") and v.ndim >= 2 and v.shape[0] == 1 and v.shape[1] == seq:
                if key == "input_ids":
                    tail = torch.tensor([gen], dtype=v.dtype)
                elif key == "attention_mask":
                    tail = torch.ones((1, len(gen)), dtype=v.dtype)
                else:
                    tail = torch.zeros((1, len(gen)), dtype=v.dtype)
                inputs[key] = torch.cat([v, tail], 1)
            else:
                inputs[key] = v
        logits = eng.model(**inputs, use_cache=False).logits[:, -1].float()
        return torch.softmax(procs(inputs["input_ids"], logits), dim=-1)[0].to(torch.float64)

    out = {x: 0.0 for x in rules.letters} | {"invalid": 0.0}
    unexplored = 0.0
    stack: list[tuple[list[int], float]] = [([], 1.0)]
    while stack:
        gen, p = stack.pop()
        probs = next_probs(gen) * p
        for t in torch.nonzero(probs > 0).flatten().tolist():
            q = float(probs[t])
            if q < EPS:
                unexplored += q
                continue
            g = [*gen, t]
            if t in eos or len(g) >= max_new:
                label = parse_response(tok.decode(g, skip_special_tokens=True), rules)
                out[label or "invalid"] += q
            else:
                stack.append((g, q))
    assert unexplored < 1e-7
    return out


@pytest.mark.parametrize("arch", ARCHS[:1])
def test_k_option_distribution_equals_enumeration(arch: str) -> None:
    eng = _engine(arch)
    bench = eng.benchmark
    sc = bench.task_scenario(101)
    task = task_of(sc)
    rules = task.rules(sc, bench)
    assert rules.letters == ("a", "b", "c", "d", "e", "f")
    (prompt,) = task.prompts(sc, bench)
    # two prompts of one image share a prefix: the k-option prompt and a second wording
    texts = [prompt.text, prompt.text.replace("annual salary", "yearly income")]
    img = _image(0)
    with torch.inference_mode():
        dists = eng.label_distributions(img, texts, rules)
    assert len(dists) == 2
    for text, d in zip(texts, dists):
        mass, und = d.normalised()
        assert set(mass) == {"a", "b", "c", "d", "e", "f", "invalid"}
        want = enumerate_labels(eng, img, text, rules)
        # not vacuous: the tiny model answers with labels (its grammar writes (a)/(b))
        assert sum(want[x] for x in rules.letters) > 0.5
        for v, p in want.items():
            assert abs(mass[v] - p) <= TOL, (v, mass, want, und)
    # the task maps the exact label masses to its outcome space unchanged (choice_k)
    out = task.distribution(dists[0].mass, sc, prompt, bench)
    assert list(out) == [*sc.labels, "invalid"]
    # one prompt alone works too (its suffix is its last token)
    with torch.inference_mode():
        (alone,) = label_distributions(eng, img, texts[:1], rules)
    assert alone.normalised()[0] == pytest.approx(dists[0].normalised()[0], abs=1e-9)


@pytest.mark.parametrize("arch", ARCHS[:1])
def test_two_image_prompt_reaches_the_model_and_equals_enumeration(arch: str) -> None:
    """A pairwise prompt carries both images (pixel values of two images, twice one image's
    image tokens in the prompt), and its exact distribution over the two labels equals the
    enumeration of the two-image prompt."""
    from stylisticbias.judge.engines.hf.prompts import image_token_id
    from stylisticbias.judge.protocol.tasks.pairwise import slot_images

    eng = _engine(arch)
    bench = eng.benchmark
    sc = bench.task_scenario(102)
    task = task_of(sc)
    rules = task.rules(sc, bench)
    p0, p1 = task.prompts(sc, bench)
    first, second = _image(3), _image(4)
    one = eng.encode_prompt(p0.text, first)
    two = eng.encode_prompt(p0.text, slot_images(p0, first, second))
    tid = image_token_id(eng.model, eng.processor)
    n_one = int((one["input_ids"][0] == tid).sum())
    assert n_one > 0 and int((two["input_ids"][0] == tid).sum()) == 2 * n_one
    assert two["pixel_values"].shape[0] == 2 * one["pixel_values"].shape[0]
    got = {}
    for p in (p0, p1):
        imgs = slot_images(p, first, second)
        with torch.inference_mode():
            (d,) = eng.label_distributions(imgs, [p.text], rules)
        mass, _ = d.normalised()
        want = enumerate_labels(eng, imgs, p.text, rules)
        for v, q in want.items():
            assert abs(mass[v] - q) <= TOL, (v, mass, want)
        got[p.variant] = task.distribution(mass, sc, p, bench)
    # the swap changes the model's input: the two orders' distributions differ
    assert abs(got[0]["first"] - got[1]["first"]) > 1e-6
