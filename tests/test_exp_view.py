"""`dvc exp show` on the demo: the compact view (`make exp`) and where the plain view's columns
come from (README "Reading dvc exp show")."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from stylisticbias.config import ROOT
from stylisticbias_dev.project_copy import tool_env

#: columns of the CSV output that the table does not show
CSV_ONLY = {"rev", "typ", "parent", "State", "Executor"}


def _exp_show(*args: str) -> str:
    proc = subprocess.run(
        ["dvc", "exp", "show", "--no-pager", *args],
        cwd=ROOT, env=tool_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _columns(*args: str) -> list[str]:
    header = _exp_show("--csv", *args).splitlines()[0].split(",")
    return [c for c in header if c not in CSV_ONLY]


def _leaves(d: Any, *, lists: bool = True) -> int:
    """Leaves of a nested mapping (a list is one leaf of params; DVC drops lists of metrics)."""
    if isinstance(d, dict):
        return sum(_leaves(v, lists=lists) for v in d.values())
    return int(lists or not isinstance(d, list))


def _make_exp_keep() -> str:
    text = (ROOT / "Makefile").read_text()
    keep = re.search(r"^EXP_KEEP := (.+)$", text, re.M)
    assert keep, "EXP_KEEP not in the Makefile"
    return keep.group(1).replace("$$", "$")


def test_make_exp_is_compact_and_names_the_model_choice() -> None:
    cols = _columns("--drop", ".*", "--keep", _make_exp_keep())
    assert len(cols) <= 40, cols
    models = list(yaml.safe_load((ROOT / "params.yaml").read_text())["models"])
    want = {"Experiment", "Created", "judged_models", "protocol", "faces.n", "coverage"}
    want |= {f"models.{m}.engine.name" for m in models}
    want |= {f"{m}.{k}" for m in models for k in ("sbs", "sbs_ci_low", "sbs_ci_high")}
    assert want <= set(cols), sorted(want - set(cols))


def test_plain_view_is_every_params_leaf_every_metric_and_every_dependency() -> None:
    """What the README says the plain view holds; a DVC release that shows only the keys
    stages depend on would fail here (then dvc.yaml can narrow it)."""
    cols = _columns()
    params = _leaves(yaml.safe_load((ROOT / "params.yaml").read_text()))
    metrics = sum(
        _leaves(json.loads((ROOT / f).read_text()), lists=False)
        for f in ("reports/metrics.json", "reports/calibration.json")
    )
    workspace = json.loads(_exp_show("--json"))[0]["data"]
    deps = {Path(d).as_posix() for d in workspace["deps"]}
    assert "params.yaml" in deps and "src/stylisticbias/judge" in deps
    assert len(cols) == 2 + metrics + params + len(deps), (len(cols), metrics, params, len(deps))
    # every engine default is there, though no stage lists it by itself
    assert "models.simulated-strong.engine.lightning.num_nodes" in cols
