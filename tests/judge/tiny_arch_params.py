"""The tiny architectures as pytest parameters, in two tiers.

An exactness test that costs tens of seconds per architecture runs on one architecture in
``make test`` and on every other one in the slow tier (``make test-slow``; ``make test-all``
runs them all). Each heavy test names its fast architecture, spread so that every architecture
is exercised by some heavy test in ``make test``; cheap per-architecture tests keep
``fast=ALL``::

    @pytest.mark.parametrize("arch", arch_params(fast=("qwen3_vl",)))
    def test_something_expensive(arch, benchmark): ...

An architecture whose processor needs a package that is not installed is skipped with a reason.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from stylisticbias_dev import tiny

ALL: tuple[str, ...] = tiny.ARCHITECTURES


def arch_params(archs: Iterable[str] = ALL, fast: Iterable[str] = ALL) -> list:
    """``archs`` as ``pytest.param``s: skipped when a requirement is missing, ``slow`` unless in
    ``fast``."""
    fast = set(fast)
    out = []
    for a in archs:
        marks = [
            pytest.mark.skipif(
                tiny.missing_requirement(a) is not None,
                reason=f"{a} processor needs {tiny.missing_requirement(a)}",
            )
        ]
        if a not in fast:
            marks.append(pytest.mark.slow)
        out.append(pytest.param(a, marks=marks, id=a))
    return out
