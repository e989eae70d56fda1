"""Annotating through the openai engine against the loopback server with planted answers."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge" / "engines" / "openai"))
from servers import answered, events, free_port, start_loopback, stop

from stylisticbias.annotate.exact import INVALID, PREFILL, UNDECIDED
from stylisticbias.annotate.items import (
    AnnotationItem,
    attribute_question,
    attribute_value_question,
    identity_question,
)
from stylisticbias.annotate.questions import validate_reply
from stylisticbias.annotate.run import TABLE, annotate_items, make_annotator
from stylisticbias.judge.engines.openai.requests import encode_image
from stylisticbias.spec.annotate import ExactAnnotationSpec, OpenAIAnnotatorSpec

ATTR, IDENT = "Is their hair color", "same person"
#: image -> (attribute reply, identity reply): content text, or ("refusal", reason)
PLANTED = {
    "a": ('{"answer": "yes"}', 'Here you go:\n```json\n{"answer": "no"}\n```'),
    "b": ('{"answer": yes', '{"answer": "probably"}'),
    "c": (("refusal", "I can't help with that."), "I'm sorry, I cannot compare people."),
    "d": ('{"answer": "no"}', '{"answer": "yes"}'),
}
EXPECT = {
    ("a", "attribute"): ('"yes"', None),
    ("a", "identity"): ('"no"', None),
    ("b", "attribute"): (None, "malformed_json"),
    ("b", "identity"): (None, "outside_schema"),
    ("c", "attribute"): (None, "refusal"),
    ("c", "identity"): (None, "refusal"),
    ("d", "attribute"): ('"no"', None),
    ("d", "identity"): ('"yes"', None),
}


def _png(path: Path, colour: tuple[int, int, int]) -> str:
    Image.new("RGB", (16, 16), colour).save(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def setup(tmp_path: Path):
    base = tmp_path / "base.png"
    _png(base, (128, 128, 128))
    items, planted = [], []
    for i, (name, (att, ident)) in enumerate(PLANTED.items()):
        path = tmp_path / f"{name}.png"
        sha = _png(path, (40 * i, 200 - 30 * i, 17 * i))
        for contains, reply in ((ATTR, att), (IDENT, ident)):
            entry = {"image": sha, "contains": contains}
            if isinstance(reply, tuple):
                entry["refusal"] = reply[1]
            else:
                entry["content"] = reply
            planted.append(entry)
        items.append(
            AnnotationItem(
                name,
                str(path),
                (attribute_question("Hair color", "blonde"), identity_question("Hair color")),
                base_path=str(base),
                sha256=sha,
            )
        )
    port = free_port()
    log = tmp_path / "server.jsonl"
    proc = start_loopback(port, faults={"planted": planted, "500": 0.25}, log=log, with_model=False)
    spec = OpenAIAnnotatorSpec(
        name="loopback-annotator",
        display_name="loopback",
        endpoint={
            "backend": "vllm",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "served_model": "tiny-llava-next",
        },
        transport={"backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retries": 4},
        cache=str(tmp_path / "cache.sqlite"),
        temperature=0.0,
        max_tokens=64,
        seed=0,
        json_mode=True,
    )
    yield items, spec, log
    stop(proc)


def test_planted_answers_are_reproduced_and_invalid_ones_kept(setup, tmp_path: Path) -> None:
    items, spec, log = setup
    table = annotate_items(make_annotator(spec), items, tmp_path / "out", batch_size=3)
    assert len(table) == 8
    for row in table.itertuples():
        answer, reason = EXPECT[(row.image_id, row.question_id)]
        assert (None if pd.isna(row.answer) else row.answer) == answer, row
        got = None if pd.isna(row.reason) else row.reason.split(":")[0]
        assert got == reason, row
        assert row.valid is (reason is None) or bool(row.valid) == (reason is None)
        assert row.engine == "openai" and row.annotator == "loopback-annotator"
    assert len(answered(log)) == 8  # one answered request per (image, question)
    assert any(e["event"] == "500" for e in events(log))  # retried, not recorded as an answer
    # the request: images first (base face first for the identity check), JSON mode, seed
    ann = make_annotator(spec)
    images = [encode_image(items[0].base_path), encode_image(items[0].path)]
    req = ann.request(items[0].questions[1], images)
    parts = req.body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["image_url", "image_url", "text"]
    assert parts[0]["image_url"]["url"] == images[0].data_url  # the base face first
    assert req.body["response_format"] == {"type": "json_object"} and req.body["seed"] == 0
    assert req.body["temperature"] == 0.0
    ann.close()


def test_rerun_is_free(setup, tmp_path: Path) -> None:
    items, spec, log = setup
    first = annotate_items(make_annotator(spec), items, tmp_path / "one", batch_size=4)
    n = len(events(log))
    # a fresh output directory (no finished records): every answer comes from the cache
    again = annotate_items(make_annotator(spec), items, tmp_path / "two", batch_size=2)
    assert len(events(log)) == n
    assert (tmp_path / "one" / TABLE).read_bytes() == (tmp_path / "two" / TABLE).read_bytes()
    assert first.equals(again)
    fp = json.loads((tmp_path / "one" / "_fingerprint.json").read_text())
    assert "cache" not in fp["annotator"] and "transport" not in fp["annotator"]


# ---- exact answer distributions from top log-probabilities -----------------------------------


EOS = "</s>"
#: partial reply after the prefill -> the server's top [token, raw logprob] (a planted tree)
TREE = {
    "": [["yes", -0.3], ["no", -1.6], ["red", -2.5], ["bl", -3.0], ["I", -5.0]],
    "yes": [['"}', -0.05], ['"', -3.5], [EOS, -4.0]],
    "no": [['"}', -0.1], ["!", -2.5]],
    "red": [['"}', -0.2], ["dish", -1.8]],
    "bl": [["onde", -0.4], ["ack", -1.2], ["ue", -3.0]],
    "blonde": [['"}', -0.01]],
    "black": [['"}', -0.02], [" ", -4.5]],
    'yes"}': [[EOS, -0.001], ["\n", -7.0]],
    'no"}': [[EOS, -0.002]],
    'red"}': [[EOS, -0.003]],
    'blonde"}': [[EOS, -0.0001]],
    'black"}': [[EOS, -0.0002]],
}
TEMPERATURE, MAX_NEW = 0.7, 4


def reference(q, tree, t: float, max_new: int) -> dict[str, float]:
    """The distribution by hand: tempered top-k plus the unseen tail's bound per node, every
    finished reply (EOS or the token limit) validated; no pruning."""
    out = {c: 0.0 for c in q.choices} | {"invalid": 0.0, "undecided": 0.0}

    def walk(partial: str, n: int, p: float) -> None:
        top = tree.get(partial, [[EOS, 0.0]])
        seen = sum(np.exp(lp) for _, lp in top)
        lmin = min(lp for _, lp in top)
        tail = max(0.0, 1.0 - seen) * np.exp(lmin * (1.0 / t - 1.0))  # t <= 1
        z = sum(np.exp(lp / t) for _, lp in top) + tail
        out["undecided"] += p * tail / z
        for tok, lp in top:
            child = p * np.exp(lp / t) / z
            if tok == EOS or n + 1 >= max_new:
                text = partial if tok == EOS else partial + tok
                answer, valid, _ = validate_reply(q, PREFILL + text)
                out[str(answer) if valid else "invalid"] += child
            else:
                walk(partial + tok, n + 1, child)

    walk("", 0, 1.0)
    return out


def test_exact_probabilities_from_top_logprobs(tmp_path):
    paths = []
    for i in range(2):
        p = tmp_path / f"x{i}.png"
        _png(p, (30 + 90 * i, 60, 200 - 80 * i))
        paths.append(p)
    refused = hashlib.sha256(paths[1].read_bytes()).hexdigest()
    qs = (
        attribute_question("Hair color", "red"),
        attribute_value_question("Hair color", ["red", "blonde", "black"]),
    )
    items = [AnnotationItem(f"x{i}", str(p), qs) for i, p in enumerate(paths)]
    planted = {PREFILL + k: v for k, v in TREE.items()} | {"*": [[EOS, 0.0]]}
    port = free_port()
    log = tmp_path / "server.jsonl"
    proc = start_loopback(
        port,
        faults={"planted_logprobs": planted, "refuse_images": [refused]},
        log=log,
        with_model=False,
    )
    try:
        spec = OpenAIAnnotatorSpec(
            name="loopback-exact",
            display_name="loopback",
            endpoint={
                "backend": "vllm",
                "base_url": f"http://127.0.0.1:{port}/v1",
                "served_model": "tiny-llava-next",
                "capabilities": {"logprobs": True, "eos_tokens": [EOS]},
            },
            transport={"backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retries": 2},
            cache=str(tmp_path / "cache.sqlite"),
            temperature=0.0,
            max_tokens=64,
            seed=0,
            json_mode=True,
            exact=True,
            exact_settings=ExactAnnotationSpec(
                temperature=TEMPERATURE,
                max_new_tokens=MAX_NEW,
                prune_threshold=1e-15,
                top_logprobs=20,
            ),
        )
        ann = make_annotator(spec)
        try:
            table = annotate_items(ann, items, tmp_path / "out", 8)
        finally:
            ann.close()
        n_requests = len(answered(log))
        ann = make_annotator(spec)  # a rerun: every request from the cache
        try:
            again = annotate_items(ann, items, tmp_path / "out2", 8)
        finally:
            ann.close()
        assert len(answered(log)) == n_requests
    finally:
        stop(proc)
    pd.testing.assert_frame_equal(table, again)
    for q in qs:
        want = reference(q, TREE, TEMPERATURE, MAX_NEW)
        row = table[(table["image_id"] == "x0") & (table["question_id"] == q.id)].iloc[0]
        probs = json.loads(row["probs"])
        assert set(probs) == {*q.choices, INVALID, UNDECIDED}
        for c in q.choices:
            assert abs(probs[c] - want[c]) < 1e-9, (q.id, c, probs[c], want[c])
        assert abs(probs[INVALID] - want["invalid"]) < 1e-9
        assert abs(probs[UNDECIDED] - want["undecided"]) < 1e-9
        assert want["undecided"] > 1e-4  # the unseen-mass bound is really exercised
        top = max([*q.choices, "invalid"], key=lambda c: want[c])
        assert row["valid"] == (top != "invalid")
        if row["valid"]:  # the reply: the modal answer's most probable branch
            assert json.loads(row["answer"]) == top
            assert row["response"].startswith(PREFILL + top)
        else:  # most mass on replies outside the schema: the modal reply is one of them
            assert row["reason"].startswith(("outside_schema", "malformed_json"))
    # the yes/no question reads "red" and "blonde" as outside its schema: invalid mass
    yn = json.loads(
        table[(table["image_id"] == "x0") & (table["question_id"] == "attribute")].iloc[0]["probs"]
    )
    assert yn[INVALID] > 0.05
    # a refused image: kept as invalid with the refusal, all its mass invalid
    bad = table[table["image_id"] == "x1"]
    assert (~bad["valid"]).all() and bad["reason"].str.startswith("refusal").all()
    assert all(json.loads(p)[INVALID] == 1.0 for p in bad["probs"])


def test_exact_needs_logprobs(tmp_path):
    spec = OpenAIAnnotatorSpec(
        name="no-logprobs",
        display_name="x",
        endpoint={"backend": "vllm", "base_url": "http://127.0.0.1:9/v1", "served_model": "m"},
        cache=str(tmp_path / "c.sqlite"),
        temperature=0.0,
        max_tokens=8,
        seed=0,
        json_mode=False,
        exact=True,
    )
    with pytest.raises(Exception, match=r"capabilities\.logprobs"):
        make_annotator(spec)
