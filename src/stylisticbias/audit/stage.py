"""The ``audit`` stage: every protocol's report -> ``<paths.audit>`` (``reports/audit/``:
bias cards, the cross-protocol leaderboard, README; :mod:`stylisticbias.audit`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from stylisticbias.audit.collect import collect
from stylisticbias.audit.metrics import RUN_METRICS, run_metrics_text
from stylisticbias.audit.render import pages
from stylisticbias.config import project_root
from stylisticbias.outputs import atomic_write_text
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

#: the files the audit writes besides the cards (``<model>.md``)
FIXED = ("README.md", "leaderboard.csv", "leaderboard.html", "findings.json")


def write_audit(
    config: Config, root: Path | None = None, jobs: Mapping[str, Config] | None = None
) -> Path:
    """Write the audit of the experiment ``config`` (its root configuration) into
    ``<paths.audit>``, and its leaderboard cells as the run-wide DVC metric ``reports/metrics.json``
    (:mod:`stylisticbias.audit.metrics`); ``jobs`` default to every job the check stage wrote
    (:func:`stylisticbias.protocols.job_configs`). A file of an earlier audit this one does
    not write (the card of a model no longer judged) is removed. Returns the directory."""
    root = (root or project_root()).resolve()
    if jobs is None:
        from stylisticbias.protocols import job_configs

        jobs = job_configs(config)
    audit = collect(config, jobs, root)
    out = root / str(config.paths.audit)
    out.mkdir(parents=True, exist_ok=True)
    files = pages(audit)
    for name, text in files.items():
        atomic_write_text(out / name, text)
    for stale in sorted(out.iterdir()):
        if stale.is_file() and stale.name not in files:
            log.info("removed %s (not part of this audit)", stale.relative_to(root))
            stale.unlink()
    atomic_write_text(root / RUN_METRICS, run_metrics_text(audit))  # the run-wide DVC metric
    log.info(
        "audit: %d model(s) x %d protocol(s)%s -> %s",
        len(audit.models),
        len(audit.protocols),
        f" + {len(audit.soda)} generator audit(s)" if audit.soda else "",
        out.relative_to(root) if out.is_relative_to(root) else out,
    )
    return out
