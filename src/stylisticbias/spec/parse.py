"""Parse a composed configuration (``params.yaml``, a mapping) into typed, frozen specs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.annotate import ANNOTATOR_ENGINES, ANNOTATOR_SPECS, AnnotatorSpec
from stylisticbias.spec.errors import explain
from stylisticbias.spec.models import MODEL_SPECS
from stylisticbias.spec.nodes import schema
from stylisticbias.spec.root import GENERATOR_TARGETS, Config, ProtocolSpec


@cache
def _schema(cls: type) -> DictConfig:
    """``cls``'s schema node, built once per process (building a structured node from the
    dataclass costs more than the merge that copies it; ``OmegaConf.merge`` leaves it as is)."""
    return schema(cls)


def typed(cls: type, data: Any, where: str) -> Any:
    """``data`` (a mapping) as a frozen ``cls`` instance, checked against its schema."""
    try:
        node = OmegaConf.merge(_schema(cls), data)
        out = OmegaConf.to_object(node)
    except StylisticBiasError:
        raise
    except OmegaConfBaseException as exc:
        msg = explain(exc).removeprefix("conf/: ")
        raise StylisticBiasError(f"{where}: {msg}") from None
    return out


def with_defaults(
    cls: type, defaults: Mapping[str, Any], given: Mapping[str, Any], where: str
) -> Any:
    """``given`` over ``defaults`` (nested sections merged key by key) as a frozen ``cls``."""
    try:
        data = OmegaConf.merge(OmegaConf.create(dict(defaults)), OmegaConf.create(dict(given)))
    except OmegaConfBaseException as exc:
        raise StylisticBiasError(f"{where}: {explain(exc).removeprefix('conf/: ')}") from None
    return typed(cls, data, where)


def model_spec(name: str, data: Mapping[str, Any]) -> Any:
    """A model section as the spec of its engine's kind."""
    engine = (data.get("engine") or {}) if isinstance(data, Mapping) else {}
    kind = engine.get("name") if isinstance(engine, Mapping) else None
    if kind not in MODEL_SPECS:
        raise StylisticBiasError(
            f"models.{name}.engine.name={kind!r}; valid: {', '.join(MODEL_SPECS)}"
        )
    try:
        return typed(MODEL_SPECS[kind], data, f"conf/model/{name}.yaml")
    except StylisticBiasError as exc:  # name the key in full: models.<name>.<key>
        msg = str(exc)
        msg = msg.replace("unknown key '", f"unknown key 'models.{name}.")
        msg = msg.replace("valid keys of ", f"valid keys of models.{name}.")
        if msg.startswith("engine."):
            msg = f"models.{name}.{msg}"
        raise StylisticBiasError(msg) from None


def generator_spec(data: Mapping[str, Any]) -> Any:
    """The generator section as its spec (a plug-in generator's section stays a mapping)."""
    cls = GENERATOR_TARGETS.get(str(data.get("_target_", "")))
    return typed(cls, data, "generator") if cls else dict(data)


def config_from_params(params: Mapping[str, Any], where: str = "params.yaml") -> Config:
    """Parse a composed configuration (a plain mapping) into a :class:`Config`."""
    if isinstance(params, DictConfig):
        params = OmegaConf.to_container(params, resolve=True)  # type: ignore[assignment]
    body = {**params, "models": {}, "generator": None, "annotators": {}}
    body.update(protocols={}, generator_protocols={})
    base = typed(Config, body, where)
    chosen = {
        key: {
            str(k): typed(ProtocolSpec, v, f"conf/protocols/{k}.yaml")
            for k, v in (params.get(key) or {}).items()
        }
        for key in ("protocols", "generator_protocols")
    }
    models = {str(k): model_spec(str(k), v) for k, v in (params.get("models") or {}).items()}
    generator = generator_spec(params.get("generator") or {})
    annotators = {
        str(k): annotator_spec(str(k), v) for k, v in (params.get("annotators") or {}).items()
    }
    return replace(base, models=models, generator=generator, annotators=annotators, **chosen)


def annotator_spec(name: str, data: Mapping[str, Any]) -> AnnotatorSpec:
    """``annotators.<name>`` as the spec of its engine (one error line naming the file)."""
    kind = data.get("engine", "simulated") if isinstance(data, Mapping) else None
    if kind not in ANNOTATOR_SPECS:
        raise StylisticBiasError(
            f"annotators.{name}.engine={kind!r}; valid: {', '.join(ANNOTATOR_ENGINES)}"
        )
    spec = typed(ANNOTATOR_SPECS[kind], data, f"conf/annotator/{name}.yaml")
    if spec.name != name:
        raise StylisticBiasError(
            f"conf/annotator/{name}.yaml: name={spec.name!r} differs from its package "
            f"annotators.{name}"
        )
    return spec
