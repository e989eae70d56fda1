"""Every third-party module the code imports is declared by ``pyproject.toml``.

A module that only arrives as a dependency of a dependency (or of another extra) works in the
locked environment and breaks elsewhere: ``pip install -e '.[dev]'`` without the lock, then
``pytest``, failed to collect on ``stylisticbias_dev/headless.py``'s ``import websocket``
(websocket-client came into the lock through the ``bench`` extra only).

Every ``import`` of ``src/``, ``tests/`` and ``pipelines/`` is read with :mod:`ast` (imports
inside functions and ``TYPE_CHECKING`` blocks included); the standard library
(``sys.stdlib_module_names``), the project's own packages and the test helpers are left out.
An import name is mapped to its distributions with ``importlib.metadata.packages_distributions()``
(the name itself when nothing installed provides it) and one of them must be declared where the
importing code is installed:

- ``src/stylisticbias``, ``src/hydra_plugins``, ``pipelines/``: ``[project] dependencies``;
- ``src/stylisticbias_dev`` and ``tests/``: those or the ``dev`` extra (a dev checkout).

An import inside ``try:`` whose ``except ImportError`` handler names an extra (``pip install
'.[release]'``) belongs to that extra; one whose handler falls back to something else (``orjson``
-> ``json``) is optional and needs no declaration. :data:`OPTIONAL` lists the few imports that
are optional by other means, each with its reason.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: import names that need no declaration (optional by other means than a guard): name -> why
OPTIONAL = {
    "polars": "stylisticbias_dev.bench.scan_engines measures it only where installed (_installed)",
}
#: the project's own top-level packages (src/)
OWN = {p.name for p in (ROOT / "src").iterdir() if (p / "__init__.py").exists()} | {"hydra_plugins"}
_EXTRA_IN_TEXT = re.compile(r"\.\[([A-Za-z0-9_,-]+)\]")


def _norm(dist: str) -> str:
    """A distribution name in PEP 503 normal form."""
    return re.sub(r"[-_.]+", "-", dist).lower()


def _requirement_name(req: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    assert m, f"pyproject.toml: cannot read the requirement {req!r}"
    return _norm(m.group(1))


def declared() -> dict[str, set[str]]:
    """``pyproject.toml``'s distributions: ``""`` for the main dependencies, else per extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    out = {"": {_requirement_name(r) for r in project.get("dependencies", [])}}
    for extra, reqs in project.get("optional-dependencies", {}).items():
        out[extra] = {_requirement_name(r) for r in reqs}
    return out


@dataclass(frozen=True)
class Import:
    """One third-party import: its top-level name, where, and the extra its guard names."""

    name: str
    file: Path
    line: int
    optional: bool  # inside try/except ImportError
    extra: str | None  # the extra the ImportError handler names, if any


def _handles_import_error(handler: ast.ExceptHandler) -> bool:
    names = []
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for t in types:
        if isinstance(t, ast.Name):
            names.append(t.id)
    return bool({"ImportError", "ModuleNotFoundError"} & set(names))


def _extra_named(handlers: list[ast.ExceptHandler]) -> str | None:
    for h in handlers:
        for node in ast.walk(h):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                m = _EXTRA_IN_TEXT.search(node.value)
                if m:
                    return m.group(1)
    return None


def imports_of(path: Path, local: set[str]) -> list[Import]:
    """The third-party imports of one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    guarded: dict[int, str | None] = {}  # id(import node) -> extra named (or None)
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            handlers = [h for h in node.handlers if _handles_import_error(h)]
            if handlers:
                extra = _extra_named(handlers)
                for stmt in node.body:
                    for sub in ast.walk(stmt):
                        guarded[id(sub)] = extra
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for full in names:
            top = full.split(".")[0]
            if top in sys.stdlib_module_names or top in OWN or top in local:
                continue
            opt = id(node) in guarded
            out.append(Import(top, path, node.lineno, opt, guarded.get(id(node))))
    return out


def _allowed(rel: str, decl: dict[str, set[str]]) -> tuple[set[str], str]:
    """The distributions the code at ``rel`` may import, and where to declare a missing one."""
    if rel.startswith(("src/stylisticbias/", "src/hydra_plugins/", "pipelines/")):
        return decl[""], "[project] dependencies"
    return decl[""] | decl["dev"], "the dev extra ([project.optional-dependencies] dev)"


def undeclared(root: Path = ROOT) -> list[str]:
    """One line per third-party import that ``pyproject.toml`` does not declare where needed."""
    decl = declared()
    providers = importlib.metadata.packages_distributions()
    tests = root / "tests"
    local = {"tests"} | {p.stem for p in tests.rglob("*.py")}
    local |= {p.name for p in tests.rglob("*") if p.is_dir()}
    files = [
        *(root / "src").rglob("*.py"),
        *tests.rglob("*.py"),
        *(root / "pipelines").glob("*.py"),
    ]
    problems = []
    for path in sorted(files):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("tests/data/"):
            continue
        for imp in imports_of(path, local):
            if imp.name in OPTIONAL or (imp.optional and imp.extra is None):
                continue
            dists = {_norm(d) for d in providers.get(imp.name, [imp.name])}
            if imp.extra is not None:
                allowed, where = decl.get(imp.extra, set()), f"the {imp.extra} extra"
            else:
                allowed, where = _allowed(rel, decl)
            if not dists & allowed:
                problems.append(
                    f"{rel}:{imp.line}: imports {imp.name!r} (distribution "
                    f"{' or '.join(sorted(dists))}), declared by no requirement of {where}"
                )
    return problems


def test_every_third_party_import_is_declared_by_pyproject() -> None:
    problems = undeclared()
    assert problems == [], "\n".join(problems)


def test_the_check_sees_function_level_and_guarded_imports(tmp_path: Path) -> None:
    """The reader itself: an import inside a function counts, one guarded by an ImportError
    handler naming an extra belongs to that extra, one with a silent fallback is optional."""
    f = tmp_path / "m.py"
    f.write_text(
        "import os\nfrom stylisticbias import errors\n"
        "def g():\n    import websocket\n"
        "try:\n    import orjson\nexcept ImportError:\n    orjson = None\n"
        "try:\n    import mlcroissant\nexcept ImportError as e:\n"
        "    raise SystemExit(\"pip install '.[release]'\") from e\n"
    )
    got = {(i.name, i.optional, i.extra) for i in imports_of(f, set())}
    assert got == {
        ("websocket", False, None),
        ("orjson", True, None),
        ("mlcroissant", True, "release"),
    }
