"""The SQLite response cache: durable across connections, keyed by the full request, prunable."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.openai.cache import ResponseCache
from stylisticbias.judge.engines.openai.requests import EncodedImage, RequestBuilder
from stylisticbias.judge.engines.openai.spec import endpoint_spec

MODEL = {
    "name": "m",
    "endpoint": {
        "base_url": "http://h:1/v1",
        "served_model": "s",
        "backend": "vllm",
        "capabilities": {"logprobs": True, "assistant_prefill": "continue_final_message"},
    },
}


def _builder(model: dict | None = None, temperature: float = 0.2) -> RequestBuilder:
    return RequestBuilder(endpoint_spec(model or MODEL), temperature, 16)


def test_key_covers_image_prompt_seed_decoding_and_endpoint() -> None:
    img = EncodedImage("a" * 64, "data:image/png;base64,AAAA")
    other_bytes = EncodedImage("a" * 64, "data:image/png;base64,BBBB")  # same sha: same key
    b = _builder()
    k = b.generate(img, "prompt", 1).key
    assert b.generate(other_bytes, "prompt", 1).key == k
    assert b.generate(EncodedImage("b" * 64, img.data_url), "prompt", 1).key != k
    assert b.generate(img, "prompt!", 1).key != k
    assert b.generate(img, "prompt", 2).key != k
    assert _builder(temperature=0.3).generate(img, "prompt", 1).key != k
    other = {**MODEL, "endpoint": {**MODEL["endpoint"], "base_url": "http://h:2/v1"}}
    assert _builder(other).generate(img, "prompt", 1).key != k
    served = {**MODEL, "endpoint": {**MODEL["endpoint"], "served_model": "t"}}
    assert _builder(served).generate(img, "prompt", 1).key != k
    assert b.logprobs(img, "prompt", "", 20).key != b.logprobs(img, "prompt", "(", 20).key
    assert b.logprobs(img, "prompt", "(", 20).key != b.logprobs(img, "prompt", "(", 5).key
    # the body sent carries the image itself, the key only its sha256
    sent = b.generate(img, "prompt", 1).body
    assert sent["messages"][0]["content"][0]["image_url"]["url"] == img.data_url
    assert sent["messages"][0]["content"][1] == {"type": "text", "text": "prompt"}


def test_durable_across_connections_and_prunable(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    c = ResponseCache(path)
    for i in range(3):
        c.put(
            f"k{i}",
            {"content": f"({i})"},
            endpoint="http://h:1/v1",
            served_model="s",
            image_sha256="x",
            kind="generate",
            prompt_tokens=10,
            completion_tokens=2,
        )
    c.put(
        "o",
        {"content": "x"},
        endpoint="http://h:2/v1",
        served_model="t",
        image_sha256="x",
        kind="generate",
    )
    c.close()  # a new process sees every row that was put
    c2 = ResponseCache(path)
    assert c2.get("k1") == {"content": "(1)"} and c2.get("nope") is None
    st = c2.stats()
    assert st.rows == 4 and st.prompt_tokens == 30 and st.completion_tokens == 6
    assert c2.prune() == 0  # no criterion: nothing goes
    assert c2.prune(served_model="t") == 1 and c2.stats().rows == 3
    c2._db.execute("UPDATE responses SET last_used = ? WHERE key = 'k0'", (time.time() - 9e5,))
    assert c2.prune(older_than_days=5) == 1
    assert not c2.contains("k0") and c2.contains("k2")


def test_cli_stats_and_prune(tmp_path: Path, caplog) -> None:
    import logging

    from stylisticbias.judge.openai_cli import main

    path = tmp_path / "c.sqlite"
    c = ResponseCache(path)
    c.put(
        "k",
        {"content": "(a)"},
        endpoint="http://h:1/v1",
        served_model="s",
        image_sha256="x",
        kind="generate",
        prompt_tokens=5,
    )
    c.close()
    caplog.set_level(logging.INFO)
    assert main(["cache", "stats", "--cache", str(path)]) == 0
    assert "1 response(s)" in caplog.text and "s @ http://h:1/v1" in caplog.text
    assert main(["cache", "prune", "--cache", str(path)]) == 2  # no criterion: refused
    assert main(["cache", "prune", "--cache", str(path), "--served-model", "s"]) == 0
    assert ResponseCache(path).stats().rows == 0
    assert main(["cache", "stats", "--cache", str(tmp_path / "none.sqlite")]) == 2


def test_a_read_only_view_creates_nothing_and_sees_what_is_stored(tmp_path: Path) -> None:
    """The dry-run estimate's view: no directory, no empty SQLite file; stored keys found."""
    path = tmp_path / "new" / "api-responses.sqlite"
    ro = ResponseCache(path, read_only=True)
    assert not ro.contains("k") and not path.parent.exists()
    ro.close()
    rw = ResponseCache(path)
    rw.put("k", {"text": "(a)"}, endpoint="e", served_model="s", image_sha256=None, kind="g")
    rw.close()
    before = path.read_bytes()
    ro = ResponseCache(path, read_only=True)
    assert ro.contains("k") and not ro.contains("other")
    ro.close()
    assert path.read_bytes() == before


@pytest.mark.parametrize("read_only", [False, True])
def test_a_file_that_is_no_cache_is_one_line_and_left_as_it_is(
    tmp_path: Path, read_only: bool
) -> None:
    """``engine.cache`` naming a file SQLite cannot read (any other file, or a damaged cache):
    one line naming it, not sqlite3's traceback from the judge stage, ``export`` or ``import``;
    the file keeps its bytes and no journal is left beside it."""
    path = tmp_path / "api-responses.sqlite"
    path.write_bytes(b"precious, not a database\n" * 8)
    with pytest.raises(StylisticBiasError) as exc:
        ResponseCache(path, read_only=read_only)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{path}: not a readable response cache")
    assert "engine.cache" in msg
    assert path.read_bytes() == b"precious, not a database\n" * 8
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
