"""Writable OmegaConf nodes of frozen spec classes (Hydra merges YAML into them)."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf


def _writable(node: Any) -> Any:
    """Clear the read-only flag frozen dataclasses set, so YAML can be merged into the schema
    (the objects built from the composed config are frozen again)."""
    node._set_flag("readonly", None)
    if isinstance(node, DictConfig):
        for key in list(node.keys()):
            child = node._get_node(key)
            if child is not None:
                _writable(child)
    return node


def schema(cls: type) -> DictConfig:
    """``cls`` as a writable structured config node."""
    return _writable(OmegaConf.structured(cls))
