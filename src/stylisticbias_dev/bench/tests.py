"""Wall time of the test tiers: ``make test`` (the fast tier CI and the README run),
``make test-slow`` (the slow tier) -- with the load average, so a number taken on a shared
machine can be read.

``make bench-tests`` = ``python -m stylisticbias_dev.bench.tests --tier test --tier test-slow``
(``--tier`` repeatable, any make target; ``--durations N`` keeps the N slowest tests per tier;
``--out FILE``, default ``reports/bench/tests.json``).

Each tier is a ``make`` target run in a fresh process from the project root; its wall seconds,
exit status, the pytest summary line, the load averages before, during (sampled every few
seconds) and after, the date, the N slowest test phases and the machine go to
``reports/bench/tests.json`` (an entry per tier; other tiers' entries are kept). Targets: the
fast tier <= 180 s; all of CI (``.ci/run``: fast tier + ``make repro`` + slow tier) <= 45 min.
Measure on an idle machine (a 1-minute load average well below the core count at the start):
two pytest-xdist workers on two cores leave nothing for a second session.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stylisticbias.config import project_root
from stylisticbias_dev.bench.machine import machine_info

log = logging.getLogger(__name__)

TARGETS_S = {"test": 180.0}
_SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed).*?) in [\d.]+s", re.MULTILINE)
_DURATION = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)$", re.MULTILINE)


class LoadSampler:
    """The 1-minute load average, sampled every ``every`` seconds in a background thread."""

    def __init__(self, every: float = 5.0) -> None:
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, float | None]:
        """Mean and maximum of the samples (None when the run was shorter than one period)."""
        s = self.samples
        return {
            "mean": round(sum(s) / len(s), 2) if s else None,
            "max": round(max(s), 2) if s else None,
        }


def slowest(output: str, n: int) -> dict[str, float]:
    """The ``n`` slowest ``phase test-id`` entries of pytest's ``--durations`` block."""
    found = sorted(((float(s), f"{ph} {tid}") for s, ph, tid in _DURATION.findall(output)),
                   reverse=True)  # fmt: skip
    return {name: secs for secs, name in found[:n]}


def run_tier(target: str, durations: int = 15) -> dict[str, Any]:
    """Run ``make <target>``; its wall seconds, pytest summary, exit status, load, slowest."""
    env = dict(os.environ)
    if durations:
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} --durations={durations}".strip()
    before = os.getloadavg()
    t0 = time.perf_counter()
    with LoadSampler() as load:
        proc = subprocess.run(["make", target], cwd=project_root(), env=env, capture_output=True,
                              text=True)  # fmt: skip
    wall = time.perf_counter() - t0
    after = os.getloadavg()
    out = proc.stdout + proc.stderr
    found = _SUMMARY.findall(out)
    if proc.returncode:
        log.warning("make %s exited %d:\n%s", target, proc.returncode, out[-3000:])
    return {
        "command": f"make {target}",
        "seconds": round(wall, 1),
        "exit_status": proc.returncode,
        "pytest_summary": found[-1][0] if found else None,
        "target_seconds": TARGETS_S.get(target),
        "load_avg_start": [round(x, 2) for x in before],
        "load_avg_during_1min": load.summary(),
        "load_avg_end": [round(x, 2) for x in after],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "slowest": slowest(out, durations),
    }


def main(argv: list[str] | None = None) -> int:
    """Time each ``--tier``; merge into ``--out``."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.bench.tests")
    ap.add_argument("--tier", action="append", default=None, help="make target (repeatable)")
    ap.add_argument("--durations", type=int, default=15, help="slowest test phases kept")
    ap.add_argument("--out", default="reports/bench/tests.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out)
    report: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    tiers = report.setdefault("tiers", {})
    for target in args.tier or ["test"]:
        entry = run_tier(target, args.durations)
        tiers[target] = entry
        log.info("make %s: %.1f s, exit %d, %s", target, entry["seconds"],
                 entry["exit_status"], entry["pytest_summary"])  # fmt: skip
    report.update(
        machine=machine_info(),
        note="wall seconds of make targets on a machine shared with other sessions: read them "
        "with the load averages (2 cores; a load of 2 means busy, 8 means four times "
        "oversubscribed). Re-measure with `make bench-tests` on an idle machine.",
        ci=".ci/run: make test, make repro (+ clean-tree check), make test-slow; target 45 min",
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    log.info("wrote %s", out)
    return 0 if all(tiers[t]["exit_status"] == 0 for t in args.tier or ["test"]) else 1


if __name__ == "__main__":
    sys.exit(main())
