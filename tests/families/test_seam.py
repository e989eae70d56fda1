"""The family seam (stylisticbias.family): every family declares every stage's hook, or that
it lacks it; no module outside the families package and the registry branches on a family or
protocol name, nor tells a protocol by its shape (``tasks and not scenarios``, the statistics
suite)."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import FAMILIES, FAMILY_NAMES, HOOKS, Family, family_of
from stylisticbias.registry import REFERENCE, resolve

SRC = Path(__file__).resolve().parents[2] / "src" / "stylisticbias"

#: every family's hooks: implemented (the reference) or lacking (``-``)
EXPECTED_HOOKS = {
    "variation_shift": {
        "judge": "stylisticbias.judge.run:judge_forced_choice",
        "requests": "stylisticbias.judge.batch:forced_choice_requests",
        "scenario": "stylisticbias.benchmark.spec:Benchmark.scenario",
        "scores": "stylisticbias.scores:write_forced_choice_scores",
        "analyze": "stylisticbias.families.variation_shift.analysis.stage:analyze_shift",
        "calibrate": "stylisticbias.families.variation_shift.analysis.stage:calibrate_shift",
        "report": "stylisticbias.families.variation_shift.report.stage:report_shift",
        "track": "stylisticbias.families.variation_shift.report.track:log_report_runs",
        "audit": "stylisticbias.families.variation_shift.report.audit:shift_findings",
    },
    "paired_variation": {
        "judge": "stylisticbias.judge.run:judge_forced_choice",
        "requests": "stylisticbias.judge.batch:forced_choice_requests",
        "scenario": "stylisticbias.benchmark.spec:Benchmark.scenario",
        "scores": "stylisticbias.scores:write_forced_choice_scores",
        "analyze": "stylisticbias.families.paired_variation.analysis.stage:analyze_paired",
        "calibrate": "stylisticbias.families.paired_variation.analysis.stage:calibrate_paired",
        "report": "stylisticbias.families.paired_variation.report.stage:report_paired",
        "track": "stylisticbias.families.paired_variation.report.track:log_paired_runs",
        "audit": "stylisticbias.families.paired_variation.report.audit:paired_findings",
    },
    "tasks": {
        "judge": "stylisticbias.families.tasks.judge.stage:judge_tasks",
        "requests": "stylisticbias.families.tasks.judge.judging:missing_task_requests",
        "scenario": "stylisticbias.benchmark.spec:Benchmark.task_scenario",
        "scores": "stylisticbias.families.tasks.scores:write_task_record_scores",
        "analyze": "stylisticbias.families.tasks.analysis.stage:analyze_tasks",
        "calibrate": "stylisticbias.families.tasks.analysis.stage:calibrate_tasks",
        "report": "stylisticbias.families.tasks.report.stage:report_tasks",
        "track": "stylisticbias.families.tasks.report.stage:log_task_runs",
        "audit": "stylisticbias.families.tasks.report.audit:task_findings",
    },
    "soda": dict.fromkeys(HOOKS, "-"),
}


def test_the_registry_lists_every_familys_hooks() -> None:
    assert tuple(FAMILIES) == FAMILY_NAMES
    table = {}
    for name in FAMILY_NAMES:
        family = FAMILIES.lookup(name)
        assert isinstance(family, Family) and family.name == name
        table[name] = {h: family.hooks.get(h, "-") for h in HOOKS}
        for h in HOOKS:  # each hook declared once: implemented or lacking (with a reason)
            assert (h in family.hooks) != (h in family.lacks), (name, h)
            assert h not in family.lacks or family.lacks[h].strip(), (name, h)
    assert table == EXPECTED_HOOKS


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_every_hook_resolves_to_a_callable(name: str) -> None:
    family = FAMILIES.lookup(name)
    for h in family.hooks:
        assert callable(family.hook(h)) and callable(resolve(family.hooks[h])), (name, h)


def test_a_lacking_hook_says_why_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert FAMILIES.lookup("soda").hook("analyze")("any", "args") is None
    assert len(caplog.records) == 1
    assert "family soda has no analyze stage" in caplog.text
    assert "is not judged" in caplog.text


def test_a_family_must_declare_every_hook() -> None:
    with pytest.raises(StylisticBiasError, match=r"family x: .*missing \['requests', 'scenario'"):
        Family("x", {"judge": "stylisticbias.families.tasks.judge.stage:judge_tasks"})
    with pytest.raises(StylisticBiasError, match=r"declared twice \['judge'\]"):
        Family("x", dict.fromkeys(HOOKS, "stylisticbias.x:y"), {"judge": "why"})


@pytest.mark.parametrize(
    ("protocol", "family"),
    [
        ("stylisticbias", "variation_shift"),
        ("beauty-and-the-bias", "paired_variation"),
        ("reflect", "tasks"),
        ("vignette", "tasks"),
    ],
)
def test_a_protocol_finds_its_family(protocol: str, family: str) -> None:
    assert family_of(load_benchmark(protocol)).name == family


# ---- no family branching outside the families package and the registry --------------------

#: modules allowed to name families: the registry of families and the families themselves
ALLOWED = ("family.py", "registry.py", "families/")
#: names a shared module may not compare with (family names, shipped protocol names)
NAMES = {*FAMILY_NAMES, "stylisticbias", "beauty-and-the-bias", "reflect", "vignette"}
#: display text a protocol's questions carry (telling a protocol by its text)
TEXTS = ("Text-only decision",)


#: the protocol files' readers: they check `family:` against a file's sections
READERS = ("benchmark/parse.py", "benchmark/sections.py", "soda/protocol.py")
#: sites not yet moved into their family (each one line of the check's findings)
NOT_YET_MOVED: set[str] = set()


def _branches(tree: ast.AST) -> list[str]:
    """Comparisons with a family or protocol name, the shape test of a task protocol
    (``tasks and not scenarios``), and display-text matching."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for part in (node.left, *node.comparators):
                if isinstance(part, ast.Constant) and part.value in NAMES:
                    found.append(f"line {node.lineno}: compares with {part.value!r}")
                if isinstance(part, ast.Attribute) and part.attr in ("family", "suite"):
                    found.append(f"line {node.lineno}: compares .{part.attr}")
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            attrs = ast.dump(node)
            if "attr='tasks'" in attrs and "attr='scenarios'" in attrs:
                found.append(f"line {node.lineno}: tells a task protocol by its sections")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [f"line {node.lineno}: matches {t!r}" for t in TEXTS if t in node.value]
    return found


def test_the_seam_check_sees_a_branch() -> None:
    for code in (
        'if benchmark.statistics.suite == "paired_variation": pass',
        "if benchmark.tasks and not benchmark.scenarios: pass",
        'x = benchmark.family != "tasks"',
        'vignette = name == "vignette"',
        'want = sc.category.replace("Text-only decision", "Decision")',
    ):
        assert _branches(ast.parse(code)), code
    assert not _branches(ast.parse('hook = family_of(benchmark).hook("analyze")'))


def test_no_shared_module_branches_on_a_family_or_protocol() -> None:
    hits = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(ALLOWED) or rel in ALLOWED:
            continue
        if rel in READERS:
            continue
        hits += [f"{rel}: {h}" for h in _branches(ast.parse(path.read_text("utf-8")))]
    assert sorted(set(hits) - NOT_YET_MOVED) == [], "\n".join(hits)
    assert set(hits) >= NOT_YET_MOVED, "moved: drop from NOT_YET_MOVED " + str(
        NOT_YET_MOVED - set(hits)
    )


def test_references_name_modules() -> None:
    for name in FAMILY_NAMES:
        for ref in FAMILIES.lookup(name).hooks.values():
            assert REFERENCE.match(ref), ref
