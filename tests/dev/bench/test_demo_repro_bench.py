"""The demo benchmark times each stage from DVC's "Running stage" lines as they arrive."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from stylisticbias_dev.bench import demo_repro


def test_stage_times_come_from_the_running_stage_lines(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "dvc"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        "echo \"Running stage 'check':\"; sleep 0.2\n"
        "printf \"faces: 100%%\\rRunning stage 'faces@reflect':\\n\"; sleep 0.6\n"
        "echo 'Updating lock file'; exit 3\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    wall, stages, code, tail = demo_repro._timed_repro(tmp_path, env)
    assert code == 3 and "Updating lock file" in tail
    assert list(stages) == ["check", "faces@reflect"]
    # lower bounds only (the sleeps): a busy machine can only make them longer
    assert stages["check"] >= 0.2 and stages["faces@reflect"] >= 0.6
    assert stages["check"] + stages["faces@reflect"] <= wall


def test_headline_sensitivity_is_the_minimum_detectable_effect_of_each_interval(
    tmp_path: Path,
) -> None:
    import json

    (tmp_path / "reports").mkdir()
    metrics = {
        "m": {
            "stylisticbias": {"sbs": 0.012, "sbs_ci_low": 0.006, "sbs_ci_high": 0.018},
            "reflect": {
                "win_rate_max": 0.52,
                "win_rate_max_ci_low": 0.46,
                "win_rate_max_ci_high": 0.58,
            },
            "beauty-and-the-bias": {
                "halo_rate": 0.8,
                "halo_rate_ci_low": 0.8,
                "halo_rate_ci_high": 1.0,
            },
        }
    }
    (tmp_path / "reports/metrics.json").write_text(json.dumps(metrics))
    got = demo_repro.headline_sensitivity(tmp_path)
    sb = got["stylisticbias"]["m"]
    assert sb["detected"] and abs(sb["se"] - 0.012 / 3.919928) < 1e-6
    assert abs(sb["mde80"] - 2.801585 * 0.012 / 3.919928) < 1e-6
    assert not got["reflect"]["m"]["detected"]  # 50% is the no-bias win rate, inside
    halo = got["beauty-and-the-bias"]["m"]
    assert halo["detected"] and "mde80" not in halo  # a one-sided bound: no standard error
