"""An experiment's protocols, each a job of its own (stylisticbias.protocols)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stylisticbias.config import ROOT, compose, full_params
from stylisticbias.errors import StylisticBiasError
from stylisticbias.output_paths import check_all_outputs
from stylisticbias.params_view import compose_view, view_overrides
from stylisticbias.protocols import chosen, job_params, jobs, judged

ALL = ["stylisticbias", "beauty-and-the-bias", "reflect", "vignette", "soda"]


@pytest.fixture(scope="module")
def demo_jobs() -> dict[str, dict]:
    return jobs(compose_view([]))


def test_the_demo_runs_every_protocol_each_as_its_own_job(demo_jobs: dict[str, dict]) -> None:
    assert list(demo_jobs) == ALL
    assert judged(compose([])) == ALL[:4]  # SODA audits the generator: no judge stages
    for protocol, job in demo_jobs.items():
        assert job["protocol"] == protocol
        assert chosen(job) == ALL  # every job knows the whole run
        assert job["paths"]["reports"] == f"reports/{protocol}"
        assert job["paths"]["faces"] == f"data/{protocol}/faces"
    # each protocol's own settings (conf/experiment/demo.yaml protocol_settings)
    assert demo_jobs["reflect"]["faces"] == {"n": 48, "sampler": "uniform", "seed": 0}
    assert demo_jobs["beauty-and-the-bias"]["judge"]["seeds"] == [1, 42, 742]
    assert demo_jobs["stylisticbias"]["faces"]["n"] == 100
    assert demo_jobs["stylisticbias"]["qa"]["annotator"] == "simulated-annotator"
    assert demo_jobs["reflect"]["qa"]["annotator"] is None
    assert demo_jobs["soda"]["soda"]["objects"][:2] == ["car", "laptop"]
    assert demo_jobs["stylisticbias"]["soda"]["objects"] == []


def test_no_two_jobs_share_an_output(demo_jobs: dict[str, dict]) -> None:
    """Adding, removing or switching a protocol never touches another's files."""
    keys = ("faces", "variations", "judgments", "scores", "qa", "annotations", "soda", "reports")
    seen: dict[str, str] = {}
    for protocol, job in demo_jobs.items():
        check_all_outputs(job, ROOT)
        for key in keys:
            path = Path(job["paths"][key])
            for other, owner in seen.items():
                o = Path(other)
                assert not (path == o or path.is_relative_to(o) or o.is_relative_to(path)), (
                    protocol,
                    key,
                    owner,
                )
            seen[str(path)] = f"{protocol}:{key}"


def test_a_composition_is_the_job_of_its_first_protocol() -> None:
    assert compose([])["protocol"] == "stylisticbias"
    reflect = compose(["experiment=reflect-demo"])
    assert (reflect["protocol"], reflect["faces"]["n"]) == ("reflect", 48)
    assert compose(["protocols=[vignette,reflect]"])["protocol"] == "vignette"
    # protocol=<name> composes that protocol's job (tests, sweeps), its settings merged
    assert compose(["protocol=reflect"])["faces"]["n"] == 48


def test_what_a_user_sets_applies_to_every_protocol() -> None:
    """An explicit value wins over a protocol's settings; the experiment's own values do not."""
    assert compose(["experiment=reflect-demo", "faces.n=8"])["faces"]["n"] == 8
    view = compose_view(view_overrides(["faces.n=20", "++qa.policy=exclude"]))
    for job in jobs(view).values():
        assert (job["faces"]["n"], job["qa"]["policy"]) == (20, "exclude")
    # the beauty job keeps its seeds (the view's judge.seeds is the experiment's, not a user's)
    assert jobs(view)["beauty-and-the-bias"]["judge"]["seeds"] == [1, 42, 742]
    one = compose_view(view_overrides(["experiment=reflect-demo", "faces.n=20"]))
    assert full_params(one)["faces"]["n"] == 20 == jobs(one)["reflect"]["faces"]["n"]


def test_choosing_protocols_and_bad_choices() -> None:
    view = compose_view(["protocols=[reflect,soda]"])
    assert list(view["protocols"]) == ["reflect"] and list(view["generator_protocols"]) == ["soda"]
    assert list(jobs(view)) == ["reflect", "soda"]
    with pytest.raises(StylisticBiasError, match="not run by this experiment; run: reflect, soda"):
        job_params(view, "vignette")
    with pytest.raises(StylisticBiasError) as exc:
        compose(["protocols=[reflekt]"])
    assert "\n" not in str(exc.value) and "reflekt" in str(exc.value)
    with pytest.raises(StylisticBiasError, match="no protocol chosen"):
        compose(["protocols=[]"])
    with pytest.raises(StylisticBiasError, match=r"protocol_settings\.reflect\.protocols"):
        compose(["++protocol_settings.reflect.protocols={}"])


def test_a_stage_names_its_protocol_or_fails_in_one_line(tmp_path: Path) -> None:
    """``--protocol`` reads that protocol's job from data/config/; one the check stage did not
    write is one line naming the ones it did (exit 2)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "pipelines/locality.py"), "--protocol", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")},
    )
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert "--protocol nope: data/config/nope/resolved.yaml not found" in lines[0]


def test_settings_of_an_unknown_protocol_fail_in_one_line() -> None:
    with pytest.raises(StylisticBiasError, match=r"protocol_settings\.reflct: unknown protocol"):
        compose(["++protocol_settings.reflct.faces.n=3"])


def test_the_judge_run_logs_of_every_protocol_are_no_dvc_data() -> None:
    """``data/<protocol>/judgments/<model>.run.json`` holds timings and MLflow run ids: DVC
    ignores it (.dvcignore), or the analyze stage's dependency hash -- and dvc.lock -- would
    change on every run."""
    for protocol in ALL[:4]:
        stash = f"data/{protocol}/judgments/.m.stash/judgments.parquet"
        for rel in (f"data/{protocol}/judgments/m.run.json", stash):
            proc = subprocess.run(
                [str(Path(sys.executable).parent / "dvc"), "check-ignore", rel],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            assert proc.returncode == 0, (rel, proc.stdout, proc.stderr)


def test_one_protocol_alone_is_the_same_job_as_in_the_demo() -> None:
    """``dvc exp run -S 'protocols=[reflect]'`` keeps the view's shown values (the demo's
    ``faces.n``, its first protocol's): they are no user setting, so the REFLECT job alone is
    the demo's REFLECT job -- the same data, the same report."""
    alone = jobs(compose_view(["protocols=[reflect]"]))["reflect"]
    in_demo = jobs(compose_view([]))["reflect"]
    skip = ("protocols", "generator_protocols")
    assert {k: v for k, v in alone.items() if k not in skip} == {
        k: v for k, v in in_demo.items() if k not in skip
    }
