"""The demo report's numbers are those of the pipeline before the configuration rework.

``tests/data/demo_metrics_before_config_rework.json`` is ``reports/metrics.json`` as committed
before the typed configuration / composed models change (commit 0021ab6); the committed
numbers of today's demo (``reports/metrics_all.json``: every number; ``metrics.json`` holds the
headline) (``make repro`` rewrites them) must carry the same numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from stylisticbias.config import project_root

BEFORE = Path(__file__).parent / "data" / "demo_metrics_before_config_rework.json"


def _flat(obj: object, prefix: str = "") -> dict[str, object]:
    if isinstance(obj, dict):
        out: dict[str, object] = {}
        for k, v in obj.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): obj}


def test_demo_metrics_unchanged() -> None:
    before = _flat(json.loads(BEFORE.read_text()))
    now = _flat(
        json.loads((project_root() / "reports" / "stylisticbias" / "metrics_all.json").read_text())
    )
    missing = sorted(set(before) - set(now))
    assert not missing, f"metrics gone: {missing[:10]}"
    changed = {
        k: (before[k], now[k])
        for k in before
        if not (
            before[k] == now[k]
            or (
                isinstance(before[k], float)
                and isinstance(now[k], float)
                and math.isclose(before[k], now[k], rel_tol=1e-9, abs_tol=1e-12)
            )
        )
    }
    assert not changed, f"{len(changed)} demo metric(s) changed, e.g. {list(changed.items())[:5]}"
