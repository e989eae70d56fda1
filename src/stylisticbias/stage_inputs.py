"""What each group of DVC stages reads, written by the pipeline's first stage (``check``).

``dvc exp show`` lists one column per dependency path of every stage (DVC 3.67), so stages do not
list their code, ``conf/`` files and settings one by one. The first stage, which runs on every
``dvc repro`` (``always_changed``), resolves ``params.yaml`` into the whole configuration
(``data/config/resolved.yaml``, what every stage reads through
:func:`stylisticbias.config.load_config`) and writes, per group of stages, one file holding the
settings those stages read and the SHA-256 of their code and ``conf/`` inputs:

- ``data/config/dataset.yaml``: faces, variations, locality, annotate, qa, generator_audit, soda
  (with the content hash of the imported image sets, ``data/import``: :func:`input_hash`);
- ``data/config/judge/<model>.yaml``: ``judge@<model>`` and ``scores@<model>``;
- ``data/config/analysis.yaml``: analyze, calibrate;
- ``data/config/report.yaml``: report (a setting only reporting reads re-runs it and nothing
  before it);
- ``data/config/audit.yaml``: audit, track -- once per run, over every protocol.

Every group but the last is written once per protocol the experiment runs, under
``data/config/<protocol>/`` beside that protocol's job (its whole configuration,
``resolved.yaml``: :mod:`stylisticbias.protocols`); a protocol that audits a generator (SODA)
gets the dataset group only.

A stage depends on its group's file (and on the data it reads), so it re-runs when one of those
settings or inputs changes and not otherwise: the file's bytes change only then. A group holds
the settings its stages read and no others (``judge.undecided_warn`` is in the judge group's
files, for the scores stage, and in no other: :func:`readers`). Granularity is the group's: a
change to one stage's code or settings re-runs the other stages of its group (a group per stage
would cost ``dvc exp show`` more columns than its 40); a judge stage with nothing to judge
returns in seconds without reading its records.

The code a group hashes is its listed inputs plus every ``stylisticbias`` module its stage scripts
import, directly or through other modules, lazy imports included (:func:`code_closure`, from
grimp's import graph, the library behind ``lint-imports``): no hand-kept list can miss a module.
The stages reach their protocol family's code through the family registry, not an import: a
group hashes its protocol family's package and the modules of the hooks its stages call
(:func:`family_modules`), and no other family's. Every family's code lives in its package
(``stylisticbias/families/<family>/``) and no shared module imports one, so an edit inside a
family re-runs only the stages of that family's protocols: editing REFLECT's statistics
changes no StylisticBias group file.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grimp
import yaml

from stylisticbias.benchmark import load_benchmark
from stylisticbias.config import RESOLVED, dump_params, subtree
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import PACKAGE as FAMILY_PACKAGE
from stylisticbias.family import family_of
from stylisticbias.outputs import atomic_write_json
from stylisticbias.protocols import chosen
from stylisticbias.registry import REFERENCE

log = logging.getLogger(__name__)

#: the folder the first stage writes (an output of ``check``; never cached)
CONFIG_DIR = Path("data/config")
#: the protocol file of the configuration (``conf/benchmark/<protocol>.yaml``)
PROTOCOL = "conf/benchmark/{protocol}.yaml"


@dataclass(frozen=True)
class StageGroup:
    """Stages that re-run together: the settings (dotted keys) and inputs (files or folders)
    they read.

    ``settings`` name what the stages' outputs depend on, as finely as the stages read them
    (``judge.seeds``, not the whole ``judge`` section); ``skip`` names keys under those that the
    stages do not read (``*`` matches one key: ``models.*.engine.image_batch_size``). Settings a
    stage only *checks* are not listed: the ``check`` stage checks every setting on every run,
    and a setting that changes no output must re-run nothing (:func:`readers` says which groups
    read a key; ``tests/test_stage_inputs_cover.py`` pins the answer for each key).
    """

    name: str
    settings: tuple[str, ...]
    inputs: tuple[str, ...]
    per_model: bool = False  #: one file per judged model (``{model}`` in ``settings``)
    #: written once for the whole run (``data/config/<name>.yaml``: the audit and its MLflow
    #: runs, over every protocol), not once per protocol's job
    root: bool = False
    #: written for the protocols that audit a generator (SODA: ``generator_protocols``) too
    generator: bool = False
    skip: tuple[str, ...] = ()
    #: the hooks of the protocol's family these stages call (stylisticbias.family.HOOKS): the
    #: family's package and the modules those hooks name are hashed too
    hooks: tuple[str, ...] = ()


#: the judge settings that select what is judged and how (the records depend on them): not
#: ``undecided_warn``/``undecided_max``/``parser`` (how the scores stage reads the records)
JUDGING = (
    "judge.images",
    "judge.scenarios",
    "judge.orderings",
    "judge.seeds",
    "judge.temperature",
    "judge.max_new_tokens",
)
#: how the scores stage reads the records (not the judge: no record depends on them)
SCORING = ("judge.parser", "judge.undecided_warn", "judge.undecided_max")
#: engine settings of speed or placement (judge.fingerprint's _NON_RESULT_ENGINE_KEYS): read by
#: the judge stage only, never by a stage after it
ENGINE_SPEED = tuple(
    f"models.*.engine.{k}"
    for k in (
        "allow_remote_licensed_images",
        "lightning",
        "image_batch_size",
        "num_workers",
        "device",
        "suffix_batch_size",
        "branch_batch_size",
        "suffix_padding",
        "progress",
    )
)
#: what analyze and calibrate read (the report and track state it too)
ANALYSIS_SETTINGS = (
    "seed",
    "protocol",
    "paths",
    "faces.n",
    "models",
    *JUDGING,
    "analysis",
    "generator",
)
#: the folder of imported image sets (``generator: import``): an input of the dataset group
IMPORT_DIR = "data/import"
#: where the content hashes of large input folders are remembered by (size, mtime, inode), so
#: the first stage reads an imported image again only when it changed (like DVC's own state)
HASH_STATE = Path(".cache/stage-input-hashes.json")

#: settings no stage reads: the release command's, a sweep's, the derived list of models
#: (``models`` holds the names), and the protocols' settings (merged into each protocol's job:
#: the job's groups hold what they change)
READ_BY_NO_STAGE = ("release", "sweep", "judged_models", "protocol_settings")

# fmt: off
GROUPS: tuple[StageGroup, ...] = (
    StageGroup(
        "dataset", generator=True,
        settings=(
            "seed", "protocol", "paths", "faces", "generation", "gallery", "variations",
            "generator", "qa", "annotate", "annotators", "soda",
        ),
        inputs=(
            "pipelines/faces.py", "pipelines/variations.py", "pipelines/locality.py",
            "pipelines/annotate.py", "pipelines/qa.py", "pipelines/soda.py",
            "pipelines/generator_audit.py",
            "src/stylisticbias/benchmark", "src/stylisticbias/dataset",
            "src/stylisticbias/generators", "src/stylisticbias/sampling.py",
            "src/stylisticbias/gallery.py", "src/stylisticbias/qa", "src/stylisticbias/annotate",
            "src/stylisticbias/soda", PROTOCOL, "conf/benchmark/soda.yaml", "conf/soda",
            # the image sets of generator=import (faces, variations): hashed here, not a DVC
            # dependency of their own (a column of `dvc exp show` less)
            IMPORT_DIR,
        ),
    ),
    # judge@MODEL and scores@MODEL: the images (qa.policy=exclude leaves failing edits out),
    # what is judged and how, the model's section, the dry run; the scores stage's reader,
    # undecided limits and phi definitions (stylisticbias.scores.write_scores). The judge
    # re-runs on a scores setting and finds nothing to do (judge.consolidate.up_to_date) in
    # seconds: one file per stage would cost `dvc exp show` a column per model (README "Reading
    # dvc exp show"). Its MLflow run (tracking) logs a run that judged, it is no output.
    StageGroup(
        "judge",
        settings=(
            "protocol", "paths", "qa.policy", *JUDGING, "judge.dry_run", *SCORING,
            "analysis.definitions", "models.{model}",
        ),
        inputs=(
            "pipelines/judge.py", "pipelines/scores.py", "src/stylisticbias/benchmark",
            "src/stylisticbias/judge", "src/stylisticbias/qa/checks.py",
            "src/stylisticbias/scores.py", "src/stylisticbias/scores_columnar",
            "src/stylisticbias/scores_ahead.py",
            "src/stylisticbias/score_store.py", "src/stylisticbias/schemas.py", "conf/planted",
            PROTOCOL,
        ),
        per_model=True,
        hooks=("judge", "scenario", "scores"),
    ),
    # analyze, calibrate: the analysis settings; the judging settings the calibration
    # re-simulates (not the scores stage's: they read the scores); the models (not their
    # engines' speed settings); the generator, faces.n and seed of the design
    StageGroup(
        "analysis",
        settings=ANALYSIS_SETTINGS,
        inputs=(
            "pipelines/analyze.py", "pipelines/calibrate.py", "src/stylisticbias/benchmark",
            "src/stylisticbias/analysis", "src/stylisticbias/score_store.py",
            "src/stylisticbias/judge/engines/simulated", "src/stylisticbias/judge/engines/base.py",
            "src/stylisticbias/judge/protocol", "conf/planted", "conf/reference", PROTOCOL,
        ),
        skip=ENGINE_SPEED,
        hooks=("scenario", "analyze", "calibrate"),
    ),
    # report, track: what the analysis read (the report and its MLflow runs state it), the
    # store (tracking) and the SODA audit's run; the report and tracking code
    StageGroup(
        "report",
        settings=(*ANALYSIS_SETTINGS, "tracking", "soda"),
        inputs=(
            "pipelines/report.py", "pipelines/track.py", "src/stylisticbias/benchmark",
            "src/stylisticbias/report", "src/stylisticbias/tracking", "conf/reference",
            PROTOCOL, ".dvc/plots/offline.html",
        ),
        skip=ENGINE_SPEED,
        hooks=("scenario", "report"),
    ),
    # audit, track (once per run): every protocol's findings per model (bias cards, the
    # cross-protocol leaderboard) and the MLflow runs of every protocol; the protocols' reports
    # are their DVC dependencies. Hashes every chosen protocol's family (report, track hooks).
    StageGroup(
        "audit",
        settings=(
            "protocols", "generator_protocols", "models", "tracking", "paths", "analysis",
            "soda",
        ),
        inputs=(
            "pipelines/audit.py", "pipelines/track.py", "src/stylisticbias/audit",
            "src/stylisticbias/report", "src/stylisticbias/tracking",
            "src/stylisticbias/protocols.py", "src/stylisticbias/family.py", "conf/protocols",
        ),
        skip=ENGINE_SPEED,
        hooks=("scenario", "report", "track", "audit"),
        root=True,
    ),
)
# fmt: on


def _covers(pattern: str, key: str) -> bool:
    """Whether dotted ``pattern`` (``*`` matches one key) names ``key`` or a key above it."""
    p, k = pattern.split("."), key.split(".")
    return len(p) <= len(k) and all(a in ("*", b) for a, b in zip(p, k, strict=False))


def readers(key: str, model: str = "") -> tuple[str, ...]:
    """The groups whose file holds setting ``key`` (dotted: ``judge.undecided_warn``,
    ``models.simulated-weak.noise_sd``): the stages that re-run when it changes. ``model``:
    the judged model whose per-model files are meant (default: the one ``key`` names, if any)."""
    parts = key.split(".")
    if not model and parts[0] == "models" and len(parts) > 1:
        model = parts[1]
    found = []
    for g in GROUPS:
        listed = [s.format(model=model) for s in g.settings]
        if any(_covers(s, key) or _covers(key, s) for s in listed) and not any(
            _covers(s, key) for s in g.skip
        ):
            found.append(g.name)
    return tuple(found)


def _pruned(node: Any, path: tuple[str, ...], skip: tuple[str, ...]) -> Any:
    """``node`` (the setting at dotted ``path``) without the keys ``skip`` names."""
    if not skip or not isinstance(node, Mapping):
        return node
    out = {}
    for k, v in node.items():
        sub = (*path, str(k))
        if not any(_covers(s, ".".join(sub)) for s in skip):
            out[k] = _pruned(v, sub, skip)
    return out


def _file_sha(f: Path, state: dict[str, Any] | None) -> bytes:
    """SHA-256 of ``f``'s bytes, read in chunks; with ``state``, remembered by (size, mtime,
    inode) and read again only when one of those changed."""
    if state is not None:
        st = f.stat()
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
        known = state.get(str(f))
        if known and known[0] == stamp:
            return bytes.fromhex(known[1])
    h = hashlib.sha256()
    with f.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    if state is not None:
        state[str(f)] = [stamp, h.hexdigest()]
    return h.digest()


def input_hash(root: Path, rel: str) -> str:
    """SHA-256 of a file, or of a folder's regular files (their paths and bytes; caches and
    special files skipped): the same on every machine. Under ``data/`` (image sets, maybe
    gigabytes) each file's hash is remembered by (size, mtime, inode) in :data:`HASH_STATE`
    and the file read again only when one of those changed."""
    if not rel.startswith("data/"):
        return _tree_hash(root / rel, None)
    state = _load_state(root)
    digest = _tree_hash(root / rel, state)
    _save_state(root, state)
    return digest


def _tree_hash(path: Path, state: dict[str, Any] | None) -> str:
    h = hashlib.sha256()
    if path.is_file():
        h.update(_file_sha(path, state))
        return h.hexdigest()
    if not path.is_dir():
        return "missing"
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        if "__pycache__" in f.parts or f.suffix == ".pyc":
            continue
        h.update(f.relative_to(path).as_posix().encode() + b"\0")
        h.update(_file_sha(f, state))
    return h.hexdigest()


def _load_state(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / HASH_STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_state(root: Path, state: dict[str, Any]) -> None:
    """Best effort: a state that cannot be written only costs re-reading next time."""
    state = {k: v for k, v in state.items() if Path(k).exists()}  # files gone: forgotten
    try:
        atomic_write_json(root / HASH_STATE, state)
    except OSError as exc:  # pragma: no cover - a read-only checkout
        log.debug("stage-input hash state not saved: %s", exc)


PACKAGE = "stylisticbias"


@functools.cache
def _import_graph() -> grimp.ImportGraph:
    """The package's import graph, built once per process (the check stage asks for it once per
    group and judged model)."""
    return grimp.build_graph(PACKAGE, cache_dir=None)


def _script_imports(script: Path, modules: set[str]) -> set[str]:
    """The package's modules a stage script names in any import statement (at any depth)."""
    found: set[str] = set()
    if not script.is_file():  # hashed as "missing" by input_hash
        return found
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found & modules


def _targets(node: Any) -> set[str]:
    """Modules named by Hydra ``_target_`` strings in a settings tree (the engine classes a
    model's settings instantiate: reached through configuration, not an import statement)."""
    if isinstance(node, Mapping):
        found = {str(node["_target_"]).rsplit(".", 1)[0]} if "_target_" in node else set()
        return found.union(*(_targets(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_targets(v) for v in node))
    return set()


def family_modules(protocol: str, hooks: tuple[str, ...]) -> set[str]:
    """The protocol family's package (its ``FAMILY``, read by the protocol's parser), its
    paradigms' modules and the modules its ``hooks`` name (reached through the family registry,
    not an import statement); none for an unknown protocol."""
    try:
        family = family_of(load_benchmark(protocol))
    except StylisticBiasError:  # the check stage reports a bad protocol itself
        return set()
    found = {f"{FAMILY_PACKAGE}.{family.name}"}
    for ref in (*(family.hooks.get(hook, "") for hook in hooks), *family.paradigms.values()):
        match = REFERENCE.match(ref)
        if match:
            found.add(match.group(1))
    return found


def code_closure(
    root: Path, scripts: tuple[str, ...], settings: Any = None, modules_too: Any = ()
) -> list[str]:
    """Source files (relative to ``root``) of every package module the scripts import, or the
    settings' ``_target_`` strings name, or ``modules_too`` lists, transitively; sorted."""
    src = root / "src"
    graph = _import_graph()
    modules = set(graph.modules)
    roots = (_targets(settings) | set(modules_too)) & modules
    for script in scripts:
        roots |= _script_imports(root / script, modules)
    reached: set[str] = set()
    for module in roots:
        reached |= {module} | graph.find_upstream_modules(module)
    files = []
    for module in reached:
        base = src.joinpath(*module.split("."))
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        files.append(path.relative_to(root).as_posix())
    return sorted(files)


def _covered(rel: str, inputs: tuple[str, ...]) -> bool:
    return any(rel == i or rel.startswith(i.rstrip("/") + "/") for i in inputs)


def group_inputs(
    group: StageGroup, root: Path, protocol: str | list[str], settings: Any = None
) -> tuple[str, ...]:
    """What a group hashes: its listed inputs, then the modules its scripts import (and its
    settings' ``_target_`` classes reach) that they do not cover. ``protocol``: the job's, or
    every protocol of the run (a root group)."""
    protocols = [protocol] if isinstance(protocol, str) else list(protocol)
    listed = tuple(rel.format(protocol=p) for rel in group.inputs for p in protocols[:1])
    listed += tuple(PROTOCOL.format(protocol=p) for p in protocols[1:] if PROTOCOL in group.inputs)
    scripts = tuple(rel for rel in listed if rel.startswith("pipelines/"))
    family = set().union(*(family_modules(p, group.hooks) for p in protocols))
    extra = [f for f in code_closure(root, scripts, settings, family) if not _covered(f, listed)]
    return listed + tuple(extra)


def group_file(
    group: StageGroup,
    params: Mapping[str, Any],
    root: Path,
    model: str = "",
    hashes: dict[str, str] | None = None,
) -> str:
    """The text of one group's file: its settings (less ``skip``) and the hashes of its inputs.

    ``hashes``: input hashes already computed for ``root`` (filled in; groups share inputs)."""
    skip = tuple(s.format(model=model) for s in group.skip)
    settings = {}
    for k in group.settings:
        key = k.format(model=model)
        settings[key] = _pruned(subtree(params, key), tuple(key.split(".")), skip)
    protocol: str | list[str] = str(params.get("protocol"))
    if group.root:
        protocol = chosen(params) or [str(params.get("protocol"))]
    memo = hashes if hashes is not None else {}
    inputs = {}
    for rel in group_inputs(group, root, protocol, settings):
        if rel not in memo:
            memo[rel] = input_hash(root, rel)
        inputs[rel] = memo[rel]
    head = (
        f"# What the {group.name} stages read (written by the check stage, "
        "stylisticbias.stage_inputs); they re-run when it changes.\n"
    )
    body = {"settings": settings, "inputs": inputs}
    return head + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=100)


def stage_input_files(
    params: Mapping[str, Any], root: Path, jobs: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[Path, str]:
    """Every file the first stage writes (relative path -> text): the resolved configuration,
    each protocol's job (``jobs``: ``{protocol: its whole configuration}``, default the one job
    ``params`` is) and its groups' files (per judged model for the judge group), and the files
    of the groups written once per run."""
    out: dict[Path, str] = {RESOLVED: dump_params(dict(params))}
    jobs = jobs if jobs is not None else {str(params.get("protocol")): params}
    generators = set(params.get("generator_protocols") or {})
    hashes: dict[str, str] = {}
    for protocol, job in jobs.items():
        base = CONFIG_DIR / protocol
        out[base / RESOLVED.name] = dump_params(dict(job))
        for group in GROUPS:
            if group.root or (protocol in generators and not group.generator):
                continue
            if group.per_model:
                for model in job.get("models") or {}:
                    out[base / group.name / f"{model}.yaml"] = group_file(
                        group, job, root, str(model), hashes
                    )
            else:
                out[base / f"{group.name}.yaml"] = group_file(group, job, root, hashes=hashes)
    for group in GROUPS:
        if group.root:
            out[CONFIG_DIR / f"{group.name}.yaml"] = group_file(group, params, root, hashes=hashes)
    return out


def write_stage_inputs(
    params: Mapping[str, Any], root: Path, jobs: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Path]:
    """Write :func:`stage_input_files` under ``root`` (a file whose text is unchanged is left
    alone; files of models and protocols no longer run are removed). Returns the files
    rewritten."""
    files = stage_input_files(params, root, jobs)
    written = []
    base = root / CONFIG_DIR
    for old in base.rglob("*.yaml") if base.exists() else []:
        if old.relative_to(root) not in files:
            old.unlink()
    for folder in sorted(base.rglob("*"), reverse=True) if base.exists() else []:
        if folder.is_dir() and not any(folder.iterdir()):  # a protocol or model no longer run
            folder.rmdir()
    for rel, text in files.items():
        path = root / rel
        if rel.name == RESOLVED.name:  # always rewritten: newer than params.yaml (default_params)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    log.info("%s: %d file(s) rewritten", CONFIG_DIR, len(written))
    return written
