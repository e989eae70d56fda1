"""conf/ composed once per test process for each set of overrides.

A Hydra composition costs ~0.2 CPU-s; the dataset, importer, release and analysis tests compose
the same few configurations over and over. :func:`composed` and :func:`model_section` hand out
deep copies (tests edit what they get) of one composition per overrides, keyed on the content of
the ``conf/`` being composed too (a test's scratch copy of ``conf/``, edited or not, gets its own
composition) and on the ``STYLISTICBIAS_*`` environment (``${oc.env:...}`` in conf/). A test
about composition itself (its errors, its checks) calls :func:`stylisticbias.config.compose`.
"""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Sequence
from typing import Any

from stylisticbias.config import compose, conf_dir

_MEMO: dict[tuple[object, ...], dict[str, Any]] = {}


def _conf_digest() -> str:
    """SHA-256 over the paths and bytes of every file under the current ``conf/``."""
    root = conf_dir()
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() + b"\0")
            h.update(p.read_bytes())
    return h.hexdigest()


def composed(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """``compose(overrides)``, composed once per overrides, conf/ content and environment."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("STYLISTICBIAS_")))
    key = (tuple(overrides), _conf_digest(), env)
    if key not in _MEMO:
        _MEMO[key] = compose(list(overrides))
    return copy.deepcopy(_MEMO[key])


def model_section(name: str) -> dict[str, Any]:
    """``load_group_option("model", name)`` (a model composed with its engine), memoised."""
    return dict(composed([f"model=[{name}]"])["models"][name])
