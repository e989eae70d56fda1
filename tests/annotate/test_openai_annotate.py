"""Annotating through the openai engine against the loopback server with planted answers."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge" / "engines" / "openai"))
from servers import answered, events, free_port, start_loopback, stop

from stylisticbias.annotate.items import AnnotationItem, attribute_question, identity_question
from stylisticbias.annotate.run import TABLE, annotate_items, make_annotator
from stylisticbias.judge.engines.openai.requests import encode_image
from stylisticbias.spec.annotate import OpenAIAnnotatorSpec

ATTR, IDENT = "Is their hair color", "same person"
#: image -> (attribute reply, identity reply): content text, or ("refusal", reason)
PLANTED = {
    "a": ('{"answer": "yes"}', 'Here you go:\n```json\n{"answer": "no"}\n```'),
    "b": ('{"answer": yes', '{"answer": "probably"}'),
    "c": (("refusal", "I can't help with that."), "I'm sorry, I cannot compare people."),
    "d": ('{"answer": "no"}', '{"answer": "yes"}'),
}
EXPECT = {
    ("a", "attribute"): ('"yes"', None), ("a", "identity"): ('"no"', None),
    ("b", "attribute"): (None, "malformed_json"), ("b", "identity"): (None, "outside_schema"),
    ("c", "attribute"): (None, "refusal"), ("c", "identity"): (None, "refusal"),
    ("d", "attribute"): ('"no"', None), ("d", "identity"): ('"yes"', None),
}  # fmt: skip


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
    proc = start_loopback(port, faults={"planted": planted, "500": 0.25}, log=log,
                          with_model=False)  # fmt: skip
    spec = OpenAIAnnotatorSpec(
        name="loopback-annotator", display_name="loopback",
        endpoint={"backend": "vllm", "base_url": f"http://127.0.0.1:{port}/v1",
                  "served_model": "tiny-llava-next"},
        transport={"backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retries": 4},
        cache=str(tmp_path / "cache.sqlite"), temperature=0.0, max_tokens=64, seed=0,
        json_mode=True,
    )  # fmt: skip
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
