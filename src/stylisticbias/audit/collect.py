"""What the audit says: each judged protocol's findings per model (its family's ``audit``
hook, read from ``reports/<protocol>/``) and each generator protocol's SODA headline."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stylisticbias.analysis.calibration import is_simulated
from stylisticbias.benchmark import load_benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import family_of
from stylisticbias.protocols import judged
from stylisticbias.report.audit_findings import Finding
from stylisticbias.spec import Config


@dataclass(frozen=True)
class ProtocolAudit:
    """One protocol of the audit: what it is (``conf/protocols/<name>.yaml``), where its report
    is (relative to the audit directory) and its findings about every judged model."""

    name: str
    title: str
    paper: str
    measures: str
    report: str  # a relative link from the audit directory to the protocol's report
    findings: tuple[Finding, ...] = ()

    def of(self, model: str) -> list[Finding]:
        """The findings about ``model`` (its headline first)."""
        found = [f for f in self.findings if f.model == model]
        return sorted(found, key=lambda f: not f.headline)

    def headline(self, model: str) -> Finding | None:
        """The protocol's leaderboard cell of ``model``."""
        return next((f for f in self.findings if f.model == model and f.headline), None)


@dataclass(frozen=True)
class SodaAudit:
    """One generator protocol (SODA): its headline numbers (``bds``, ``cds``, ``vac``,
    ``significant_share`` with intervals) and where its tables are."""

    name: str
    title: str
    paper: str
    measures: str
    where: str  # the audit's folder, relative to the project root (a DVC output, not in git)
    headline: Mapping[str, float]
    simulated: bool


@dataclass(frozen=True)
class Audit:
    """Everything the audit writes (:mod:`stylisticbias.audit.stage`)."""

    models: tuple[str, ...]
    simulated: Mapping[str, bool]
    protocols: tuple[ProtocolAudit, ...]
    soda: tuple[SodaAudit, ...]
    level: float


def _spec(section: Any, name: str) -> tuple[str, str, str]:
    get = section.get if isinstance(section, Mapping) else lambda k: getattr(section, k, None)
    return str(get("title") or name), str(get("paper") or ""), str(get("measures") or "")


def metrics_file(job: Config, root: Path, protocol: str) -> Path:
    """``reports/<protocol>/metrics.json`` (the analyze stage's headline); missing: one line
    naming it and the stage that writes it."""
    path = root / str(job.paths.reports) / "metrics.json"
    if not path.is_file():
        raise StylisticBiasError(
            f"{_rel(path, root)}: not found; it is written by the `analyze@{protocol}` stage "
            f"(run `dvc repro analyze@{protocol}`)"
        )
    return path


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def collect(config: Config, jobs: Mapping[str, Config], root: Path) -> Audit:
    """The audit of the experiment ``config`` (the root configuration) from its ``jobs``
    (``{protocol: its job's configuration}``, :func:`stylisticbias.protocols.job_configs`)."""
    audit_dir = root / str(config.paths.audit)
    protocols = []
    for p in judged(config):
        if p not in jobs:
            raise StylisticBiasError(
                f"data/config/{p}/resolved.yaml: no job of protocol {p} (run the check stage "
                f"first: dvc repro check); jobs: {', '.join(jobs) or '(none)'}"
            )
        job = jobs[p]
        metrics_file(job, root, p)
        hook = family_of(load_benchmark(job.protocol)).hook("audit")
        findings = tuple(hook(job, root) or ())
        reports = root / str(job.paths.reports)
        target = reports / "README.md" if (reports / "README.md").is_file() else reports
        link = Path(os.path.relpath(target, audit_dir)).as_posix()
        protocols.append(ProtocolAudit(p, *_spec(config.protocols[p], p), link, findings))
    soda = [_soda(config, p, jobs, root) for p in config.generator_protocols if p in jobs]
    models = tuple(config.model_names)
    return Audit(
        models=models,
        simulated={m: is_simulated(m, config) for m in models},
        protocols=tuple(protocols),
        soda=tuple(s for s in soda if s is not None),
        level=float(config.analysis.bootstrap.ci),
    )


def _soda(config: Config, name: str, jobs: Mapping[str, Config], root: Path) -> SodaAudit | None:
    from stylisticbias.report.soda_tracking import read_audit, soda_metrics

    job = jobs[name]
    where = root / str(job.paths.soda)
    audit = read_audit(where)
    if audit is None:
        return None
    tables, summary = audit
    head, _ = soda_metrics(tables, summary, float(job.soda.alpha), float(job.analysis.bootstrap.ci))
    return SodaAudit(
        name,
        *_spec(config.generator_protocols[name], name),
        _rel(where, root),
        head,
        summary.get("generator", "standin") == "standin",
    )
