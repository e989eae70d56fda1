"""Below the stage scripts, library functions take typed specs, not the composed mapping.

A stage script (``pipelines/*.py``) parses ``params.yaml`` once (``load_config()``) and hands the
typed :class:`~stylisticbias.spec.Config` (or the sections it needs: ``JudgeSpec``,
``PathsSpec``, the ``Benchmark``...) to the library. This test lists every function of
``src/stylisticbias`` with a parameter named ``params``/``job_params`` (the composed mapping, by
this code base's convention) and compares the list with the named exceptions below: a new
function taking the mapping fails here, and so does a converted one still listed.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "src" / "stylisticbias"
NAMES = {"params", "job_params"}

#: Where the mapping is genuinely the subject (module:function -> why).
ALLOWED: dict[str, str] = {
    # composing and reading params.yaml: the mapping layer itself
    "stylisticbias.config:dump_params": "writes params.yaml",
    "stylisticbias.config:get": "dotted look-up with a one-line error, for the mapping layer",
    "stylisticbias.config:subtree": "dotted look-up (None where unset): group settings, sweep jobs",
    "stylisticbias.config:judged_models": "takes a Config too; the sweep's job params",
    "stylisticbias.config:is_view": "tells params.yaml (the view) from a whole configuration",
    "stylisticbias.params_view:_get": "reads the composed values an experiment's view shows",
    # the check stage writes each group's settings (a subtree of the mapping) and input hashes
    "stylisticbias.stage_inputs:group_file": "writes a group's settings as they are composed",
    "stylisticbias.stage_inputs:stage_input_files": "writes the resolved configuration",
    "stylisticbias.stage_inputs:write_stage_inputs": "writes the resolved configuration",
    "stylisticbias.scores_ahead:JudgmentsAhead.from_params": "paths.* before the typed parse",
    "stylisticbias.spec.parse:config_from_params": "the typed conversion itself",
    "stylisticbias.validate:validate_params": "compose-time checks, before a Config exists",
    "stylisticbias.output_paths:declared_outputs": "compose-time path checks (validate)",
    "stylisticbias.output_paths:committed_report": "compose-time path checks (validate)",
    "stylisticbias.params_view:chosen_protocols": "reads the composed values a view shows",
    "stylisticbias.protocols:chosen": "takes a Config too; the check stage's jobs",
    "stylisticbias.protocols:judged": "takes a Config too; the check stage's jobs",
    "stylisticbias.output_paths:stage_output": "compose-time path checks (validate)",
    "stylisticbias.output_paths:check_all_outputs": "compose-time path checks (validate)",
    "stylisticbias.benchmark.load:benchmark_name": "compose-time: the protocol a mapping names",
    "stylisticbias.benchmark.load:benchmark_from_params": "compose-time: a mapping's protocol",
    # the sweep edits each job's params.yaml (paths, models): the mapping is what it writes
    "stylisticbias.sweep.app:resolve_job": "writes a sweep job's params",
    "stylisticbias.sweep.callback:datasets_dir": "reads a sweep job's params",
    "stylisticbias.sweep.dataset:ensure_dataset": "writes a shared dataset's params",
    "stylisticbias.sweep.dataset:link_dataset": "reads a sweep job's params",
    "stylisticbias.sweep.runs:close_run": "logs a sweep job's params",
    "stylisticbias.sweep.spec:judged_models": "reads a sweep job's params",
    "stylisticbias.sweep.spec:select_model": "edits a sweep job's params",
    "stylisticbias.sweep.spec:dataset_key": "hashes a sweep job's dataset sections",
    "stylisticbias.sweep.spec:relative_link": "reads a sweep job's path settings",
    "stylisticbias.sweep.spec:with_paths": "edits a sweep job's params",
    "stylisticbias.sweep.spec:dataset_params": "edits a sweep job's params",
    "stylisticbias.sweep.spec:job_params": "edits a sweep job's params",
    "stylisticbias.sweep.spec:check": "checks a sweep job's params",
    # MLflow: any mapping of run parameters, and partial hand-written tracking sections
    "stylisticbias.tracking.runs:flatten_params": "MLflow params: any nested mapping",
    "stylisticbias.tracking.runs:log_params": "MLflow params: any nested mapping",
    "stylisticbias.tracking.store:tracking_spec": "the typed view of a partial tracking section",
    "stylisticbias.tracking.store:tracking_cfg": "the sweep's anchored tracking section",
    "stylisticbias.tracking.store:tracking_enabled": "a partial tracking section",
    "stylisticbias.report.mlflow_params:run_params": "logs the composed config to MLflow as is",
}

#: Stage chains that still take the mapping (converted: faces/variations, judge, scores, analyze,
#: calibrate, report, track, the release command, the importer, annotate, qa, locality,
#: generator_audit, soda; none left).
NOT_YET: set[str] = set()


#: Stage scripts that still hand the mapping on (the stage chains of NOT_YET).
SCRIPTS_WITH_PARAMS = {
    "check.py",  # validate_params checks the mapping itself (what configure compose checks)
}


def test_stage_scripts_hand_on_the_config() -> None:
    """A stage script of a converted stage never reads the mapping (``load_params``)."""
    uses = set()
    for script in sorted((ROOT / "pipelines").glob("*.py")):
        tree = ast.parse(script.read_text(encoding="utf-8"))
        calls = {
            n.func.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        if "load_params" in calls:
            uses.add(script.name)
    assert uses == SCRIPTS_WITH_PARAMS


def functions_taking_params(source: str, module: str) -> list[str]:
    """``module:qualified.name`` of every function of ``source`` with a ``params`` parameter."""
    out: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                a = child.args
                if any(x.arg in NAMES for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]):
                    out.append(f"{module}:{prefix}{child.name}")
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(source), "")
    return out


def test_finder_sees_methods_and_nested_functions() -> None:
    src = (
        "class A:\n    def f(self, params): ...\n"
        "def g(x, *, params=None):\n    def h(params): ...\n"
    )
    assert functions_taking_params(src, "m") == ["m:A.f", "m:g", "m:g.h"]


def test_no_library_function_takes_the_composed_mapping() -> None:
    found = set()
    for path in sorted(LIBRARY.rglob("*.py")):
        module = ".".join(path.relative_to(LIBRARY.parent).with_suffix("").parts)
        found.update(functions_taking_params(path.read_text(encoding="utf-8"), module))
    assert not ALLOWED.keys() & NOT_YET
    new = sorted(found - ALLOWED.keys() - NOT_YET)
    assert new == [], "take the typed Config/specs instead of params: " + ", ".join(new)
    gone = sorted((ALLOWED.keys() | NOT_YET) - found)
    assert gone == [], "converted or removed; drop them from the lists here: " + ", ".join(gone)
