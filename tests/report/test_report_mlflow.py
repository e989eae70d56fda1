"""MLflow logging of the report: per-model runs, comparison run, dataset input, sweeps."""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
import subprocess
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest

from stylisticbias.analysis.calibration import synthetic_dataset
from stylisticbias.analysis.run import run_analysis
from stylisticbias.benchmark import benchmark_from_params, slug
from stylisticbias.config import compose, load_group_option, load_params, project_root
from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine, image_attrs
from stylisticbias.report.mlflow_log import (
    ALL_METRICS_TABLE,
    MAX_RUN_METRICS,
    SWEEP_ENV,
    flatten_metrics,
    resolve_tracking_uri,
    sweep_id,
)
from stylisticbias.report.mlflow_params import generator_option
from stylisticbias.report.run import build_report
from stylisticbias.report.track import RUNS_FILE, run_log_path, track_report
from stylisticbias.score_store import write_model_scores
from stylisticbias.scores import compute_scores
from stylisticbias.spec.parse import config_from_params

DEMO_MODELS = ("simulated-strong", "simulated-weak")


def test_flatten_metrics_gives_stable_dotted_names():
    flat = flatten_metrics(
        {
            "vs": {"age": 0.1},
            "sbs": {"category": {"fashion": 0.05}},
            "pareto.n_variations_80": 15,
            "note": "x",
            "bad": float("nan"),
        }
    )
    assert flat == {"vs.age": 0.1, "sbs.category.fashion": 0.05, "pareto.n_variations_80": 15.0}


def test_relative_sqlite_uri_is_anchored_at_the_dvc_root(tmp_path):
    env = {"DVC_ROOT": str(tmp_path)}
    assert resolve_tracking_uri("sqlite:///mlflow.db", env) == f"sqlite:///{tmp_path}/mlflow.db"
    assert resolve_tracking_uri("sqlite:////abs/m.db", env) == "sqlite:////abs/m.db"
    assert resolve_tracking_uri("http://127.0.0.1:5000", env) == "http://127.0.0.1:5000"


def test_sweep_id_from_env_and_dvc_queue():
    assert sweep_id({}) is None
    assert sweep_id({SWEEP_ENV: "grid-1"}) == "grid-1"
    env = {"DVC_EXP_NAME": "exp-abc", "DVC_EXP_BASELINE_REV": "0123456789abcdef0123"}
    assert sweep_id(env) == "dvc-exp:0123456789ab"


@pytest.fixture
def git_repo(tmp_path: Path) -> str:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=tmp_path, check=True)
    out = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


# slow tier: two analysed model sets, a report per sweep member and MLflow reads: ~16 CPU-s; in make
# test the MLflow runs are checked by test_report_stage_alone_logs_nothing and
# tests/families/tasks/test_task_report.py::test_track_logs_one_run_per_model_and_a_comparison
@pytest.mark.slow
def test_runs_per_model_comparison_dataset_and_sweep(
    tmp_path, analysis_output, git_repo, monkeypatch
):
    params = analysis_output(["simulated-strong", "simulated-weak"], simulated=True)
    shutil.copytree(project_root() / "conf" / "reference", tmp_path / "conf" / "reference")
    monkeypatch.setenv(SWEEP_ENV, "sweep-test")
    monkeypatch.delenv("STYLISTICBIAS_PARENT_RUN_ID", raising=False)
    for seed in (0, 1):  # a simulated 2-run sweep
        params["seed"] = seed
        build_report(config_from_params(params), tmp_path)
        track_report(config_from_params(params), tmp_path)

    mlflow.set_tracking_uri(params["tracking"]["tracking_uri"])
    exp = mlflow.get_experiment_by_name(params["tracking"]["experiment_name"])
    runs = mlflow.search_runs([exp.experiment_id])
    kind = runs["tags.stylisticbias.run_kind"]
    parents = runs[kind == "sweep"]
    assert len(parents) == 1
    parent_id = parents.iloc[0]["run_id"]
    children = runs[kind != "sweep"]
    assert len(children) == 2 * 3  # (2 models + comparison) x 2 sweep members
    assert (children["tags.mlflow.parentRunId"] == parent_id).all()
    assert sorted(children["params.seed"].unique()) == ["0", "1"]

    models = children[children["tags.stylisticbias.run_kind"] == "model"]
    assert sorted(models["tags.model"]) == sorted(["simulated-strong", "simulated-weak"] * 2)
    for col in (
        "metrics.sbs",
        "metrics.sbs.ci_low",
        "metrics.vs_debiased.age.ci_high",
        "metrics.significant_share",
        "metrics.invalid_rate.ci_low",
        "metrics.n_variations_80",
    ):
        assert models[col].notna().all(), col
    client = mlflow.MlflowClient()
    for run_id in models["run_id"]:  # the run page: the headline only
        assert 10 <= len(client.get_run(run_id).data.metrics) <= MAX_RUN_METRICS
    # the same data tags in every model run (keyed by role, not by the model's partition path)
    tags = [
        {k for k in r.index if k.startswith("tags.data.") and pd.notna(r[k])}
        for _, r in models.iterrows()
    ]
    assert all(t == tags[0] for t in tags) and "tags.data.scores" in tags[0], tags[0]
    assert (models["tags.git_commit"] == git_repo).all()
    assert (models["tags.mlflow.source.git.commit"] == git_repo).all()
    assert (models["tags.simulated"] == "true").all()

    monkeypatch.chdir(tmp_path)  # artifact paths are relative to the store's directory
    run = mlflow.get_run(models.iloc[0]["run_id"])
    (ds,) = run.inputs.dataset_inputs
    assert ds.dataset.name.startswith("scores/simulated-")
    assert len(ds.dataset.digest) == 32
    arts = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "tables")}
    assert {"tables/sbs_by_scenario.json", ALL_METRICS_TABLE} <= arts
    # two model runs hold the same artifact paths: the compare view lines them up; it lists
    # top-level files only, so the headline is there as well
    for other in models["run_id"]:
        assert _artifacts(other) == _artifacts(run.info.run_id)
        top = {a.path for a in mlflow.MlflowClient().list_artifacts(other)}
        assert "headline.json" in top
        head = mlflow.artifacts.load_dict(f"runs:/{other}/headline.json")
        assert head == client.get_run(other).data.metrics

    comp = children[children["tags.stylisticbias.run_kind"] == "comparison"]
    assert len(comp) == 2 and (comp["metrics.n_models"] == 2).all()
    figs = {a.path for a in mlflow.MlflowClient().list_artifacts(comp.iloc[0]["run_id"], "figures")}
    assert "figures/fig8_model_pair.png" in figs
    assert "figures/fig5_abs_sbs_by_scenario_category_model.png" in figs
    # the stage's output says what was logged (same on every machine); the run log, the runs
    record = json.loads((tmp_path / RUNS_FILE).read_text())
    assert record["enabled"] is True and "runs" not in record and "date" not in record
    assert len(record["report_digest"]) == 32
    runs = json.loads(run_log_path(tmp_path / RUNS_FILE).read_text())
    assert runs["runs"]["comparison"] in set(comp["run_id"])
    assert runs["runs"]["sweep"] == parent_id


def test_report_stage_alone_logs_nothing(tmp_path, report_output, built_reports):
    # logging is the track stage's job: a fresh clone has the report files but not the runs.
    # The report is the session's build (built_reports: build_report with tracking enabled, to
    # a store in the build's root), copied here.
    params = report_output(["simulated-strong"], simulated=True)
    built = built_reports(("simulated-strong",), True)
    assert (built / params["paths"]["reports"] / "README.md").exists()
    assert not (built / "mlflow.db").exists() and not (built / RUNS_FILE).exists()
    assert not (tmp_path / "mlflow.db").exists()
    first = (tmp_path / RUNS_FILE).read_bytes() if (tmp_path / RUNS_FILE).exists() else None
    track_report(config_from_params(params), tmp_path)
    assert (tmp_path / "mlflow.db").exists() and first is None
    out = (tmp_path / RUNS_FILE).read_bytes()
    track_report(
        config_from_params(params), tmp_path
    )  # logging again: new runs, the same stage output
    assert (tmp_path / RUNS_FILE).read_bytes() == out
    log = json.loads(run_log_path(tmp_path / RUNS_FILE).read_text())
    assert len(log["runs"]) == 2
    # each run's page in the MLflow UI's classic view (not MLflow 3's GenAI one)
    client = mlflow.MlflowClient(log["tracking_uri"])
    eid = client.get_experiment_by_name(params["tracking"]["experiment_name"]).experiment_id
    assert log["runs_url"].endswith(f"/#/experiments/{eid}/runs?workflowType=machine_learning")
    assert log["run_urls"] == {
        name: f"http://127.0.0.1:5000/#/experiments/{eid}/runs/{run_id}"
        "?workflowType=machine_learning"
        for name, run_id in log["runs"].items()
    }


def test_tracking_disabled_logs_nothing(tmp_path, report_output):
    params = report_output(["simulated-strong"], simulated=True)  # the report stage's outputs
    params["tracking"]["enabled"] = False
    track_report(config_from_params(params), tmp_path)
    assert not (tmp_path / "mlflow.db").exists()
    assert json.loads((tmp_path / RUNS_FILE).read_text())["enabled"] is False


# ---- navigation: CIs beside the points, typed params, the generator's name
# The real analysis on small data: 12 demo faces judged by the two demo simulated models.

N_FACES = 12


@pytest.fixture(scope="module")
def tracked(tmp_path_factory) -> tuple[Path, dict, dict[str, pd.DataFrame], dict]:
    """A project root whose analysis ran for real and whose report was logged to MLflow."""
    root = tmp_path_factory.mktemp("tracked")
    params = copy.deepcopy(load_params())
    bench = benchmark_from_params(params)
    faces, var = synthetic_dataset(bench, N_FACES, seed=5)
    img = image_attrs(faces, var)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].astype(object)
    attrs = attrs.where(attrs.notna(), None).to_dict("records")
    judgments, scores = root / params["paths"]["judgments"], root / params["paths"]["scores"]
    for name in DEMO_MODELS:
        cfg = load_group_option("model", name)
        eng = SimulatedJudgeEngine(cfg, cfg["engine"], params["judge"], bench)
        j = eng.judge_records(img["image_id"].tolist(), img["face_id"].tolist(), attrs)
        jp = judgments / name / "judgments.parquet"
        jp.parent.mkdir(parents=True)
        j.to_parquet(jp, index=False)
        write_model_scores(compute_scores(j, faces, var, bench), scores, name)
    params["models"] = {m: load_group_option("model", m) for m in DEMO_MODELS}
    params["analysis"]["bootstrap"]["n_resamples"] = 200
    params["analysis"]["n_permutations"] = 200
    params["paths"]["analysis_cache"] = None
    params["tracking"] = {
        **params["tracking"],
        "enabled": True,
        "tracking_uri": f"sqlite:///{root / 'mlflow.db'}",
        "experiment_name": "nav",
    }
    shutil.copytree(project_root() / "conf" / "reference", root / "conf" / "reference")
    with contextlib.chdir(root):
        run_analysis(config_from_params(params))
    track_report(config_from_params(params), root)
    reports = root / params["paths"]["reports"]
    tables = {p.stem: pd.read_csv(p) for p in (reports / "tables").glob("*.csv")}
    metrics = json.loads((reports / "metrics_all.json").read_text())
    return root, params, tables, metrics


def _runs(params: dict) -> pd.DataFrame:
    mlflow.set_tracking_uri(params["tracking"]["tracking_uri"])
    exp = mlflow.get_experiment_by_name(params["tracking"]["experiment_name"])
    return mlflow.search_runs([exp.experiment_id])


def _artifacts(run_id: str, path: str = "") -> set[str]:
    out: set[str] = set()
    for a in mlflow.MlflowClient().list_artifacts(run_id, path):
        out |= _artifacts(run_id, a.path) if a.is_dir else {a.path}
    return out


def _logged(params: dict, run_id: str) -> tuple[dict[str, float], dict[str, str]]:
    """The run's logged table of every number (checked against its headline metrics)."""
    mlflow.set_tracking_uri(params["tracking"]["tracking_uri"])
    data = mlflow.MlflowClient().get_run(run_id).data
    root = Path(params["tracking"]["tracking_uri"].removeprefix("sqlite:///")).parent
    with contextlib.chdir(root):  # artifact paths are relative to the store's directory
        table = mlflow.load_table(ALL_METRICS_TABLE, run_ids=[run_id])
    every = dict(zip(table["metric"], table["value"].astype(float)))
    # the run page's headline repeats numbers of the table under its own names
    same = {"sbs": "sbs.overall", "invalid_rate": "invalid_rate", "cohens_d": "cohens_d"}
    for key, value in data.metrics.items():
        base, _, bound = key.partition(".ci_")
        twin = same.get(base, base if base.startswith("vs_debiased.") else None)
        if twin is not None and (twin + (f".ci_{bound}" if bound else "")) in every:
            want = every[twin + (f".ci_{bound}" if bound else "")]
            assert value == pytest.approx(want, rel=5e-6), key  # tables: 6 digits
    return every, data.params


#: (table, metric prefix, label columns, point, low, high, row filter): written out here by hand,
#: independently of report/run_metrics.py
EXPECTED_INTERVALS = [
    ("sbs_overall", "sbs.overall", [], "sbs", "ci_low", "ci_high", None),
    ("sbs_by_category_model", "sbs.category", ["category"], "sbs", "ci_low", "ci_high", None),
    ("sbs_by_scenario", "sbs.scenario", ["positive"], "sbs", "ci_low", "ci_high", None),
    (
        "sbs_by_scenario_category_model",
        "sbs.scenario_category",
        ["scenario_category"],
        "sbs",
        "ci_low",
        "ci_high",
        None,
    ),
    (
        "sbs_by_variation_model",
        "sbs.variation",
        ["category", "variation"],
        "sbs",
        "ci_low",
        "ci_high",
        None,
    ),
    ("vs_by_model", "vs", ["dimension"], "vs", "range_low", "range_high", None),
    (
        "vs_by_model",
        "vs_debiased",
        ["dimension"],
        "vs_debiased",
        "debiased_ci_low",
        "debiased_ci_high",
        None,
    ),
    ("per_model_effects", "cohens_d", [], "cohens_d", "d_ci_low", "d_ci_high", None),
    ("position_bias", "position_bias", [], "share", "ci_low", "ci_high", None),
    ("letter_bias", "letter_bias", [], "share", "ci_low", "ci_high", None),
    ("invalid_rates", "invalid_rate", [], "invalid_rate", "ci_low", "ci_high", ("scenario_id", 0)),
]
DIM_NAMES = {"age": "age", "gender": "gender", "ethnicity": "ethnicity", "body": "body_type"}


def _expected(tables: dict[str, pd.DataFrame], model: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for table, prefix, labels, point, low, high, where in EXPECTED_INTERVALS:
        df = tables[table]
        df = df[df["model"] == model]
        if where:
            df = df[df[where[0]] == where[1]]
        for _, row in df.iterrows():
            parts = [prefix] + [
                DIM_NAMES[row[c]] if c == "dimension" else slug(str(row[c])) for c in labels
            ]
            name = ".".join(parts)
            lo_name, hi_name = (
                ("range_low", "range_high") if low == "range_low" else ("ci_low", "ci_high")
            )
            for key, col in (
                (name, point),
                (f"{name}.{lo_name}", low),
                (f"{name}.{hi_name}", high),
            ):
                if np.isfinite(row[col]):
                    out[key] = float(row[col])
    return out


# slow tier: the tracked report (~8 CPU-s); fast sibling:
# tests/families/tasks/test_task_report.py::test_track_logs_one_run_per_model_and_a_comparison
@pytest.mark.slow
def test_every_interval_is_logged_beside_its_point(tracked) -> None:
    _, params, tables, metrics = tracked
    bench = benchmark_from_params(params)
    runs = _runs(params)
    kind = runs["tags.stylisticbias.run_kind"]
    for model in DEMO_MODELS:
        (run_id,) = runs.loc[(kind == "model") & (runs["tags.model"] == model), "run_id"]
        logged, _ = _logged(params, run_id)
        expected = _expected(tables, model)
        n_ci = sum(k.endswith(".ci_low") for k in expected)
        # the paper VS's interval is a bootstrap range, logged as .range_low/.range_high
        assert sum(k.endswith(".range_low") for k in expected) == 4
        assert not any(k.startswith("vs.") and k.endswith(".ci_low") for k in logged)
        # overall + categories + scenarios + 4 scenario categories + variations + 4
        # de-biased VS + Cohen's d, position, letter bias, invalid rate: all with a CI
        n_var = len({(v.category, v.label) for v in bench.variations if v.evaluated})
        n_cat = len({v.category for v in bench.variations if v.evaluated})
        assert n_ci == 1 + n_cat + len(bench.scenarios) + 4 + n_var + 4 + 4, n_ci
        for key, value in expected.items():  # bounds as in the table, points to its digits
            rel = 1e-12 if key.endswith((".ci_low", ".ci_high")) else 5e-6
            assert logged.get(key) == pytest.approx(value, rel=rel, abs=0), key
        # nothing logged as an interval that the tables do not hold
        assert {k for k in logged if k.endswith((".ci_low", ".ci_high"))} == {
            k for k in expected if k.endswith((".ci_low", ".ci_high"))
        }
        assert logged["sbs.category.fashion.ci_low"] < logged["sbs.category.fashion.ci_high"]
        row = tables["sbs_by_category_model"]
        row = row[(row.model == model) & (row.category == "Fashion")].iloc[0]
        assert logged["sbs.category.fashion.ci_low"] == row["ci_low"]
        assert logged["vs_debiased.body_type.ci_high"] == pytest.approx(
            tables["vs_by_model"]
            .query("model == @model and dimension == 'body'")["debiased_ci_high"]
            .iloc[0]
        )
        # every point of metrics_all.json that has an interval sits beside it, with the same value
        flat = flatten_metrics(metrics[model])
        with_ci = [k for k in flat if f"{k}.ci_low" in expected]
        assert len(with_ci) >= 1 + 10 + 25 + 4 + 3, sorted(flat)
        vs_points = [k for k in flat if k.startswith("vs.")]
        assert len(vs_points) == 4 and all(f"{k}.range_low" in logged for k in vs_points)
        for k in with_ci:
            assert f"{k}.ci_low" in logged and f"{k}.ci_high" in logged, k
            assert logged[k] == pytest.approx(flat[k], rel=1e-5), k
    # the comparison run: the tables' rows pooled over the models ("All")
    (comp_id,) = runs.loc[kind == "comparison", "run_id"]
    logged, _ = _logged(params, comp_id)
    pooled = _expected(tables, "All")
    assert any(k.startswith("sbs.category.") and k.endswith(".ci_low") for k in pooled)
    for key, value in pooled.items():
        assert logged.get(key) == pytest.approx(value, rel=1e-12, abs=0), key
    assert logged["sbs.category.fashion.ci_low"] == pooled["sbs.category.fashion.ci_low"]
    # the released code's analyses: effect sizes, the mixed model's R^2, agreement
    assert "eta2p.variation-category" in logged and "eta2p.variation-category.ci_low" in logged
    assert "mixed.r2_marginal" in logged and "agreement.icc-3-1" not in logged
    assert "agreement.icc_3_1" in logged and "agreement.kendall_w.ci_low" in logged


def _yaml_text(v: object) -> str:
    """How a YAML scalar reads, for the check below (independent of tracking.param_value)."""
    if v is None:
        return "null"
    if v is True or v is False:
        return str(v).lower()
    return str(v)


# slow tier: shares the tracked report above; fast sibling:
# test_flatten_metrics_gives_stable_dotted_names
@pytest.mark.slow
def test_params_keep_their_types_and_read_as_the_config(tracked) -> None:
    _, params, _, _ = tracked
    runs = _runs(params)
    for run_id in runs.loc[runs["tags.stylisticbias.run_kind"] != "sweep", "run_id"]:
        _, logged = _logged(params, run_id)
        assert logged["generator"] == "procedural"
        assert logged["seed"] == str(params["seed"]) and logged["faces.n"] == str(
            params["faces"]["n"]
        )
        assert logged["models"] == ",".join(DEMO_MODELS)
        assert logged["judge.orderings"] == "1,2,3,4"  # `all` resolved against the protocol
        assert logged["analysis.bootstrap.n_resamples"] == "200"  # not 200.0
        assert logged["analysis.n_permutations"] == "200"
        assert logged["analysis.wilcoxon_correction"] == "false"  # not 0.0
        assert logged["analysis.alpha"] == "0.05"
        assert logged["analysis.tables.fashion_category"] == "Fashion"
        assert logged["n_faces"] == str(N_FACES)
        # every analysis setting, flattened, reads as in params.yaml (ints as ints)
        stack = [("analysis", params["analysis"])]
        n = 0
        while stack:
            key, node = stack.pop()
            for k, v in node.items():
                if key == "analysis" and k in ("group_abbrev", "workers"):
                    continue
                if isinstance(v, dict):
                    stack.append((f"{key}.{k}", v))
                else:
                    assert logged[f"{key}.{k}"] == _yaml_text(v), f"{key}.{k}"
                    n += 1
        assert n >= 15
        # readable: no dict blobs, no float-typed integers
        assert not any(v.startswith(("{", "[")) for v in logged.values()), logged
        assert not any(k.startswith("analysis.group_abbrev") for k in logged)
        for k in ("seed", "faces.n", "n_faces", "n_images", "n_scenarios"):
            assert logged[k].lstrip("-").isdigit(), (k, logged[k])


def test_generator_param_is_the_config_option_name() -> None:
    for name in ("procedural", "diffusers", "diffusers-sdxl", "diffusers-qwen", "import"):
        section = load_group_option("generator", name)
        section.pop("name")
        assert generator_option(section) == name
    sdxl = load_group_option("generator", "diffusers-sdxl")
    sdxl.pop("name")
    sdxl["base"] = {**sdxl["base"], "num_inference_steps": 7}  # an override keeps the option
    assert generator_option(sdxl) == "diffusers-sdxl"
    assert generator_option({**sdxl, "name": "mine"}) == "mine"
    assert generator_option({"_target_": "pkg.mod.OtherGenerator"}) == "OtherGenerator"
    composed = compose(["generator=diffusers-sdxl"])["generator"]
    assert generator_option(composed) == "diffusers-sdxl"


def test_frame_schema_is_the_schema_mlflow_infers_from_the_whole_table() -> None:
    import warnings

    import numpy as np
    import pandas as pd
    from mlflow.types.utils import _infer_schema

    from stylisticbias.report.mlflow_log import frame_schema

    n = 500
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "model": ["m"] * n,
            "image_id": [f"img{i}" for i in range(n)],
            "late_missing": [f"x{i}" if i < n - 1 else None for i in range(n)],  # after the sample
            "first_missing": [None] * 100 + ["y"] * (n - 100),  # the sample skips missing values
            "phi": rng.random(n),
            "nan_late": np.r_[rng.random(n - 1), np.nan],
            "k": np.arange(n, dtype="int64"),
            "k32": np.arange(n, dtype="int32"),
            "flag": rng.random(n) < 0.5,
        }
    )
    with warnings.catch_warnings():  # "schema contains integer column(s)"
        warnings.simplefilter("ignore", UserWarning)
        assert frame_schema(df) == _infer_schema(df)
        assert frame_schema(df.iloc[0:0]) == _infer_schema(df.iloc[0:0])
