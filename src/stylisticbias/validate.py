"""Checks of a composed configuration that need more than its schema (run by ``config compose``).

The stages check the same things when they start; running them at compose time means a typo in
``conf/`` or an override is reported before ``params.yaml`` is written.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)


def validate_params(params: dict[str, Any]) -> None:
    """Raise :class:`StylisticBiasError` naming the first bad key of ``params`` and its choices.

    A job of a protocol that audits a generator (SODA, ``generator_protocols``) checks its
    outputs and its protocol file only. Otherwise checks: the benchmark definition parses and
    names a registered task type; ``faces`` and ``judge`` settings have valid types and ranges;
    every output path lies inside the data root and overlaps no other; every judged model's
    name can name a DVC stage and its engine settings parse (an openai model's endpoint
    included); ``judge.scenarios`` is ``all`` or known ids; and, for the procedural generator,
    that it can draw every variation value of the benchmark.
    """
    from stylisticbias.benchmark import benchmark_from_params
    from stylisticbias.config import project_root
    from stylisticbias.judge.protocol.settings import check_judge_section
    from stylisticbias.judge.protocol.tasks.registry import task_type
    from stylisticbias.output_paths import check_all_outputs

    if params.get("protocol") in (params.get("generator_protocols") or {}):
        # a generator audit's job (SODA): nothing is judged; its stage reads soda.protocol
        check_all_outputs(params, project_root())
        from stylisticbias.soda.protocol import load_soda

        load_soda(str((params.get("soda") or {}).get("protocol")))
        return
    bench = benchmark_from_params(params)
    task_type(bench.task)  # the protocol's task type is registered
    check_all_outputs(params, project_root())
    judge = params.get("judge") or {}
    check_judge_section(judge, bench)
    for name, model in (params.get("models") or {}).items():
        _check_model(str(name), model)
        _check_tasks(str(name), model, bench, judge.get("scenarios"))
    names = params.get("judged_models")
    if names is not None and list(names) != list(params.get("models") or {}):
        raise StylisticBiasError(
            f"judged_models={list(names)} is derived from models "
            f"({list(params.get('models') or {})}); do not set it: choose the judged models "
            "with `model=[...]`"
        )
    _check_generator(params.get("generator") or {}, bench)


#: a model name must be usable as a DVC stage key, a params path and a folder name
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def _check_model(name: str, model: dict[str, Any]) -> None:
    """A judged model's name and its engine-specific settings."""
    if not _MODEL_NAME.match(name):
        raise StylisticBiasError(
            f"models.{name}: a model name may hold letters, digits, '-' and '_' only (it names "
            "a DVC stage, a params path and data/judgments/<name>; dots would split the path)"
        )
    if model.get("name") != name:
        raise StylisticBiasError(
            f"models.{name}.name={model.get('name')!r}: must equal the key {name!r} "
            f"(conf/model/{name}.yaml)"
        )
    if (model.get("engine") or {}).get("name") == "openai":  # endpoint keys, URL, batch limits
        from stylisticbias.judge.engines.openai.spec import endpoint_spec

        endpoint_spec(model)


def _check_tasks(name: str, model: dict[str, Any], bench: Any, ids: Any = None) -> None:
    """The model's engine can judge every task type the protocol asks (one line if not)."""
    from stylisticbias.judge.protocol.tasks.registry import check_engine_tasks

    engine = str((model.get("engine") or {}).get("name") or "")
    if not engine:  # a hand-written section: the engine package its class lives in
        found = re.search(r"\.engines\.(\w+)\.", str(model.get("_target_") or ""))
        if found is None:
            return
        engine = found.group(1)
    where = f"models.{name} (conf/model/{name}.yaml)"
    check_engine_tasks(bench, engine, where, model, ids if bench.tasks else None)


def _check_generator(gen_cfg: dict[str, Any], bench: Any) -> None:
    """The procedural generator must draw every value (other backends take any prompt)."""
    from hydra.utils import get_class

    from stylisticbias.dataset.rendering import make_generator
    from stylisticbias.generators.procedural import ProceduralGenerator

    target = gen_cfg.get("_target_")
    if not target:
        return
    from stylisticbias.dataset.importer import ImportSettings, is_import

    sets = f"{bench.source}: its images are counterfactual sets (counterfactual.axes)"
    if is_import(gen_cfg):
        # layout / materialize / on_error / aliases
        layout = ImportSettings.from_config(gen_cfg).layout
        if bench.counterfactual and layout != "counterfactual":
            raise StylisticBiasError(
                f"{sets}: import them with generator.layout=counterfactual (a folder of edits "
                f"per source photo), not {layout}"
            )
        if layout == "counterfactual" and not bench.counterfactual:
            raise StylisticBiasError(
                f"generator.layout=counterfactual: {bench.source} has no counterfactual.axes "
                f"(the axes edited within each source photo); valid layouts for it: release, "
                "table, pairs"
            )
        return
    try:
        cls = get_class(str(target))
    except Exception:  # an unknown target is reported by the stage that instantiates it
        return
    if not issubclass(cls, ProceduralGenerator):
        if bench.counterfactual:
            raise StylisticBiasError(
                f"{sets}: generator {str(target).rsplit('.', 1)[-1]} cannot draw them; valid: "
                "generator=procedural (offline), or generator=import with layout counterfactual"
            )
        return
    gen = make_generator(dict(gen_cfg))
    bad = gen.unsupported(list(bench.variations))
    if bad:
        slug, why = sorted(bad.items())[0]
        raise StylisticBiasError(
            f"{bench.source}: {len(bad)} variation value(s) the procedural generator cannot "
            f"render, e.g. {slug}: {why}"
        )
