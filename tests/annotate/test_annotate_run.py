"""The annotate runner: planted truth recovered, reruns free, killed runs resume byte-identically,
a changed annotator keeps the earlier records aside."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import binomtest

from stylisticbias.annotate.items import AnnotationItem, attribute_question, identity_question
from stylisticbias.annotate.run import TABLE, annotate_items, make_annotator
from stylisticbias.annotate.simulated import planted_failure, planted_invalid
from stylisticbias.config import load_group_option
from stylisticbias.spec.parse import annotator_spec

ROOT = Path(__file__).resolve().parents[2]
N = 600


def spec(**over: object):
    base = annotator_spec(
        "simulated-annotator", load_group_option("annotator", "simulated-annotator")
    )
    return replace(base, **over)  # type: ignore[arg-type]


def items(n: int = N) -> list[AnnotationItem]:
    out = []
    for i in range(n):
        value = ("Blonde", "Red", "Black")[i % 3]
        out.append(
            AnnotationItem(
                image_id=f"f{i // 3:04d}-hair-{value.lower()}",
                path=f"/nonexistent/{i}.png",  # the simulated annotator reads no pixels
                base_path="/nonexistent/base.png",
                questions=(
                    attribute_question("Hair color", value.lower()),
                    identity_question("Hair color"),
                ),
                truth={"attribute": "Hair color", "value": value},
            )
        )
    return out


def test_planted_failures_and_invalid_replies_are_recovered(tmp_path: Path) -> None:
    s = spec(
        attribute_fail_rate=0.1,
        identity_fail_rate=0.2,
        malformed_rate=0.05,
        outside_rate=0.05,
        refusal_rate=0.05,
        fail_by_value={"Hair color=Red": 0.5},
    )
    its = items()
    table = annotate_items(make_annotator(s), its, tmp_path / "out", batch_size=64)
    assert len(table) == 2 * N and table["image_id"].is_monotonic_increasing
    by = {(r.image_id, r.question_id): r for r in table.itertuples()}
    for it in its:
        v = str(it.truth["value"])
        for q, check in (("attribute", "attribute"), ("identity", "identity")):
            row = by[(it.image_id, q)]
            bad = planted_invalid(s, it.image_id, q)
            if bad is not None:
                assert not row.valid and row.reason.split(":")[0] == bad and pd.isna(row.answer)
                continue
            failed = planted_failure(s, check, it.image_id, "Hair color", v)
            assert row.valid and row.answer == ('"no"' if failed else '"yes"')
            p = json.loads(row.probs)
            assert p[("no" if failed else "yes")] == pytest.approx(0.9)
    # the planted rates, per value, within their binomial 99% intervals
    att = table[(table["question_id"] == "attribute") & table["valid"]].copy()
    att["value"] = att["image_id"].str.rsplit("-", n=1).str[-1]
    for value, rate in (("blonde", 0.1), ("red", 0.5), ("black", 0.1)):
        rows = att[att["value"] == value]
        k = int((rows["answer"] == '"no"').sum())
        ci = binomtest(k, len(rows)).proportion_ci(0.99)
        assert ci.low <= rate <= ci.high, (value, k, len(rows))
    invalid = table.groupby(table["reason"].str.split(":").str[0]).size()
    for reason in ("refusal", "malformed_json", "outside_schema"):
        ci = binomtest(int(invalid.get(reason, 0)), len(table)).proportion_ci(0.99)
        assert ci.low <= 0.05 <= ci.high


class Counting:
    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, 0
        self.name, self.engine = inner.name, inner.engine

    def annotate(self, batch):
        self.calls += 1
        return self.inner.annotate(batch)

    def fingerprint(self):
        return self.inner.fingerprint()


def test_rerun_asks_nothing_and_a_changed_annotator_is_stashed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    its = items(90)
    first = Counting(make_annotator(spec()))
    annotate_items(first, its, out, 32)  # type: ignore[arg-type]
    data = (out / TABLE).read_bytes()
    assert first.calls == 3 and not (out / "shards").exists()
    again = Counting(make_annotator(spec()))
    annotate_items(again, its, out, 32)  # type: ignore[arg-type]
    assert again.calls == 0 and (out / TABLE).read_bytes() == data
    other = Counting(make_annotator(spec(seed=99)))
    annotate_items(other, its, out, 32)  # type: ignore[arg-type]
    assert other.calls == 3 and (out / TABLE).read_bytes() != data
    stashed = list((tmp_path / ".out.stash").rglob("*.parquet"))
    assert len(stashed) == 1 and stashed[0].read_bytes() == data
    back = Counting(make_annotator(spec()))  # the first configuration returns: from the stash
    annotate_items(back, its, out, 32)  # type: ignore[arg-type]
    assert back.calls == 0 and (out / TABLE).read_bytes() == data


def test_crash_then_resume_is_byte_identical(tmp_path: Path) -> None:
    its = items(200)
    clean = tmp_path / "clean"
    annotate_items(make_annotator(spec()), its, clean, 16)

    class Crash(Counting):
        def annotate(self, batch):
            if self.calls == 4:
                raise RuntimeError("killed")
            return super().annotate(batch)

    out = tmp_path / "crashed"
    with pytest.raises(RuntimeError):
        annotate_items(Crash(make_annotator(spec())), its, out, 16)  # type: ignore[arg-type]
    assert len(list((out / "shards").glob("shard-*.parquet"))) == 4
    (out / "shards" / ".shard-x.parquet.tmp").write_bytes(b"half")  # a torn write
    resumed = Counting(make_annotator(spec()))
    annotate_items(resumed, its, out, 16)  # type: ignore[arg-type]
    assert resumed.calls == 9  # 200 images, 64 answered: 136 left in batches of 16
    assert (out / TABLE).read_bytes() == (clean / TABLE).read_bytes()


KILLED = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests!r})
    from test_annotate_run import items, spec
    from stylisticbias.annotate.run import annotate_items, make_annotator
    ann = make_annotator(spec())
    inner = ann.annotate
    def slow(batch):
        time.sleep(0.3)
        return inner(batch)
    ann.annotate = slow
    annotate_items(ann, items(200), __import__("pathlib").Path({out!r}), 10)
    """
)


@pytest.mark.slow  # a real SIGKILL of a child; in-process: test_crash_then_resume_*
def test_sigkill_then_resume_is_byte_identical(tmp_path: Path) -> None:
    its = items(200)
    clean = tmp_path / "clean"
    annotate_items(make_annotator(spec()), its, clean, 10)
    out = tmp_path / "killed"
    code = KILLED.format(tests=str(Path(__file__).parent), out=str(out))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)
    t0 = time.monotonic()
    while len(list((out / "shards").glob("shard-*.parquet"))) < 3:
        assert proc.poll() is None and time.monotonic() - t0 < 600  # a hang guard only
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / TABLE).exists()
    annotate_items(make_annotator(spec()), its, out, 10)
    assert (out / TABLE).read_bytes() == (clean / TABLE).read_bytes()
    assert pd.read_parquet(out / TABLE).equals(pd.read_parquet(clean / TABLE))
