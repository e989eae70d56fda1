"""The ``hf`` annotator on the tiny random-weight checkpoints.

Plumbing: replies of a random-weight model are garbage, so most are invalid -- each keeps a
reason the validator gave, and the table passes the ANNOTATIONS schema.

Exactness: the categorical/yes-no distribution the annotator computes (shared prefix, prefill,
the engine's exact expansion, every finished branch read by the validator) must equal an
independent enumeration to 1e-5 -- every answer sequence after the prefill, a full forward over
prompt + prefill + answer so far per node (no cache, no prompt split), ``generate``'s logits
processors, each finished reply validated as a whole. So that the answers carry real mass, the
test plants a JSON answer grammar (``"`` -> ``yes``/``no``/``}``...) into the tiny model in
memory (``tiny.plant_grammar``); with the random weights as built, almost all mass is invalid.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from stylisticbias import schemas
from stylisticbias.annotate.exact import INVALID, PREFILL, UNDECIDED
from stylisticbias.annotate.hf import HFAnnotator
from stylisticbias.annotate.items import (
    AnnotationItem,
    attribute_question,
    attribute_value_question,
    identity_question,
)
from stylisticbias.annotate.questions import validate_reply
from stylisticbias.annotate.tables import ANNOTATIONS, COLUMNS
from stylisticbias.spec.annotate import ExactAnnotationSpec, HFAnnotatorSpec
from stylisticbias_dev import tiny

ROOT = Path(__file__).resolve().parents[2]
TINY_DIR = ROOT / "tests" / ".tiny_models"
ARCH = "llava_next"
TOL = 1e-5
EPS = 1e-7  # children below are not expanded (their total is asserted < 1e-6)
#: a bigram JSON-answer grammar planted for the exactness test (after the prefill's ``"``)
JSON_GRAMMAR = {
    '"': {"y": 2.0, "n": 2.0, "r": 1.0, "}": 1.5, "m": 0.5},
    "y": {"e": 4.0},
    "e": {"s": 4.0, "d": 1.0},
    "s": {'"': 4.0},
    "n": {"o": 4.0},
    "o": {'"': 4.0},
    "r": {"e": 4.0},
    "d": {'"': 4.0},
    "m": {"a": 3.0},
    "a": {"y": 3.0},
    "}": {"<eos>": 4.0},
}


def _png(path: Path, seed: int) -> str:
    rs = np.random.RandomState(seed)
    Image.fromarray((rs.rand(48, 80, 3) * 255).astype("uint8")).save(path)
    return str(path)


def _spec(exact: bool, **over) -> HFAnnotatorSpec:
    path = tiny.ensure_built(ARCH, TINY_DIR / ARCH)
    es = ExactAnnotationSpec(
        **{
            "temperature": 1.0,
            "max_new_tokens": 6,
            "prune_threshold": 1e-6,
            "max_branches_per_suffix": 256,
            **over,
        }
    )
    return HFAnnotatorSpec(
        name="tiny-annotator",
        display_name="tiny",
        hub_id=str(path),
        dtype="float32",
        device="cpu",
        temperature=0.0,
        max_tokens=12,
        seed=0,
        exact=exact,
        exact_settings=es,
    )


def _items(tmp_path: Path) -> list[AnnotationItem]:
    base = _png(tmp_path / "base.png", 0)
    qs = (
        attribute_question("Hair color", "red"),
        identity_question("Hair color"),
        attribute_value_question("Hair color", ["red", "yes", "no"]),
    )
    return [
        AnnotationItem(f"img{i}", _png(tmp_path / f"e{i}.png", i + 1), qs, base_path=base)
        for i in range(2)
    ]


@pytest.fixture(scope="module")
def annotator():
    ann = HFAnnotator(_spec(exact=True))
    ann.setup()
    return ann


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
def enumerate_answers(ann: HFAnnotator, images, q) -> dict[str, float]:
    """Every reply after the prefill, a full forward per node; mass per answer and invalid."""
    enc = ann._inputs(q.prompt(), images)
    tok = ann.processor.tokenizer
    pre = tok(PREFILL, add_special_tokens=False)["input_ids"]
    seq = enc["input_ids"].shape[1]
    e = ann.spec.exact_settings
    procs, eos = _processors(ann.model, e.temperature, enc["input_ids"], e.max_new_tokens)

    def next_probs(gen: list[int]) -> torch.Tensor:
        inputs = {}
        for key, v in enc.items():
            if hasattr(v, "shape") and v.ndim >= 2 and v.shape[0] == 1 and v.shape[1] == seq:
                n = len(pre) + len(gen)
                if key == "input_ids":
                    tail = torch.tensor([pre + gen], dtype=v.dtype)
                elif key == "attention_mask":
                    tail = torch.ones((1, n), dtype=v.dtype)
                else:
                    tail = torch.zeros((1, n), dtype=v.dtype)
                inputs[key] = torch.cat([v, tail], 1)
            else:
                inputs[key] = v
        logits = ann.model(**inputs, use_cache=False).logits[:, -1].float()
        return torch.softmax(procs(inputs["input_ids"], logits), dim=-1)[0].to(torch.float64)

    out = {c: 0.0 for c in q.choices} | {"invalid": 0.0}
    unexplored = 0.0
    stack: list[tuple[list[int], float]] = [([], 1.0)]
    while stack:
        gen, p = stack.pop()
        probs = next_probs(gen) * p
        for t in torch.nonzero(probs > 0).flatten().tolist():
            mass = float(probs[t])
            if mass < EPS:
                unexplored += mass
                continue
            g = [*gen, t]
            if t in eos or len(g) >= e.max_new_tokens:
                text = PREFILL + tok.decode(g, skip_special_tokens=True)
                answer, valid, _ = validate_reply(q, text)
                out[str(answer) if valid else "invalid"] += mass
            else:
                stack.append((g, mass))
    assert unexplored < 1e-6
    return out


def test_random_weights_answer_garbage_kept_invalid_with_reasons(tmp_path, annotator):
    ann = HFAnnotator(_spec(exact=False))
    ann.model, ann.processor = annotator.model, annotator.processor  # the as-built weights
    rows = pd.DataFrame(ann.annotate(_items(tmp_path)), columns=COLUMNS)
    rows = schemas.validate(rows, ANNOTATIONS, "hf annotations")
    assert len(rows) == 6 and set(rows["engine"]) == {"hf"}
    bad = rows[~rows["valid"]]
    assert len(bad) >= 4  # random weights: garbage
    assert (
        bad["reason"]
        .str.split(":")
        .str[0]
        .isin(["malformed_json", "refusal", "outside_schema"])
        .all()
    )
    assert rows["response"].notna().all() and rows["probs"].isna().all()
    # seeded: the same replies again
    again = pd.DataFrame(ann.annotate(_items(tmp_path)), columns=COLUMNS)
    assert again["response"].tolist() == rows["response"].tolist()


def _planted_annotator(base: HFAnnotator) -> HFAnnotator:
    import copy

    ann = HFAnnotator(base.spec)
    ann.processor = base.processor
    ann.model = copy.deepcopy(base.model)
    tiny.plant_grammar(ann.model, ann.processor.tokenizer, '"', grammar=JSON_GRAMMAR)
    return ann


def test_exact_answer_distribution_matches_enumeration(tmp_path, annotator):
    ann = _planted_annotator(annotator)
    items = _items(tmp_path)
    one = [Image.open(items[0].path).convert("RGB")]
    two = [Image.open(str(items[0].base_path)).convert("RGB"), one[0]]
    single = [q for q in items[0].questions if q.images == 1]
    dists = ann.distributions(one, single) + ann.distributions(two, [items[0].questions[1]])
    questions = [*single, items[0].questions[1]]
    seen_answer_mass = 0.0
    with torch.inference_mode():
        for q, d in zip(questions, dists):
            want = enumerate_answers(ann, one if q.images == 1 else two, q)
            for k, v in want.items():
                assert abs(d.mass[k] - v) < TOL, (q.id, k, d.mass[k], v)
            assert abs(sum(d.mass.values()) + d.undecided - 1.0) < 1e-6  # float32 softmax
            seen_answer_mass += sum(d.mass[c] for c in q.choices)
    assert seen_answer_mass > 0.2  # the planted grammar puts real mass on the answers

    # the rows: probs = the distribution (+ invalid, undecided); the reply the modal answer's
    rows = pd.DataFrame(ann.annotate(items[:1]), columns=COLUMNS)
    rows = schemas.validate(rows, ANNOTATIONS, "hf annotations")
    for q, d in zip(questions, dists):
        row = rows[rows["question_id"] == q.id].iloc[0]
        probs = json.loads(row["probs"])
        assert set(probs) == {*q.choices, INVALID, UNDECIDED}
        for c in q.choices:
            assert abs(probs[c] - d.mass[c]) < 1e-6  # probs rescaled to sum to 1
        top = max([*q.choices, "invalid"], key=lambda k: d.mass[k])
        assert row["valid"] == (top != "invalid")
        if row["valid"]:
            assert json.loads(row["answer"]) == top and row["response"].startswith(PREFILL)


def test_exact_needs_a_positive_temperature():
    with pytest.raises(Exception, match="temperature > 0"):
        _spec(exact=True, temperature=0.0)
