"""`dvc exp show` on the demo: the plain view is at most 40 columns and names an experiment's
model choice (README "Reading dvc exp show")."""

from __future__ import annotations

import csv
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from stylisticbias.config import ROOT
from stylisticbias_dev.project_copy import copy_project, tool_env

#: columns of the CSV output that the table does not show
CSV_ONLY = {"rev", "typ", "parent", "State", "Executor"}
#: the columns the plain view may have on the demo (issue target)
MAX_COLUMNS = 40


def _run(root: Path, *args: str) -> str:
    proc = subprocess.run(args, cwd=root, env=tool_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _exp_show(root: Path, *args: str) -> str:
    return _run(root, "dvc", "exp", "show", "--no-pager", *args)


def _columns(root: Path, *args: str) -> list[str]:
    header = _exp_show(root, "--csv", *args).splitlines()[0].split(",")
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


def test_plain_view_lists_data_only_and_names_the_model_choice() -> None:
    """The workspace's plain view: the view's params, the run-wide headline metrics, the
    dependencies -- data only, one column per protocol's data folder and group file (the stages
    are one per protocol: `make exp` is the compact view)."""
    workspace = json.loads(_exp_show(ROOT, "--json"))[0]["data"]
    deps = {Path(d).as_posix() for d in workspace["deps"]}
    assert set(workspace["metrics"]) == {"reports/metrics.json"}  # the run-wide headline only
    # no code or conf/ path: the first stage hashes those into data/config/<protocol>/<group>.yaml
    assert not [d for d in deps if d.startswith(("src/", "pipelines/", "conf/"))], sorted(deps)
    assert all(d.startswith(("data/", "reports/")) for d in deps), sorted(deps)
    view = workspace["params"]["params.yaml"]["data"]
    assert view["judged_models"] == list(view["models"])
    assert {m["engine"]["name"] for m in view["models"].values()} <= {"simulated", "hf", "openai"}
    assert {"experiment", "protocols", "generator_protocols", "faces", "judge"} <= set(view)
    # a column per protocol's data and config: the count grows with the protocols, not the code
    n = len(view["protocols"]) + len(view["generator_protocols"])
    assert len(deps) <= 2 + 20 * n, sorted(deps)


def test_make_exp_is_compact_and_names_the_model_choice() -> None:
    cols = _columns(ROOT, "--drop", ".*", "--keep", _make_exp_keep())
    assert len(cols) <= MAX_COLUMNS, cols
    view = yaml.safe_load((ROOT / "params.yaml").read_text())
    models = list(view["models"])
    want = {"Experiment", "Created", "judged_models", "faces.n", "experiment"}
    want |= {f"models.{m}.engine.name" for m in models}
    want |= {f"{m}.stylisticbias.{k}" for m in models for k in ("sbs", "sbs_ci_low", "sbs_ci_high")}
    assert want <= set(cols), sorted(want - set(cols))


@pytest.fixture(scope="module")
def queued(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project with three queued experiments (DVC composes their params.yaml
    from conf/dvc/ at queue time): a model choice, a value override, a key outside the view."""
    root = copy_project(ROOT, tmp_path_factory.mktemp("project"))
    for sets in (["model=[simulated-strong]"], ["faces.n=7"], ["++qa.policy=exclude"]):
        _run(root, "dvc", "exp", "run", "--queue", *(a for s in sets for a in ("-S", s)))
    return root


def _rows(root: Path) -> list[dict[str, str]]:
    reader = csv.reader(_exp_show(root, "--csv").splitlines())
    header = next(reader)
    return [dict(zip(header, r, strict=True)) for r in reader]


# slow tier: queues dvc experiments in a project copy (~10 CPU-s with the next); fast sibling:
# test_plain_view_is_at_most_40_columns_and_names_the_model_choice
@pytest.mark.slow
def test_an_experiment_shows_its_model_choice(queued: Path) -> None:
    cols = [c for c in _columns(queued) if c not in CSV_ONLY]
    # the copy has no outputs (no metrics): the view's params and the dependencies (a column per
    # protocol's data folder and group file: data/..., no code), plus the column qa.policy that
    # the third experiment adds; the params alone stay a readable few
    params = [c for c in cols if "/" not in c]
    assert all(c.startswith(("data/", "reports/")) for c in cols if "/" in c), cols
    assert len(params) - ("qa.policy" in params) + 10 <= MAX_COLUMNS, params
    rows = _rows(queued)
    one = [r for r in rows if r["judged_models"] == "['simulated-strong']"]
    assert len(one) == 1, [r["judged_models"] for r in rows]
    assert one[0]["models.simulated-strong.engine.name"] == "simulated"
    assert one[0]["models.simulated-weak.engine.name"] in ("-", "")
    assert {r["faces.n"] for r in rows} >= {"7", "100"}
    assert "exclude" in {r.get("qa.policy") for r in rows}


# slow tier: shares the queued experiments above; fast sibling:
# tests/test_config.py::test_every_experiment_resolves_from_its_view
@pytest.mark.slow
def test_the_queued_views_resolve_to_what_conf_composes(queued: Path) -> None:
    """Each queued experiment's params.yaml stands for conf/ composed with the same overrides."""
    from stylisticbias.config import compose
    from stylisticbias.params_view import full_params

    want = {
        "['simulated-strong']": compose(["model=[simulated-strong]"]),
    }
    shown = json.loads(_exp_show(queued, "--json"))
    views = []
    for baseline in shown:
        for exp in baseline.get("experiments") or []:
            for rev in exp["revs"]:
                views.append(rev["data"]["params"]["params.yaml"]["data"])
    assert len(views) == 3, views
    for view in views:
        full = full_params(view)
        if view["judged_models"] == ["simulated-strong"]:
            assert full == want["['simulated-strong']"]
        elif view["faces"]["n"] == 7:
            assert full == compose(["faces.n=7"])
        else:
            assert full == compose(["qa.policy=exclude"])
