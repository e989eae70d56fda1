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
