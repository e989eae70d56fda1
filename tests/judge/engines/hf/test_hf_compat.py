"""engines/hf/compat.py: the one place the hf engine touches transformers internals."""

from __future__ import annotations

import re
from pathlib import Path

from stylisticbias.judge.engines.hf import compat as hf_compat

COMPAT = Path(hf_compat.__file__)
JUDGE = COMPAT.parents[2]  # the whole judge package
#: Private transformers API the engine needs (a private method/attribute of a transformers
#: object, or an internal module): each may appear only in engines/hf/compat.py.
PRIVATE = re.compile(
    r"\._prepare_generation_config|\._prepare_special_tokens|\._eos_token_tensor"
    r"|\._get_logits_processor|\._attn_implementation|\brope_deltas\s*="
    r"|transformers\.cache_utils|transformers\.masking_utils|transformers\.integrations"
    r"|AttentionInterface|torch\.ops\.aten\._|\.layers\s*=\s*\[\]"
)


def test_private_transformers_calls_live_only_in_hf_compat() -> None:
    offenders = [
        f"{p.relative_to(JUDGE)}:{i}: {line.strip()}"
        for p in sorted(JUDGE.rglob("*.py"))
        if p != COMPAT
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line) and not line.lstrip().startswith("#")
    ]
    assert offenders == [], "\n".join(offenders)


def test_checked_range_holds_the_locked_transformers_version() -> None:
    lock = (Path(__file__).resolve().parents[4] / "requirements.lock").read_text()
    pinned = re.search(r"^transformers==([\d.]+)$", lock, re.M)
    assert pinned, "transformers is pinned in requirements.lock"
    from packaging.version import Version

    low, high = (Version(v) for v in hf_compat.CHECKED_RANGE)
    assert low <= Version(pinned.group(1)) < high
    assert hf_compat.check_version()  # the installed version (from the lock) is inside


def test_version_outside_the_range_warns_once(monkeypatch, caplog) -> None:
    import transformers

    monkeypatch.setattr(transformers, "__version__", "9.0.0")
    monkeypatch.setattr(hf_compat, "_warned", False)
    with caplog.at_level("WARNING", logger=hf_compat.__name__):
        assert not hf_compat.check_version()
        assert not hf_compat.check_version()
    msgs = [r.getMessage() for r in caplog.records if "outside the range" in r.getMessage()]
    assert len(msgs) == 1 and "9.0.0" in msgs[0]


def test_the_declared_transformers_range_is_the_checked_one() -> None:
    """An install without the lock (``pip install -e '.[dev]'``) gets a checked transformers:
    every transformers requirement of pyproject.toml is ``>=low,<high`` of CHECKED_RANGE."""
    text = (Path(__file__).resolve().parents[4] / "pyproject.toml").read_text()
    specs = re.findall(r'"transformers(?:\[\w+\])?([^"]*)"', text)
    assert specs, "transformers is declared in pyproject.toml"
    low, high = hf_compat.CHECKED_RANGE
    assert {s for s in specs if s} == {f">={low.rsplit('.', 1)[0]},<{high}"}, specs
