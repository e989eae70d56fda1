"""Wall time of the test tiers: ``make test`` (the fast tier CI and the README run),
``make test-slow`` (the slow tier) -- with the load average, so a number taken on a shared
machine can be read.

``make bench-tests`` = ``python -m stylisticbias_dev.bench.tests --tier test --tier test-slow``
(``--tier`` repeatable, any make target; ``--durations N`` keeps the N slowest tests per tier;
``--out FILE``, default ``reports/bench/tests.json``).

Under load: ``--hog N --repeat K`` runs each tier K times in a row while N busy-looping
processes (pure-Python spin loops at normal priority, :class:`CpuHog`) compete for the cores,
and records every run under ``under_load`` (``make bench-tests-load``: ``make test`` three times
with 8 hogs on the 2-core dev machine -- the suite has no wall-clock bound a busy machine can
break, docs/reliability.md).

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


def _spin(stop: Any) -> None:  # a module-level target: picklable for every start method
    while not stop.is_set():
        for _ in range(100_000):
            pass


class CpuHog:
    """``n`` processes spinning at normal priority while the ``with`` block runs: a machine
    busy with other work (a load average of about ``n``), started before and stopped after."""

    def __init__(self, n: int) -> None:
        import multiprocessing as mp

        # fork (Linux): the spinners start at once, with nothing to import
        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        self._stop = ctx.Event()
        self._procs = [ctx.Process(target=_spin, args=(self._stop,), daemon=True) for _ in range(n)]

    def __enter__(self) -> CpuHog:
        for p in self._procs:
            p.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for p in self._procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()


def slowest(output: str, n: int) -> dict[str, float]:
    """The ``n`` slowest ``phase test-id`` entries of pytest's ``--durations`` block."""
    found = sorted(
        ((float(s), f"{ph} {tid}") for s, ph, tid in _DURATION.findall(output)), reverse=True
    )
    return {name: secs for secs, name in found[:n]}


def run_tier(target: str, durations: int = 15) -> dict[str, Any]:
    """Run ``make <target>``; its wall seconds, pytest summary, exit status, load, slowest."""
    env = dict(os.environ)
    if durations:
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} --durations={durations}".strip()
    before = os.getloadavg()
    t0 = time.perf_counter()
    with LoadSampler() as load:
        proc = subprocess.run(
            ["make", target], cwd=project_root(), env=env, capture_output=True, text=True
        )
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
    ap.add_argument("--hog", type=int, default=0, help="busy processes competing while it runs")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each tier (with --hog)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out)
    report: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    if args.hog:
        targets = args.tier or ["test"]
        return _under_load(report, out, targets, args.hog, args.repeat, args.durations)
    tiers = report.setdefault("tiers", {})
    for target in args.tier or ["test"]:
        entry = run_tier(target, args.durations)
        tiers[target] = entry
        log.info(
            "make %s: %.1f s, exit %d, %s",
            target,
            entry["seconds"],
            entry["exit_status"],
            entry["pytest_summary"],
        )
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


def _under_load(
    report: dict[str, Any],
    out: Path,
    targets: list[str],
    hog: int,
    repeat: int,
    durations: int,
    warmup: float = 60.0,
) -> int:
    """Run each target ``repeat`` times in a row with ``hog`` busy processes; merge into
    ``report["under_load"]`` (the hogs start once, before the first run, and run throughout)."""
    runs: list[dict[str, Any]] = []
    with CpuHog(hog):
        time.sleep(warmup)  # let the 1-minute load average climb before the first run
        for target in targets:
            for i in range(repeat):
                entry = run_tier(target, durations)
                entry["run"] = i + 1
                runs.append(entry)
                log.info(
                    "make %s under %d hogs, run %d/%d: %.1f s, exit %d, %s",
                    target,
                    hog,
                    i + 1,
                    repeat,
                    entry["seconds"],
                    entry["exit_status"],
                    entry["pytest_summary"],
                )
    passed = all(r["exit_status"] == 0 for r in runs)
    report["under_load"] = {
        "command": f"python -m stylisticbias_dev.bench.tests --hog {hog} --repeat {repeat} "
        + " ".join(f"--tier {t}" for t in targets),
        "hog_processes": hog,
        "cores": os.cpu_count(),
        "all_passed": passed,
        "runs": runs,
        "machine": machine_info(),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    log.info("wrote %s", out)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
