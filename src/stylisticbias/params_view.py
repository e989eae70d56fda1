"""``params.yaml`` as the view of an experiment: the settings users sweep, not every default.

``dvc exp show`` lists every leaf of ``params.yaml`` (DVC 3.67), and DVC's Hydra integration
writes ``params.yaml`` by composing a Hydra config on ``dvc exp run -S``. So that composition is a
*view* of ``conf/``, generated into ``conf/dvc/`` (``.dvc/config``: ``hydra.config_dir``) by
:func:`write_view_conf`:

- ``conf/dvc/model/<name>.yaml``: the judged model's engine name (``models.<name>.engine.name``);
- ``conf/dvc/annotator/<name>.yaml``: the annotator's engine (``annotators.<name>.engine``; the
  ``annotate`` stages are one per annotator, so ``dvc.yaml`` iterates over them);
- ``conf/dvc/protocols/<name>.yaml``: the protocol, under ``protocols`` (or
  ``generator_protocols`` for SODA, whose stages are not a judged model's), so that
  ``dvc exp run -S 'protocols=[reflect]'`` chooses protocols as ``model=[...]`` chooses models
  and ``dvc.yaml`` iterates over them;
- ``conf/dvc/experiment/<name>.yaml``: the experiment's model and protocol choice, ``faces.n``
  and ``judge.seeds``, as ``conf/`` composes them for that experiment (and its annotators);
- ``conf/dvc/<group>/<option>.yaml`` for the other groups (``generator``, ``tracking``,
  ``analysis``): the choice, recorded under ``choice`` when appended with ``+group=option``;
- ``conf/dvc/config.yaml``: the defaults (``conf/config.yaml``'s models, annotators and
  experiment) and ``judged_models``, the model choice as one derived list.

Any other key joins the view when it is set (``++qa.policy=exclude``), as a column of its own.
:func:`full_params` turns a view back into the whole configuration: ``conf/config.yaml``
composed with the view's choices (``experiment=``, ``model=[...]``, ``+group=``) and its values
merged on top. The pipeline's first stage does that and writes the result for every other stage
(:mod:`stylisticbias.stage_inputs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from stylisticbias import config
from stylisticbias.config import CHOICE_GROUPS, full_params, is_view
from stylisticbias.errors import StylisticBiasError

__all__ = ["full_params", "is_view"]

#: the view's Hydra config directory, under ``conf/`` (generated; ``.dvc/config`` names it)
VIEW_DIR = config.VIEW_DIR
#: values every experiment's view shows (dotted keys of the configuration)
SHOWN = ("faces.n", "judge.seeds")
#: the group choosing the protocols an experiment runs (``conf/protocols/``)
PROTOCOLS = "protocols"
HEADER = (
    "# GENERATED from conf/ by `python -m stylisticbias.configure compose` (the view DVC composes\n"
    "# into params.yaml on `dvc exp run`; src/stylisticbias/params_view.py). Do not edit.\n"
)


def view_dir() -> Path:
    """``conf/dvc``: the Hydra config directory DVC composes ``params.yaml`` from."""
    return config.conf_dir() / VIEW_DIR


def _root_defaults() -> dict[str, Any]:
    """The group choices of ``conf/config.yaml``'s defaults list (``{"model": [...], ...}``)."""
    root = config.load_yaml_file(config.conf_dir() / "config.yaml")
    out: dict[str, Any] = {}
    for entry in (root.get("defaults") if isinstance(root, Mapping) else None) or []:
        if isinstance(entry, dict):
            out.update({str(k): v for k, v in entry.items()})
    return out


def _get(params: Mapping[str, Any], dotted: str) -> Any:
    node: Any = params
    for part in dotted.split("."):
        node = node[part]
    return node


def _nest(dotted: str, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    node = out
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return out


def _merge(into: dict[str, Any], other: Mapping[str, Any]) -> dict[str, Any]:
    for k, v in other.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v
    return into


def _engine_name(model: str) -> str:
    """The engine a ``conf/model/<model>.yaml`` selects (``- /engine@engine: <name>``)."""
    path = config.conf_dir() / "model" / f"{model}.yaml"
    body = config.load_yaml_file(path)
    for entry in (body.get("defaults") if isinstance(body, Mapping) else None) or []:
        if isinstance(entry, dict):
            for k, v in entry.items():
                if str(k).split("@", 1)[0].strip("/") == "engine":
                    return str(v)
    return str(config.load_group_option("model", model)["engine"]["name"])


def _package(group: str, option: str) -> str:
    """The ``# @package`` of a ``conf/<group>/<option>.yaml`` (its first such line)."""
    path = config.conf_dir() / group / f"{option}.yaml"
    for line in config.read_config_text(path).splitlines():
        if line.startswith("# @package "):
            return line.removeprefix("# @package ").strip()
    return group


def _dump(package: str | None, body: Mapping[str, Any]) -> str:
    pkg = f"# @package {package}\n" if package else ""
    text = yaml.safe_dump(dict(body), sort_keys=False, width=100) if body else ""
    return pkg + HEADER + text


def view_conf_files() -> dict[str, str]:
    """The files of ``conf/dvc/`` (path relative to it -> text), generated from ``conf/``."""
    files: dict[str, str] = {}
    defaults = _root_defaults()
    for model in config.available("model"):
        body = {"engine": {"name": _engine_name(model)}}
        files[f"model/{model}.yaml"] = _dump(f"models.{model}", body)
    for name in config.available("annotator"):
        engine = config.load_group_option("annotator", name).get("engine")
        files[f"annotator/{name}.yaml"] = _dump(f"annotators.{name}", {"engine": engine})
    for name in config.available(PROTOCOLS):
        files[f"{PROTOCOLS}/{name}.yaml"] = _dump(_package(PROTOCOLS, name), {})
    for group in CHOICE_GROUPS:
        for option in config.available(group):
            files[f"{group}/{option}.yaml"] = _dump("choice", {group: option})
    for experiment in config.available("experiment"):
        full = config.compose([f"experiment={experiment}"])
        body: dict[str, Any] = {
            "defaults": [
                {"override /model": list(full.get("models") or {})},
                {"override /annotator": list(full.get("annotators") or {})},
                {f"override /{PROTOCOLS}": chosen_protocols(full)},
            ],
            "experiment": experiment,
        }
        for key in SHOWN:
            _merge(body, _nest(key, _get(full, key)))
        files[f"experiment/{experiment}.yaml"] = _dump("_global_", body)
    root: dict[str, Any] = {
        "defaults": [
            "_self_",
            {"model": list(defaults.get("model") or [])},
            {"annotator": list(defaults.get("annotator") or [])},
            {PROTOCOLS: list(defaults.get(PROTOCOLS) or [])},
            {"experiment": defaults.get("experiment")},
        ],
        "judged_models": "${oc.dict.keys:models}",
        # filled by the protocols group: one key per protocol (dvc.yaml iterates over them)
        "protocols": {},
        "generator_protocols": {},
    }
    files["config.yaml"] = _dump(None, root)
    return files


def chosen_protocols(params: Mapping[str, Any]) -> list[str]:
    """The protocols a configuration (or view) runs: ``protocols``, then ``generator_protocols``."""
    return [*(params.get(PROTOCOLS) or {}), *(params.get("generator_protocols") or {})]


def write_view_conf() -> list[Path]:
    """Rewrite ``conf/dvc/`` from ``conf/`` (stale files removed); returns the files written."""
    base = view_dir()
    want = view_conf_files()
    for old in base.rglob("*.yaml") if base.exists() else []:
        if old.relative_to(base).as_posix() not in want:
            old.unlink()
    written = []
    for rel, text in want.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != text.encode("utf-8"):
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def view_conf_drift() -> list[str]:
    """Files of ``conf/dvc/`` that differ from what ``conf/`` generates (empty: in sync)."""
    base = view_dir()
    want = view_conf_files()
    have = (
        {p.relative_to(base).as_posix() for p in base.rglob("*.yaml")} if base.exists() else set()
    )
    drift = sorted(have - set(want))
    drift += sorted(
        r
        for r, t in want.items()
        if not (base / r).exists() or config.read_config_text(base / r) != t
    )
    return drift


def view_overrides(overrides: Sequence[str]) -> list[str]:
    """Overrides of ``conf/config.yaml`` as overrides of the view (what to pass ``dvc exp run -S``).

    ``model=``/``experiment=`` and the shown keys pass as they are; another group becomes
    ``+group=option``; any other key ``++key=value`` (it joins the view)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    out = []
    parser = OverridesParser.create()
    for text, ov in zip(overrides, parser.parse_overrides(list(overrides)), strict=True):
        key = ov.key_or_group
        bare = text.lstrip("+~")
        engine_name = key.startswith("models.") and key.endswith(".engine.name")
        engine_name |= key.startswith("annotators.") and key.endswith(".engine")
        if ov.is_delete():
            raise StylisticBiasError(f"override {text}: deleting a key is not supported here")
        if key in ("model", "annotator", "experiment", PROTOCOLS) or key in SHOWN or engine_name:
            out.append(bare)
        elif key in CHOICE_GROUPS:
            out.append(f"+{bare}")
        else:
            out.append(f"++{bare}")
    return out


def compose_view(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """``conf/dvc/config.yaml`` composed with ``overrides`` (of the view) and resolved: the
    ``params.yaml`` DVC's Hydra integration writes for ``dvc exp run -S <overrides>``."""
    return config.compose_dvc_view(overrides)


def dump_view(view: Mapping[str, Any]) -> str:
    """``params.yaml`` text of a view (a header, then the keys in composition order)."""
    header = (
        "# GENERATED from conf/ (python -m stylisticbias.configure compose, or dvc exp run -S).\n"
        "# The experiment's view: what dvc exp show lists. The whole configuration it stands for\n"
        '# is data/config/resolved.yaml (README "Configuration").\n'
    )
    return header + yaml.safe_dump(dict(view), sort_keys=False, allow_unicode=True, width=100)
