"""Loading a protocol by name (``conf/benchmark/<name>.yaml``, cached by path and content) and
resolving a configuration's selections (``judge.scenarios``/``orderings``) against it.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from stylisticbias.benchmark.parse import benchmark_from_config
from stylisticbias.benchmark.spec import (
    Benchmark,
    ParserRules,
)
from stylisticbias.config import SAFE_LOADER, read_config_text, yaml_error_line
from stylisticbias.errors import StylisticBiasError

# ---- loading by name --------------------------------------------------------------------------


def protocol_path(name: str | Path) -> Path:
    """The file of a protocol: ``conf/benchmark/<name>.yaml``, or ``name`` itself if it is a
    path to a ``.yaml`` file. Unknown names list the valid ones."""
    from stylisticbias.config import conf_dir

    text = str(name)
    if text.endswith((".yaml", ".yml")):
        p = Path(text)
        if not p.is_file():
            raise StylisticBiasError(f"protocol: file {text} not found")
        return p
    p = conf_dir() / "benchmark" / f"{text}.yaml"
    if not p.is_file():
        valid = sorted(q.stem for q in (conf_dir() / "benchmark").glob("*.yaml"))
        raise StylisticBiasError(
            f"protocol: unknown protocol {text!r} (no conf/benchmark/{text}.yaml); "
            f"valid: {', '.join(valid)}"
        )
    return p


@functools.lru_cache(maxsize=16)
def _load_cached(where: str, digest: str, text: str) -> Benchmark:
    try:
        cfg = yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise StylisticBiasError(f"{where}: not valid YAML: {yaml_error_line(exc)}") from None
    return benchmark_from_config(cfg, where, digest)


def _display(path: Path) -> str:
    from stylisticbias.config import project_root

    try:
        return str(path.resolve().relative_to(project_root().resolve()))
    except ValueError:
        return str(path)


def load_benchmark(name: str | Path) -> Benchmark:
    """Parse ``conf/benchmark/<name>.yaml`` (or a path to a protocol file) once.

    The result is cached by the file's content, so stages and tests may call it freely.
    """
    path = protocol_path(name)
    text = read_config_text(path)  # one line on a byte that is not UTF-8
    return _load_cached(_display(path), hashlib.sha256(text.encode()).hexdigest(), text)


#: Alias: a protocol is loaded by name.
load_protocol = load_benchmark

#: The paper's protocol: what library calls that are given no protocol read (e.g. the parser).
PAPER_PROTOCOL = "stylisticbias"


def default_parser_rules() -> ParserRules:
    """The paper protocol's parser rules (``conf/benchmark/stylisticbias.yaml``)."""
    return load_benchmark(PAPER_PROTOCOL).parser


def benchmark_name(params: Mapping[str, Any]) -> str:
    """The protocol a composed configuration names (``protocol: <name>`` in params.yaml)."""
    if "protocol" not in params:
        hint = " (an old params.yaml: re-compose it)" if "benchmark" in params else ""
        raise StylisticBiasError(
            f"params.yaml: missing key 'protocol'{hint}; valid: a file name of conf/benchmark/"
        )
    value = params["protocol"]
    if not isinstance(value, str | Path):
        raise StylisticBiasError(
            f"params.yaml: protocol: expected a name of conf/benchmark/*.yaml, got {value!r}"
        )
    return str(value)


def benchmark_from_params(params: Mapping[str, Any]) -> Benchmark:
    """The protocol named by a composed configuration (``protocol: <name>``)."""
    return load_benchmark(benchmark_name(params))


def check_names(kind: str, names: Iterable[str], valid: Iterable[str], where: str) -> None:
    """Raise a one-line error if any of ``names`` is not in ``valid`` (lists the valid choices)."""
    valid_list = list(valid)
    bad = [n for n in names if n not in valid_list]
    if bad:
        raise StylisticBiasError(
            f"{where}: unknown {kind} {', '.join(map(repr, bad))}; valid: {', '.join(valid_list)}"
        )
