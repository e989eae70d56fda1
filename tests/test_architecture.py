"""The library's shape: no import cycle, nothing only tests use, no history in the code.

- **No import cycle** between the modules of ``src/`` (import-linter's ``acyclic`` contract checks
  sibling packages; this checks single modules, function-level imports included, the
  ``TYPE_CHECKING`` ones left out as import-linter does).
- **The library holds the library**: every module of ``stylisticbias`` is reachable from an entry
  point -- a DVC stage script (``pipelines/*.py``), a ``python -m`` module, a class a config
  file's ``_target_`` names, the Hydra plugin -- through the library's own imports. A module only
  tests or benchmarks import belongs in ``stylisticbias_dev`` or ``tests/``.
- **No issue numbers or merge markers** in ``src/``, ``tests/``, ``pipelines/``, ``conf/``: code
  speaks of itself, not of its history.
- **The map matches the house**: every file, folder and module ``docs/architecture.md`` names
  exists (a split or a move that leaves the walkthrough behind fails here).
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterable
from pathlib import Path

import grimp
import pytest

from stylisticbias.family import FAMILIES, FAMILY_NAMES, PACKAGE
from stylisticbias.registry import REFERENCE

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(
        "stylisticbias", "stylisticbias_dev", "hydra_plugins", exclude_type_checking_imports=True
    )


def _cycles(nodes: Iterable[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles("abcd", edges) == [["a", "b", "c"]]
    assert _cycles("ab", {"a": {"b"}}) == []


OURS = ("stylisticbias", "stylisticbias_dev", "hydra_plugins.stylisticbias_schemas")


def _ours(graph: grimp.ImportGraph) -> set[str]:
    """This checkout's modules (``hydra_plugins`` is a namespace shared with installed plugins)."""
    return {m for m in graph.modules if m in OURS or m.startswith(tuple(f"{o}." for o in OURS))}


def test_no_import_cycle_between_modules(graph: grimp.ImportGraph) -> None:
    ours = _ours(graph)
    edges = {m: graph.find_modules_directly_imported_by(m) & ours for m in ours}
    cycles = _cycles(ours, edges)
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _imported_names(path: Path) -> set[str]:
    """Every ``stylisticbias`` module a file imports (``from X import y`` may name a module)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in out if m.split(".")[0] == "stylisticbias"}


def _entry_points(graph: grimp.ImportGraph) -> set[str]:
    """The modules something outside the library starts from."""
    roots: set[str] = set()
    for script in sorted((ROOT / "pipelines").glob("*.py")):  # DVC stage scripts
        roots |= _imported_names(script)
    for yaml_file in sorted((ROOT / "conf").rglob("*.yaml")):  # _target_: a.b.Class
        for target in re.findall(r"_target_:\s*(stylisticbias[\w.]*)", yaml_file.read_text()):
            roots.add(target.rsplit(".", 1)[0])
    roots.add("hydra_plugins.stylisticbias_schemas")  # Hydra imports it whenever it composes
    for name in FAMILY_NAMES:  # a family's package, hooks and paradigms: through the registry
        family = FAMILIES.lookup(name)
        roots.add(f"{PACKAGE}.{name}")
        refs = (*family.hooks.values(), *family.paradigms.values())
        roots |= {REFERENCE.match(ref).group(1) for ref in refs}  # type: ignore[union-attr]
    # families/_template: a family to copy, never run (tests/families/test_template.py)
    roots |= {f"{PACKAGE}._template", f"{PACKAGE}._template.stage"}
    for path in sorted((SRC / "stylisticbias").rglob("*.py")):  # python -m ...
        text = path.read_text(encoding="utf-8")
        if path.name == "__main__.py" or 'if __name__ == "__main__"' in text:
            rel = path.relative_to(SRC).with_suffix("")
            roots.add(".".join(rel.parts))
    return {m for m in roots if m in graph.modules}


def _unreached(graph: grimp.ImportGraph, roots: Iterable[str]) -> list[str]:
    """The ``stylisticbias`` modules no import path from ``roots`` reaches."""
    seen: set[str] = set()
    todo = sorted(roots)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo.extend(graph.find_modules_directly_imported_by(m))
        parts = m.split(".")  # importing a module runs its packages' __init__
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
    library = {m for m in graph.modules if m.split(".")[0] == "stylisticbias"}
    return sorted(library - seen)


def test_unreached_finds_a_test_only_module() -> None:
    g = grimp.ImportGraph()
    for m in ("stylisticbias", "stylisticbias.a", "stylisticbias.b", "stylisticbias.c"):
        g.add_module(m)
    g.add_module("stylisticbias_dev")
    g.add_import(importer="stylisticbias.a", imported="stylisticbias.b")
    g.add_import(importer="stylisticbias_dev", imported="stylisticbias.c")  # a benchmark only
    assert _unreached(g, ["stylisticbias.a"]) == ["stylisticbias.c"]


def test_every_library_module_is_used_by_the_library(graph: grimp.ImportGraph) -> None:
    unused = _unreached(graph, _entry_points(graph))
    assert unused == [], (
        "modules no entry point reaches (only tests/benchmarks use them? move them to "
        "stylisticbias_dev or tests/): " + ", ".join(unused)
    )


# Split so that this file does not match its own patterns.
MARKERS = re.compile(
    "|".join(
        [
            r"\b" + "iss" + r"ue[-_ #]*\d+",  # an issue number
            r"\b" + "iss" + r"ue\s+\d+'s",
            "^" + "<" * 7 + " ",  # a conflict marker
            "^" + ">" * 7 + " ",
            r"#\s*---\s*(end\s+)?[\w-]*" + "iss" + "ue",  # a merge-era block marker
        ]
    ),
    re.IGNORECASE | re.MULTILINE,
)
SCANNED = ("src", "tests", "pipelines", "conf")
SUFFIXES = {".py", ".yaml", ".yml", ".md", ".toml", ".txt", ".cfg"}


def test_marker_pattern_finds_markers() -> None:
    for text in ("# --- " + "iss" + "ue-11-sweep ---", "see " + "iss" + "ue 14's tables"):
        assert MARKERS.search(text), text
    assert not MARKERS.search("an issue with the tokenizer (1 of 3)")


def test_no_issue_numbers_or_merge_markers() -> None:
    hits = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file() or "__pycache__" in path.parts:
                continue
            rel = path.relative_to(ROOT)
            hits += [f"{rel}: {m.group(0)!r}" for m in MARKERS.finditer(path.read_text("utf-8"))]
            if MARKERS.search(path.name):
                hits.append(f"{rel}: file name")
    assert hits == [], "\n".join(hits)


def test_test_modules_have_unique_basenames() -> None:
    """pytest's default import mode needs one basename per test module (tests/ has no
    ``__init__.py``): two ``test_run.py`` break collection of the whole suite."""
    tests = Path(__file__).resolve().parent
    seen: dict[str, Path] = {}
    dupes = []
    for path in sorted(tests.rglob("test_*.py")):
        if path.name in seen:
            dupes.append(f"{seen[path.name].relative_to(tests)} / {path.relative_to(tests)}")
        seen.setdefault(path.name, path)
    assert dupes == [], "rename one of each pair: " + "; ".join(dupes)


#: folders a path in docs/architecture.md may be written relative to (the text says which)
DOC_BASES = (
    ROOT,
    SRC,
    SRC / "stylisticbias",
    SRC / "stylisticbias" / "judge",
    SRC / "stylisticbias" / "judge" / "protocol",
    SRC / "stylisticbias" / "judge" / "protocol" / "tasks",
)
#: paths the walkthrough names that a build creates (not in a fresh clone)
#: written by a run, not committed (the check stage's data/config/ exists after the first repro)
DOC_GENERATED = {
    ".cache/tiny/",
    "data/config/",
    "data/config/resolved.yaml",
    "data/config/judge/MODEL.yaml",
}


def _resolves(name: str) -> bool:
    """Whether ``stylisticbias.<name>`` (or ``name``) is a module or an attribute of one."""
    dotted = name if name.startswith("stylisticbias.") else f"stylisticbias.{name}"
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_architecture_doc_names_only_what_exists() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`([^`\s]+)`", text))
    paths = {n for n in names if "/" in n and "<" not in n and re.fullmatch(r"[\w./-]+", n)}
    missing = sorted(
        p for p in paths - DOC_GENERATED if not any((b / p.rstrip("/")).exists() for b in DOC_BASES)
    )
    modules = {
        n
        for n in names
        if re.fullmatch(r"[a-z_]+(\.[A-Za-z_]+)+", n)
        and (n.startswith("stylisticbias.") or n.count(".") >= 2)
    }
    unknown = sorted(m for m in modules if not _resolves(m))
    assert missing == [] and unknown == [], f"files: {missing}; modules: {unknown}"


def test_doc_check_sees_a_stale_name() -> None:
    assert _resolves("judge.run.model_section")
    assert not _resolves("judge.run.consolidate_everything")
    assert not _resolves("stylisticbias.no_such_module")


#: the one place the formatter is off: the table of stage groups (one group a row, aligned)
FORMAT_OFF = {"src/stylisticbias/stage_inputs.py"}


def test_the_formatter_is_never_switched_off() -> None:
    """ruff format decides every layout: no formatter switch (``fmt`` skip/off comments) but
    the aligned table of :data:`FORMAT_OFF` (a table that wants its own layout is data)."""
    root = Path(__file__).resolve().parents[1]
    marks = ("# fmt: " + "skip", "# fmt: " + "off")
    found = [
        f"{p.relative_to(root)}:{i}"
        for folder in ("src", "tests", "pipelines")
        for p in sorted((root / folder).rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if any(m in line for m in marks) and str(p.relative_to(root)) not in FORMAT_OFF
    ]
    assert found == []
