"""Wall time of the test tiers: ``make test`` (the fast tier CI and the README run),
``make test-slow`` (the slow tier) -- with the load average, so a number taken on a shared
machine can be read.

``python -m stylisticbias_dev.bench.tests [--tier test] [--tier test-slow] [--out FILE]``

Each tier is a ``make`` target run in a fresh process from the project root; its wall seconds,
the pytest summary line, the load averages before and after, and the machine go to
``reports/bench/tests.json`` (an entry per tier; other tiers' entries are kept). Targets: the
fast tier <= 180 s; all of CI (``.ci/run``: fast tier + ``make repro`` + slow tier) <= 45 min.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stylisticbias.config import project_root
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)

TARGETS_S = {"test": 180.0}
_SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed).*?) in [\d.]+s", re.MULTILINE)


def run_tier(target: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``make <target>``; its wall seconds, pytest summary, exit status and load."""
    before = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.run(["make", target], cwd=project_root(), env=env, capture_output=True,
                          text=True)  # fmt: skip
    wall = time.perf_counter() - t0
    after = os.getloadavg()
    found = _SUMMARY.findall(proc.stdout + proc.stderr)
    return {
        "command": f"make {target}",
        "seconds": round(wall, 1),
        "exit_status": proc.returncode,
        "pytest_summary": found[-1][0] if found else None,
        "target_seconds": TARGETS_S.get(target),
        "load_avg_start": [round(x, 2) for x in before],
        "load_avg_end": [round(x, 2) for x in after],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def main(argv: list[str] | None = None) -> int:
    """Time each ``--tier``; merge into ``--out``."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.tests")
    ap.add_argument("--tier", action="append", default=None, help="make target (repeatable)")
    ap.add_argument("--out", default="reports/bench/tests.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out)
    report: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    tiers = report.setdefault("tiers", {})
    for target in args.tier or ["test"]:
        entry = run_tier(target)
        tiers[target] = entry
        log.info("make %s: %s", target, entry)
    report.update(
        machine=machine_info(),
        note="wall seconds of make targets on a machine shared with other sessions: read them "
        "with the load averages (2 cores; a load of 2 means busy, 8 means four times "
        "oversubscribed)",
        ci=".ci/run: make test, make repro (+ clean-tree check), make test-slow; target 45 min",
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    log.info("wrote %s", out)
    return 0 if all(t["exit_status"] == 0 for t in tiers.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
