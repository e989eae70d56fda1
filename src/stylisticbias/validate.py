"""Checks of a composed configuration that need more than its schema (run by ``config compose``).

The stages check the same things when they start; running them at compose time means a typo in
``conf/`` or an override is reported before ``params.yaml`` is written.
"""

from __future__ import annotations

import logging
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)


def validate_params(params: dict[str, Any]) -> None:
    """Raise :class:`StylisticBiasError` naming the first bad key of ``params`` and its choices.

    Checks: the benchmark definition parses; ``faces`` and ``judge`` settings have valid types
    and ranges; every output path lies inside the data root and overlaps no other; every
    ``judge.models`` entry has a
    ``conf/model/<name>.yaml``; ``judge.scenarios`` is ``all`` or known ids; and, for the
    procedural generator, that it can draw every variation value of the benchmark.
    """
    from stylisticbias.benchmark import benchmark_from_params
    from stylisticbias.config import available, project_root
    from stylisticbias.dataset.build import FacesSettings
    from stylisticbias.judge.settings import JudgeSettings
    from stylisticbias.outputs import check_all_outputs

    bench = benchmark_from_params(params)
    FacesSettings.from_params(params)
    check_all_outputs(params, project_root())
    judge = params.get("judge") or {}
    JudgeSettings.from_config(judge, bench.ordering_ids)
    models = available("model")
    for m in judge.get("models") or []:
        if str(m) not in models:
            raise StylisticBiasError(
                f"judge.models: unknown model {m!r} (no conf/model/{m}.yaml); "
                f"valid: {', '.join(models)}"
            )
    scen = judge.get("scenarios", "all")
    if scen not in (None, "all"):
        if not isinstance(scen, list):
            raise StylisticBiasError(
                f"judge.scenarios: {scen!r}; valid: all or a list of ids (1-{len(bench.scenarios)})"
            )
        for sid in scen:
            try:
                bench.scenario(int(sid))
            except (StylisticBiasError, ValueError, TypeError) as exc:
                raise StylisticBiasError(f"judge.scenarios: {exc}") from None
    _check_generator(params.get("generator") or {}, bench)


def _check_generator(gen_cfg: dict[str, Any], bench: Any) -> None:
    """The procedural generator must draw every value (other backends take any prompt)."""
    from hydra.utils import get_class

    from stylisticbias.dataset.rendering import make_generator
    from stylisticbias.generators.procedural import ProceduralGenerator

    target = gen_cfg.get("_target_")
    if not target:
        return
    from stylisticbias.dataset.importer import ImportSettings, is_import

    if is_import({"generator": gen_cfg}):
        ImportSettings.from_config(gen_cfg)  # layout / materialize / on_error / aliases
        return
    try:
        cls = get_class(str(target))
    except Exception:  # an unknown target is reported by the stage that instantiates it
        return
    if not issubclass(cls, ProceduralGenerator):
        return
    gen = make_generator(dict(gen_cfg))
    bad = gen.unsupported(list(bench.variations))
    if bad:
        slug, why = sorted(bad.items())[0]
        raise StylisticBiasError(
            f"{bench.source}: {len(bad)} variation value(s) the procedural generator cannot "
            f"render, e.g. {slug}: {why}"
        )
