"""Size and opening time of a 100-model leaderboard (``reports/leaderboard/index.html``).

``python -m stylisticbias_dev.bench.leaderboard --models 100 [--repeats 3]``

Builds ``--models`` synthetic models with every headline number the real leaderboard shows
(the fixed columns and ten per-category SBS, each with an interval), renders the page with the
vendored vega builds, and opens it ``--repeats`` times in headless Chromium (a fresh profile
each time): seconds from navigation until every plot is drawn as SVG, console errors, network
requests. Targets: < 5 MB, < 2 s. Writes ``reports/bench/leaderboard.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from stylisticbias.analysis.headline import Headline
from stylisticbias.cli import setup_logging
from stylisticbias.config import project_root
from stylisticbias.outputs import atomic_write_text
from stylisticbias.report.leaderboard import LeaderboardModel, write_leaderboard
from stylisticbias_dev.bench.machine import machine_info
from stylisticbias_dev.headless import open_page

log = logging.getLogger(__name__)

CATEGORIES = (
    "Accessories",
    "Eyewear",
    "Facial hair",
    "Fashion",
    "Hair len./color",
    "Hair style",
    "Makeup & lips",
    "Piercings",
    "Skin irreg.",
    "Tattoos",
)
#: ``ready`` of the page: every plot drawn
PLOTS_DRAWN = "document.querySelectorAll('.plots svg').length === 3"
SIZE_TARGET_MB, OPEN_TARGET_S = 5.0, 2.0


def _ci(rng: np.random.Generator, v: float, half: float) -> tuple[float, float, float]:
    w = half * float(rng.uniform(0.5, 1.5))
    return v, v - w, v + w


def synthetic_models(n: int, seed: int = 0) -> list[LeaderboardModel]:
    """``n`` models with the real headline keys and plausible numbers."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        hs = [Headline("sbs", "SBS (all variations)", *_ci(rng, rng.normal(0.01, 0.01), 0.006))]
        hs.append(Headline("abs_sbs", "|SBS| (all variations)", abs(hs[0].value or 0.0)))
        for dim in ("age", "gender", "ethnicity", "body_type"):
            v = float(rng.uniform(0.0, 0.06))
            hs.append(Headline(f"vs_debiased.{dim}", f"VS de-biased, {dim}", *_ci(rng, v, 0.01)))
        share = float(rng.uniform(0.1, 0.7))
        hs.append(Headline("significant_share", "significant variations", *_ci(rng, share, 0.1)))
        inv = float(rng.uniform(0.0, 0.1))
        hs.append(Headline("invalid_rate", "invalid answers", *_ci(rng, inv, 0.002)))
        hs.append(Headline("cohens_d", "Cohen's d", *_ci(rng, float(rng.uniform(0, 0.6)), 0.2)))
        hs.append(Headline("n_variations_80", "variations 80%", float(rng.integers(5, 25))))
        for c in CATEGORIES:
            v = float(rng.normal(0.0, 0.02))
            hs.append(Headline(f"sbs.category.{c}", f"SBS, {c}", *_ci(rng, v, 0.007), tail=True))
        out.append(LeaderboardModel(f"model-{i:03d} <&\"'>", i % 3 == 0, tuple(hs)))
    return out


def run(n_models: int, repeats: int) -> dict[str, Any]:
    """Render and open the page; the result record."""
    with tempfile.TemporaryDirectory(prefix="leaderboard-bench-") as tmp:
        page = write_leaderboard(
            synthetic_models(n_models), Path(tmp) / "index.html", project_root()
        )
        size = page.stat().st_size
        loads, errors, requests = [], [], []
        for _ in range(repeats):
            with open_page(page, PLOTS_DRAWN) as p:
                loads.append(p.load_s)
                errors += p.errors
                requests += [u for u in p.requests if not u.startswith("file:")]
    return {
        "models": n_models,
        "size_bytes": size,
        "size_mb": round(size / 1e6, 3),
        "open_s": [round(x, 3) for x in loads],
        "open_s_median": round(statistics.median(loads), 3),
        "console_errors": errors,
        "network_requests": requests,
        "targets": {"size_mb": SIZE_TARGET_MB, "open_s": OPEN_TARGET_S},
        "meets_targets": size / 1e6 < SIZE_TARGET_MB and max(loads) < OPEN_TARGET_S,
    }


def main() -> None:
    """Command line."""
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("reports/bench/leaderboard.json"))
    args = ap.parse_args()
    res = run(args.models, args.repeats)
    doc = {
        **res,
        "command": f"python -m stylisticbias_dev.bench.leaderboard --models {args.models} "
        f"--repeats {args.repeats}",
        "browser": "headless Chromium (chromium package), fresh profile per opening",
        "machine": machine_info(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")
    log.info(
        "%d models: %.2f MB, opens in %.2f s (median of %d)",
        args.models,
        res["size_mb"],
        res["open_s_median"],
        args.repeats,
    )


if __name__ == "__main__":
    main()
