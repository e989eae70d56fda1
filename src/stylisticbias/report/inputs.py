"""Everything the report reads: the ``analyze`` stage's tables and metrics, the score tables
(for the simulated flag and the run's size), the run settings and the data version.

A missing input is one :class:`StylisticBiasError` line naming the file and the stage that
writes it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.analysis import table_registry as registry
from stylisticbias.analysis.headline import METRICS_ALL
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.config import ROOT
from stylisticbias.errors import StylisticBiasError
from stylisticbias.report.provenance import (
    DataVersion,
    data_version,
    dvc_lock_hashes,
    git_commit,
)
from stylisticbias.score_store import partition_dir, read_model_scores
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

#: The paper's reference tables (copies of its transcribed tables, conf/reference/paper/).
PAPER_REFERENCE = Path("conf/reference/paper")


def paper_models(reference_dir: Path | None = None) -> tuple[str, ...]:
    """The paper's models by the short names its tables use (Tables 2, 7, 11), sorted: the
    ``short_name`` column of its Table 8 (``models.csv`` of the reference tables)."""
    path = (reference_dir or ROOT / PAPER_REFERENCE) / "models.csv"
    try:
        return tuple(sorted(pd.read_csv(path)["short_name"].astype(str)))
    except (OSError, KeyError, pd.errors.ParserError) as exc:
        raise StylisticBiasError(
            f"{path}: cannot read the paper's model short names ({type(exc).__name__})"
        ) from None


PAPER_MODELS: tuple[str, ...] = paper_models()

#: Tables the ``analyze`` stage always writes (reports/tables/<name>.csv), from the registry.
REQUIRED_TABLES: tuple[str, ...] = tuple(
    t.name for t in registry.TABLES if t.written == "always" and not t.layout
)
#: Tables that may be absent (cross-model tables need two models; diagnostics need raw
#: judgments; the estimator comparison needs both estimators in the scores).
OPTIONAL_TABLES: tuple[str, ...] = tuple(
    t.name for t in registry.TABLES if t.written != "always" and not t.layout
)


@dataclass(frozen=True)
class ModelInfo:
    """One judged model: its config name, the name the tables use, and how it was run."""

    name: str  # conf/model/<name>.yaml and data/scores/model=<name>/
    label: str  # the name in reports/tables (the paper's short name for paper models)
    hub_id: str | None
    simulated: bool
    n_rows: int


@dataclass(frozen=True)
class RunSettings:
    """How the judged data was made; shown in the report and logged to MLflow."""

    models: tuple[ModelInfo, ...]
    engine: str
    decoding: str
    n_faces: int
    n_images: int
    n_variation_images: int
    n_scenarios: int
    orderings: tuple[int, ...]
    seeds: tuple[int, ...]
    generator: str
    data_versions: tuple[DataVersion, ...]
    git_commit: str | None
    git_dirty: bool
    image_source: str = ""  # generator=import: where the images came from (+ coverage)

    @property
    def simulated(self) -> bool:
        """True when any model's scores come from the simulated judge."""
        return any(m.simulated for m in self.models)

    def model(self, label: str) -> ModelInfo | None:
        """The model whose table label (or config name) is ``label``."""
        return next((m for m in self.models if label in (m.label, m.name)), None)


@dataclass
class ReportInputs:
    """The analysis outputs plus the settings, loaded once and shared by every report part."""

    root: Path
    tables: dict[str, pd.DataFrame]
    wide: dict[str, pd.DataFrame]  # paper-layout tables (strings, as written)
    metrics: dict[str, Any]
    settings: RunSettings
    calibration: dict[str, Any] | None = None
    missing_optional: list[str] = field(default_factory=list)
    analysis: AnalysisSettings = field(default_factory=AnalysisSettings)  # alpha, ci, ...
    qa: dict[str, Any] | None = None  # <paths.qa>/summary.json: QA checks of the edits
    generator_audit: pd.DataFrame | None = None  # <paths.qa>/generator_audit.csv

    def table(self, name: str) -> pd.DataFrame | None:
        """A loaded table, or None when an optional one is absent."""
        return self.tables.get(name)


def _missing(path: Path, stage: str) -> StylisticBiasError:
    return StylisticBiasError(
        f"{path}: not found; it is written by the `{stage}` stage (run `dvc repro {stage}`)"
    )


def read_json(path: Path, stage: str) -> dict[str, Any]:
    """Read a JSON object; missing or malformed is one clear error."""
    if not path.exists():
        raise _missing(path, stage)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise StylisticBiasError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise StylisticBiasError(f"{path}: expected a JSON object at the top level")
    return data


def load_tables(tables_dir: Path) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Required + optional long analysis tables, each read and validated through the table
    registry; returns (tables, names of absent optional tables)."""
    tables = {name: registry.read_table(name, tables_dir) for name in REQUIRED_TABLES}
    absent = []
    for name in OPTIONAL_TABLES:
        if (tables_dir / registry.spec(name).file).exists():
            tables[name] = registry.read_table(name, tables_dir)
        else:
            absent.append(name)
    if absent:
        log.info("optional tables not written by analyze: %s", ", ".join(absent))
    return tables, absent


def _model_info(name: str, scores: pd.DataFrame, config: Config) -> ModelInfo:
    cfg = asdict(config.models[name]) if name in config.models else {}
    label = str(cfg.get("paper_name") or name)
    hub = cfg.get("hub_id") or cfg.get("hf_id") or cfg.get("repo_id")
    ep = cfg.get("endpoint")
    if isinstance(ep, dict) and ep.get("served_model"):  # openai engine: model @ endpoint host
        from urllib.parse import urlparse

        host = urlparse(str(ep.get("base_url", ""))).netloc or "?"
        engine = (cfg.get("engine") or {}).get("name", "openai")
        hub = f"{ep['served_model']} @ {host} (engine {engine})"
    sim = bool(scores["simulated"].any()) if "simulated" in scores else False
    return ModelInfo(name, label, str(hub) if hub else None, sim, len(scores))


def load_settings(config: Config, root: Path, benchmark: Benchmark | None = None) -> RunSettings:
    """Run settings from params.yaml, the score tables and dvc.lock / git (``benchmark``: the
    stage's protocol; None loads ``config.protocol``)."""
    benchmark = benchmark if benchmark is not None else load_benchmark(config.protocol)
    models = config.model_names
    scores_dir = root / str(config.paths.scores)
    infos: list[ModelInfo] = []
    faces: set[str] = set()
    images: set[str] = set()
    var_images: set[str] = set()
    scenarios: set[int] = set()
    cols = ["image_id", "face_id", "is_base", "scenario_id", "simulated"]
    for m in models:
        df = read_model_scores(scores_dir, m, cols)
        infos.append(_model_info(m, df, config))
        faces.update(df["face_id"].astype(str))
        images.update(df["image_id"].astype(str))
        var_images.update(df.loc[~df["is_base"].astype(bool), "image_id"].astype(str))
        scenarios.update(int(s) for s in df["scenario_id"].unique())
    lock = dvc_lock_hashes(root)
    paths = [str(config.paths.faces), str(config.paths.variations)]
    score_rel = str(config.paths.scores)
    paths += [partition_dir(score_rel, m).as_posix() for m in models]
    versions = []
    for rel in paths:
        v = data_version(root, rel, lock)
        if v.source == "missing" and rel.startswith(score_rel):
            v = data_version(root, score_rel, lock)  # one dir output
        versions.append(v)
    sha, dirty = git_commit(root)
    engines = [dict(asdict(m).get("engine") or {}) for m in config.models.values()]
    gen = asdict(config.generator) if is_dataclass(config.generator) else config.generator or {}
    judge = asdict(config.judge)
    return RunSettings(
        models=tuple(infos),
        engine=", ".join(dict.fromkeys(str(e.get("name", "?")) for e in engines)) or "?",
        decoding=", ".join(dict.fromkeys(str(e.get("decoding", "?")) for e in engines)) or "?",
        n_faces=len(faces),
        n_images=len(images),
        n_variation_images=len(var_images),
        n_scenarios=len(scenarios),
        orderings=tuple(benchmark.selected_orderings(judge.get("orderings"))),
        seeds=tuple(int(s) for s in judge.get("seeds", [])),
        generator=str(gen.get("_target_", gen.get("name", "?")))
        .rsplit(".", 1)[-1]
        .replace("ImportSettings", "import"),
        data_versions=tuple(dict.fromkeys(versions)),
        git_commit=sha,
        git_dirty=dirty,
        image_source=imported_source(
            root / str(config.paths.faces), root / str(config.paths.variations)
        ),
    )


def imported_source(faces_dir: Path, variations_dir: Path) -> str:
    """For an imported image set (``generator=import``): its source and coverage in one line;
    empty when the images were rendered."""
    meta = faces_dir / "import.json"
    if not meta.exists():
        return ""
    info = json.loads(meta.read_text(encoding="utf-8"))
    text = f"imported: {info.get('source', '?')}"
    cov_path = variations_dir / "coverage.json"
    if cov_path.exists():
        cov = json.loads(cov_path.read_text(encoding="utf-8"))
        text += (
            f"; {cov['n_faces']} faces in {cov['cells_with_faces']} of {cov['cells_total']} "
            f"demographic cells, {cov['evaluated_present']} of {cov['evaluated_expected']} "
            f"evaluated (face, value) pairs present"
        )
        skipped = int(info.get("faces_skipped", 0)) + int(cov.get("variations_skipped", 0))
        if skipped:
            text += f", {skipped} source row(s) skipped (see skipped.parquet)"
    return text


def load_inputs(config: Config, root: Path, benchmark: Benchmark | None = None) -> ReportInputs:
    """Load everything the report needs; the first missing input raises one clear error."""
    reports = root / str(config.paths.reports)
    tables, absent = load_tables(reports / "tables")
    wide = {n: registry.read_table(n, reports / "tables") for n in registry.LAYOUT_TABLES}
    metrics = read_json(reports / METRICS_ALL, "analyze")  # every number (metrics.json: headline)
    settings = load_settings(config, root, benchmark)
    cal_path = reports / "calibration.json"
    calibration = read_json(cal_path, "calibrate") if cal_path.exists() else None
    analysis = AnalysisSettings.from_config(asdict(config.analysis))
    qa_dir = root / str(config.paths.qa)
    qa = read_json(qa_dir / "summary.json", "qa") if (qa_dir / "summary.json").exists() else None
    audit_path = qa_dir / "generator_audit.csv"
    audit = None
    if audit_path.exists() and audit_path.stat().st_size > 1:
        audit = pd.read_csv(audit_path)
    return ReportInputs(
        root,
        tables,
        wide,
        metrics,
        settings,
        calibration,
        absent,
        analysis,
        qa=qa,
        generator_audit=audit,
    )
