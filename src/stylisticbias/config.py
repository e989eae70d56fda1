"""Configuration: compose ``conf/`` with Hydra, keep ``params.yaml`` in sync, load typed specs.

``conf/`` is the single source of truth, composed against the typed specs of
:mod:`stylisticbias.spec` (registered as Hydra structured configs): an unknown key, a wrong
type or an out-of-range value fails composition in one line naming the key, the file or
override, and the valid keys. ``params.yaml`` is ``conf/config.yaml`` composed and resolved
(exactly what DVC's Hydra integration writes on ``dvc exp run``); it is committed so that plain
``dvc repro`` works. Stage scripts parse it once into a :class:`~stylisticbias.spec.Config`
(:func:`load_config`); the judged models are its ``models`` section, composed from
``conf/model/<name>.yaml`` (``model=[a,b]`` on the command line, or an experiment).

Command line::

    python -m stylisticbias.configure compose [overrides...]   # rewrite params.yaml
    python -m stylisticbias.configure check                    # exit 1 if params.yaml drifted
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from stylisticbias.errors import StylisticBiasError

if TYPE_CHECKING:  # OmegaConf and the typed specs load where a function needs them: reading
    # params.yaml takes neither (a stage starts reading its inputs before it parses them)
    from stylisticbias.spec import Config

#: PyYAML's safe loader, its C implementation where PyYAML was built with it (the same
#: documents in a fraction of the time: every stage reads params.yaml and the protocol)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = ROOT / "conf"
PARAMS_FILE = ROOT / "params.yaml"
#: environment variable naming the params file stages read instead of ``params.yaml`` (a sweep
#: job points its stage scripts at its own params file)
PARAMS_ENV = "STYLISTICBIAS_PARAMS"
#: the whole configuration, resolved from ``params.yaml`` (the pipeline's first stage writes it)
RESOLVED = Path("data/config/resolved.yaml")
#: keys of ``params.yaml`` (an experiment's view) that are not keys of the configuration
VIEW_ONLY = ("experiment", "choice", "judged_models")
#: groups a view records only when chosen on the command line (``+generator=import``)
CHOICE_GROUPS = ("generator", "tracking", "analysis")
#: compositions made in this process, keyed by everything they depend on (:func:`_compose_key`):
#: ``configure compose``/``check`` compose the same experiments more than once, and so do tests
_COMPOSED: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_COMPOSED_MAX = 32
#: an environment variable a composition reads (``${oc.env:NAME}`` or ``${oc.env:NAME,default}``)
_ENV_REF = re.compile(r"oc\.env:\s*([^,}\s]+)")


def project_root() -> Path:
    """The repository root when run from a checkout, else the current directory."""
    if (Path.cwd() / "conf" / "config.yaml").exists():
        return Path.cwd()
    return ROOT


def conf_dir() -> Path:
    """The ``conf/`` directory of the project being run."""
    return project_root() / "conf"


def compose(
    overrides: Sequence[str] = (),
    config_name: str = "config",
    *,
    values: Mapping[str, Any] | None = None,
    where: str | None = None,
    after: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Compose ``conf/<config_name>.yaml`` with Hydra overrides and return a resolved plain dict.

    ``values`` (a nested mapping, e.g. the settings of ``params.yaml``, the experiment's view)
    are merged on top before interpolations resolve, checked against the same typed specs;
    ``where`` names their source in an error. The result is one protocol's job
    (:func:`_protocol_job`): its ``protocol_settings`` come after ``values`` and the experiment,
    and before what a user set -- a value override in ``overrides`` (``faces.n=8``) and
    ``after`` (the values of a view that differ from its experiment's: :func:`full_params`) --
    so an explicit setting applies to every protocol.

    A composition already made in this process is returned again (a copy) while ``conf/``, the
    arguments and the environment are unchanged (:func:`_compose_key`); a failing one is not
    kept."""
    key = _compose_key(overrides, config_name, values, after)
    if key in _COMPOSED:
        _COMPOSED.move_to_end(key)
        return copy.deepcopy(_COMPOSED[key])
    container = _compose(overrides, config_name, values=values, where=where, after=after)
    _COMPOSED[key] = copy.deepcopy(container)
    while len(_COMPOSED) > _COMPOSED_MAX:
        _COMPOSED.popitem(last=False)
    return container


def _compose_key(
    overrides: Sequence[str],
    config_name: str,
    values: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None = None,
) -> tuple[Any, ...]:
    """What a composition depends on: the names and text of the files under ``conf/`` (their
    digest; not where ``conf/`` is: a copy of it composes the same), the arguments and the
    variables the files and values read (``${oc.env:NAME}``); the typed specs are the code's
    (``where`` words an error only, and a failing composition is not kept)."""
    base = conf_dir()
    digest = hashlib.blake2b(digest_size=20)
    texts = [repr(values), repr(after), *overrides]
    for path in sorted(base.rglob("*.yaml")):
        # every file strictly decoded here, before Hydra reads any (a byte that is not UTF-8 is
        # one line naming the file and its offset, not Hydra's UnicodeDecodeError traceback)
        text = read_config_text(path)
        digest.update(path.relative_to(base).as_posix().encode() + b"\0")
        digest.update(text.encode("utf-8") + b"\0")
        texts.append(text)
    names = sorted({name for text in texts for name in _ENV_REF.findall(text)})
    env = tuple((name, os.environ.get(name)) for name in names)
    return (digest.hexdigest(), config_name, tuple(overrides), repr(values), repr(after), env)


def _compose(
    overrides: Sequence[str],
    config_name: str,
    *,
    values: Mapping[str, Any] | None,
    where: str | None,
    after: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Compose with Hydra and check the result (what :func:`compose` keeps)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from stylisticbias.spec.errors import explain
    from stylisticbias.spec.parse import config_from_params
    from stylisticbias.spec.store import register

    register()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            cfg = hydra_compose(config_name=config_name, overrides=list(overrides))
        if values:
            # a key a view adds (`+models.m.endpoint.batch=true`) is merged, not refused here:
            # the typed parse below refuses what no spec knows, in one line
            OmegaConf.set_struct(cfg, False)
            try:
                cfg = OmegaConf.merge(cfg, dict(values))
            except OmegaConfBaseException as exc:
                raise StylisticBiasError(_merge_error(exc, cfg, where or "values")) from None
        cfg = as_protocol_job(cfg, overrides, where or "conf/")
        if after:
            try:
                cfg = OmegaConf.merge(cfg, dict(after))
            except OmegaConfBaseException as exc:
                raise StylisticBiasError(_merge_error(exc, cfg, where or "values")) from None
        container = OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException) as exc:
        raise StylisticBiasError(explain(exc, overrides, conf_dir())) from None
    except yaml.YAMLError as exc:  # a file under conf/ that is not valid YAML
        first = " ".join(str(exc).split())
        raise StylisticBiasError(f"conf/: not valid YAML: {first}") from None
    finally:
        GlobalHydra.instance().clear()
    assert isinstance(container, dict)
    if container.get("sweep", "") is None:  # set by conf/sweep.yaml only
        del container["sweep"]
    if where is None:
        where = f"conf/ with {' '.join(overrides)}" if overrides else "conf/"
    config_from_params(container, where=where)  # ranges, keys added with `+`
    return container  # type: ignore[return-value]


def as_protocol_job(cfg: Any, overrides: Sequence[str], where: str) -> Any:
    """A composed (unresolved) Hydra config as one protocol's job (:func:`_protocol_job`), the
    values ``overrides`` set (``faces.n=8``) winning over the protocol's settings: what
    :func:`compose` and a sweep job (:mod:`stylisticbias.sweep`) both do."""
    from omegaconf import OmegaConf

    user = _value_overrides(overrides)
    kept = {k: OmegaConf.select(cfg, k) for k in user}
    cfg = _protocol_job(cfg, where)
    for k, v in kept.items():  # a value the user set wins over the protocol's settings
        OmegaConf.update(cfg, k, v, merge=False)
    return cfg


def _value_overrides(overrides: Sequence[str]) -> list[str]:
    """The keys ``overrides`` set a value of (``faces.n=8``, ``++qa.policy=x``), not a group
    choice (``model=[...]``, ``experiment=...``, ``+generator=import``)."""
    if not overrides:
        return []
    from hydra.core.override_parser.overrides_parser import OverridesParser

    groups = {p.name for p in conf_dir().iterdir() if p.is_dir()}
    out = []
    for ov in OverridesParser.create().parse_overrides(list(overrides)):
        key = ov.key_or_group
        if key.split("/")[0].split("@")[0] not in groups and not ov.is_delete():
            out.append(key)
    return out


#: keys a protocol's settings (``protocol_settings.<name>``) may not set: they choose the jobs
_JOB_KEYS = ("protocol", "protocols", "generator_protocols", "protocol_settings")


def _protocol_job(cfg: Any, where: str) -> Any:
    """``cfg`` as the configuration of one protocol's job: ``protocol`` (unset: the first of
    ``protocols``/``generator_protocols``) with ``protocol_settings.<protocol>`` merged on top
    (:mod:`stylisticbias.protocols`)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if OmegaConf.is_missing(cfg, "protocol"):
        chosen = [*(cfg.get("protocols") or {}), *(cfg.get("generator_protocols") or {})]
        if not chosen:
            raise StylisticBiasError(
                f"{where}: no protocol chosen; choose them with protocols=[...] (valid: "
                f"{', '.join(available('protocols'))})"
            )
        cfg.protocol = str(chosen[0])
    every = cfg.get("protocol_settings") or {}
    known = available("protocols")
    for name, entry in every.items():
        if name not in known:
            raise StylisticBiasError(
                f"{where}: protocol_settings.{name}: unknown protocol; valid: {', '.join(known)}"
            )
        bad = [k for k in (entry or {}) if k in _JOB_KEYS]
        if bad:
            raise StylisticBiasError(
                f"{where}: protocol_settings.{name}.{bad[0]}: a protocol's settings cannot "
                "choose protocols; set them at the top level"
            )
    settings = every.get(str(cfg.protocol))
    if not settings:
        return cfg
    try:
        return OmegaConf.merge(cfg, OmegaConf.to_container(settings))
    except OmegaConfBaseException as exc:
        where = f"{where}: protocol_settings.{cfg.protocol}"
        raise StylisticBiasError(_merge_error(exc, cfg, where)) from None


def _merge_error(exc: Exception, cfg: Any, where: str) -> str:
    """One line for a value that does not fit the composed configuration (``where``: its file)."""
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    key = str(getattr(exc, "full_key", "") or "")
    if isinstance(exc, ConfigKeyError | ConfigAttributeError) and key:
        parent, _, _ = key.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        valid = ", ".join(str(k) for k in node) if isinstance(node, DictConfig) else "-"
        return f"{where}: unknown key {key!r}; valid keys of {parent or '<root>'}: {valid}"
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"{where}: {key}: {msg}"


def display_path(path: str | Path) -> str:
    """``path`` as an error names it: relative to the project root where it lies inside it."""
    p = Path(path)
    try:
        return p.resolve().relative_to(project_root().resolve()).as_posix()
    except (OSError, ValueError):
        return str(p)


def read_config_text(path: str | Path) -> str:
    """The text of a configuration file (a file of ``conf/``, ``params.yaml``, a resolved
    configuration): every configuration file is read through here (or :func:`load_yaml_file`).

    A byte that is not UTF-8 is one :class:`StylisticBiasError` line naming the file, the byte,
    its offset and line; an unreadable file one line naming it."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise StylisticBiasError(
            f"{display_path(p)}: cannot read: {exc.strerror or type(exc).__name__}"
        ) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise StylisticBiasError(
            f"{display_path(p)}: not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset "
            f"{exc.start} (line {line}); configuration files must be UTF-8"
        ) from None


def yaml_error_line(exc: yaml.YAMLError) -> str:
    """A YAML parse error in one line (PyYAML's message spans several): the problem, its line
    and column, and what it was parsing."""
    problem = getattr(exc, "problem", None)
    if not problem:
        return " ".join(str(exc).split())
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    context, at = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and at is not None:
        context = f"{context} from line {at.line + 1}, column {at.column + 1}"
    return f"{where}{' '.join(str(problem).split())}" + (
        f" ({' '.join(str(context).split())})" if context else ""
    )


def load_yaml_file(path: str | Path) -> Any:
    """A configuration file parsed as YAML (:func:`read_config_text`); a YAML error is one
    :class:`StylisticBiasError` line naming the file, the line and the column."""
    text = read_config_text(path)
    try:
        return yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise StylisticBiasError(
            f"{display_path(path)}: not valid YAML: {yaml_error_line(exc)}"
        ) from None


def dump_params(params: dict[str, Any]) -> str:
    """Serialize composed params the way ``params.yaml`` is written (stable key order)."""
    header = (
        "# GENERATED from conf/ (python -m stylisticbias.configure compose, or dvc exp run).\n"
        "# Do not edit by hand: change conf/ and re-compose (tests/test_config.py checks).\n"
    )
    return header + yaml.safe_dump(params, sort_keys=False, allow_unicode=True, width=100)


def load_params(path: str | Path | None = None) -> dict[str, Any]:
    """The whole composed configuration as a plain dict.

    Without ``path``: the file named by ``$STYLISTICBIAS_PARAMS`` (a sweep job's own params),
    else :func:`default_params`. A file that is an experiment's view (``params.yaml``) is
    resolved into the whole configuration (:func:`full_params`).
    """
    env_path = os.environ.get(PARAMS_ENV)
    if not path and not env_path:
        return default_params()
    p = Path(path) if path else Path(env_path)
    data = _read_params(p)
    return full_params(data, where=p.name) if is_view(data) else data


def _read_params(p: Path) -> dict[str, Any]:
    if not p.exists():
        raise StylisticBiasError(
            f"{p}: not found; run `python -m stylisticbias.configure compose` to create it"
        )
    data = load_yaml_file(p)
    if not isinstance(data, dict):
        raise StylisticBiasError(f"{p}: expected a mapping at the top level")
    return data


def load_config(path: str | Path | None = None) -> Config:
    """The configuration parsed once into typed, frozen specs (one error line on a bad key):
    ``path``, else ``$STYLISTICBIAS_PARAMS``, else the whole configuration ``params.yaml``
    stands for (:func:`default_params`)."""
    from stylisticbias.spec.parse import config_from_params

    env_path = os.environ.get(PARAMS_ENV)
    if not path and not env_path:
        return config_from_params(default_params(), where=RESOLVED.name)
    p = Path(path) if path else Path(env_path)
    return config_from_params(load_params(p), where=str(p.name))


def default_params() -> dict[str, Any]:
    """The whole configuration of the project: ``data/config/resolved.yaml`` (written by the
    pipeline's first stage and by ``configure compose`` from ``params.yaml``), or, where it is
    missing or older than ``params.yaml``, ``params.yaml`` resolved here
    (:func:`full_params`)."""
    root = project_root()
    params_file, resolved = root / "params.yaml", root / RESOLVED
    if resolved.exists() and (
        not params_file.exists() or resolved.stat().st_mtime >= params_file.stat().st_mtime
    ):
        return _read_params(resolved)
    data = _read_params(params_file)
    return full_params(data, where=params_file.name) if is_view(data) else data


def judged_models(params: dict[str, Any] | Config) -> list[str]:
    """Names of the judged models (``models`` of the composed configuration), in order."""
    from stylisticbias.spec import Config

    if isinstance(params, Config):
        return params.model_names
    return [str(m) for m in (params.get("models") or {})]


def available(group: str) -> list[str]:
    """Option names of a config group (``conf/<group>/*.yaml``)."""
    return sorted(p.stem for p in (conf_dir() / group).glob("*.yaml") if not p.stem.startswith("_"))


def load_group_option(group: str, name: str) -> dict[str, Any]:
    """Load one option of a group (e.g. ``model``/``qwen3-vl-8b``) as a resolved dict.

    A model is composed with its engine (``models.<name>`` of ``model=[<name>]``); another
    group's option is read as written (its schema line dropped). Raises
    :class:`StylisticBiasError` naming the valid options when ``name`` is unknown.
    """
    if group == "model":
        return load_models([name])[name]
    path = _option_file(group, name)
    from omegaconf import DictConfig, OmegaConf

    cfg = OmegaConf.create(read_config_text(path))  # what OmegaConf.load parses, read by us
    assert isinstance(cfg, DictConfig)
    out = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(out, dict)
    out.pop("defaults", None)
    out.setdefault("name", name)
    return out  # type: ignore[return-value]


def load_models(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The sections of several models (``conf/model/<name>.yaml``, each composed with its
    engine), in one composition: ``models`` of ``model=[a,b,...]`` (each section as
    :func:`load_group_option` gives it alone, at a fraction of the cost of one composition per
    model). An unknown name raises naming the valid options."""
    unique = list(dict.fromkeys(names))
    for name in unique:
        _option_file("model", name)
    if not unique:
        return {}
    models = compose([f"model=[{','.join(unique)}]"])["models"]
    return {name: dict(models[name]) for name in unique}


def _option_file(group: str, name: str) -> Path:
    """``conf/<group>/<name>.yaml``; an unknown name raises naming the valid options."""
    path = conf_dir() / group / f"{name}.yaml"
    if not path.exists():
        raise StylisticBiasError(
            f"unknown {group} {name!r}; valid: {', '.join(available(group))} (conf/{group}/*.yaml)"
        )
    return path


def _walk(tree: Mapping[str, Any], dotted: str) -> tuple[Any, int]:
    """``(node, -1)`` for the node at ``dotted``; ``(parent, i)`` where part ``i`` is missing
    under ``parent``."""
    node: Any = tree
    for i, part in enumerate(dotted.split(".")):
        if not isinstance(node, Mapping) or part not in node:
            return node, i
        node = node[part]
    return node, -1


def get(params: dict[str, Any], dotted: str) -> Any:
    """``get(params, "paths.scores")`` with a clear error naming the missing key."""
    node, missing = _walk(params, dotted)
    if missing >= 0:
        where = ".".join(dotted.split(".")[:missing]) or "<root>"
        keys = ", ".join(node) if isinstance(node, Mapping) else "-"
        raise StylisticBiasError(f"params.yaml: missing key {dotted!r} (under {where}: {keys})")
    return node


def subtree(params: Mapping[str, Any], dotted: str) -> Any:
    """``params[a][b]`` for ``"a.b"``; None where a key is missing (a setting left unset)."""
    node, missing = _walk(params, dotted)
    return None if missing >= 0 else node


def config_path(config: Config, key: str) -> Path:
    """``paths.<key>`` of a typed configuration, absolute (relative paths: the project root)."""
    p = Path(str(getattr(config.paths, key)))
    return p if p.is_absolute() else project_root() / p


def config_output(config: Config, key: str) -> Path:
    """``paths.<key>`` resolved and checked against every other declared output, as
    :func:`stylisticbias.outputs.stage_output` checks it for composed params (the generator's
    inputs, ``source``/``watch_dir``, included)."""
    from dataclasses import asdict, is_dataclass

    from stylisticbias.output_paths import stage_output

    gen = config.generator
    generator = asdict(gen) if is_dataclass(gen) and not isinstance(gen, type) else dict(gen or {})
    view = {"paths": asdict(config.paths), "generator": generator}
    return stage_output(view, key, project_root())


def configured_annotator(config: Config, name: str) -> Any:
    """The typed spec of ``annotators.<name>``; an unknown name lists the configured ones."""
    if name not in config.annotators:
        raise StylisticBiasError(
            f"annotator {name!r} is not configured; configured: "
            f"{', '.join(config.annotators) or '(none)'} (params.yaml annotators; choose with "
            "`annotator=[...]`)"
        )
    return config.annotators[name]


def choices(view: Mapping[str, Any]) -> list[str]:
    """The group overrides of ``conf/config.yaml`` a view records (experiment, models, +groups)."""
    out = []
    if view.get("experiment"):
        out.append(f"experiment={view['experiment']}")
    models = view.get("models")
    if not isinstance(models, Mapping):
        raise StylisticBiasError(
            f"params.yaml: models: expected the judged models' mapping, got {models!r} "
            "(choose them with model=[...])"
        )
    out.append(f"model=[{','.join(str(m) for m in models)}]")
    out.append(f"annotator=[{','.join(str(a) for a in view.get('annotators') or {})}]")
    if "protocols" in view or "generator_protocols" in view:
        chosen = [*(view.get("protocols") or {}), *(view.get("generator_protocols") or {})]
        out.append(f"protocols=[{','.join(str(p) for p in chosen)}]")
    for group, choice in (view.get("choice") or {}).items():
        if group not in CHOICE_GROUPS:
            raise StylisticBiasError(
                f"params.yaml: choice.{group}: unknown group; valid: {', '.join(CHOICE_GROUPS)}"
            )
        out.append(f"{group}={choice}")
    return out


def full_params(view: Mapping[str, Any], where: str = "params.yaml") -> dict[str, Any]:
    """The whole configuration a view stands for: ``conf/`` composed with its choices, its
    values merged on top (one error line naming the key on a bad one)."""
    models = list(view.get("models") or {}) if isinstance(view.get("models"), Mapping) else None
    derived = view.get("judged_models")
    if derived is not None and models is not None and list(derived) != models:
        raise StylisticBiasError(
            f"{where}: judged_models={list(derived)} is derived from models "
            f"({models}); choose the models with model=[...], not judged_models"
        )
    values = {k: v for k, v in view.items() if k not in VIEW_ONLY}
    return compose(choices(view), values=values, where=where, after=user_values(view, values))


#: the view's Hydra config directory, under ``conf/`` (generated by stylisticbias.params_view;
#: ``.dvc/config`` names it)
VIEW_DIR = "dvc"


def compose_dvc_view(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """``conf/dvc/config.yaml`` composed with ``overrides`` (of the view) and resolved: the
    ``params.yaml`` DVC's Hydra integration writes for ``dvc exp run -S <overrides>``."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir() / VIEW_DIR), version_base="1.3"):
            cfg = hydra_compose(config_name="config", overrides=list(overrides))
        out = OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StylisticBiasError(f"conf/{VIEW_DIR}: {' '.join(overrides)}: {first}") from None
    finally:
        GlobalHydra.instance().clear()
    assert isinstance(out, dict)
    return out  # type: ignore[return-value]


def user_values(view: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The values of a view a user set: those that differ from the view its choices alone
    compose (``conf/dvc/``: the experiment, models, protocols; ``dvc exp run -S faces.n=20``
    differs, ``-S 'protocols=[reflect]'`` leaves the experiment's shown values as they were),
    nested; they apply to every protocol's job, after its ``protocol_settings`` (the
    experiment's own values do not: each protocol keeps its own)."""
    picks = [c if c.split("=", 1)[0] not in CHOICE_GROUPS else f"+{c}" for c in choices(view)]
    base = compose_dvc_view(picks)
    out: dict[str, Any] = {}

    def walk(node: Any, ref: Any, path: list[str]) -> None:
        if isinstance(node, Mapping) and node and isinstance(ref, Mapping):
            for k, v in node.items():
                walk(v, ref.get(k, _ABSENT), [*path, str(k)])
        elif node != ref:
            target = out
            for part in path[:-1]:
                target = target.setdefault(part, {})
            target[path[-1]] = node

    for key in values:
        if key not in ("protocols", "generator_protocols", "protocol_settings", "models"):
            walk(values[key], base.get(key, _ABSENT), [key])
    return out


_ABSENT = object()


#: the keys every whole configuration holds (the sections of :class:`stylisticbias.spec.Config`
#: but ``sweep``; tests/test_view_paths.py checks them against the spec); a view holds only the
#: sections an experiment sets (``++paths.qa=...``)
WHOLE_KEYS = (
    "seed",
    "paths",
    "faces",
    "generation",
    "gallery",
    "variations",
    "judge",
    "protocol",
    "protocols",
    "generator_protocols",
    "protocol_settings",
    "models",
    "judged_models",
    "generator",
    "analysis",
    "tracking",
    "qa",
    "annotate",
    "annotators",
    "soda",
    "release",
)


def is_view(params: Mapping[str, Any]) -> bool:
    """Whether ``params`` is an experiment's view (``params.yaml``), not a whole configuration.

    A view always holds the derived ``judged_models``; it holds a key the typed configuration
    refuses (``experiment``, ``choice``), or lacks a section every whole configuration holds
    (:data:`WHOLE_KEYS`). Any section it sets (``paths``, ``faces``, ...) is merged on top of
    ``conf/`` by :func:`full_params`, whichever it is."""
    if "judged_models" not in params:
        return False
    only_view = any(key in params for key in VIEW_ONLY if key != "judged_models")
    return only_view or not all(key in params for key in WHOLE_KEYS)
