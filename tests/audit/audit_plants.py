"""Planted protocol reports for the audit's tests: ``reports/<protocol>/`` of three judged
protocols (StylisticBias's metrics.json, REFLECT's and VIGNETTE's task tables) with numbers
chosen here, so a test can say which cell of the audit must show which number. (A module of its
own name: ``from conftest import`` would find another folder's conftest first.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.config import compose
from stylisticbias.protocols import chosen
from stylisticbias.spec import Config
from stylisticbias.spec.parse import config_from_params

PROTOCOLS = ["stylisticbias", "reflect", "vignette"]
MODELS = ["simulated-strong", "simulated-weak"]
#: what each model's StylisticBias headline is planted at: (sbs, ci_low, ci_high)
SBS = {"simulated-strong": (0.05, 0.03, 0.07), "simulated-weak": (0.01, -0.005, 0.025)}
#: REFLECT's highest win rate per model: (win_rate, ci_low, ci_high)
WIN = {"simulated-strong": (0.71, 0.64, 0.78), "simulated-weak": (0.53, 0.47, 0.59)}
#: VIGNETTE's most skewed log-odds per model
LOG_ODDS = {"simulated-strong": (-1.2, -1.6, -0.8), "simulated-weak": (0.3, -0.1, 0.7)}


def configs(extra: list[str] | None = None) -> tuple[Config, dict[str, Config]]:
    """The root configuration of an experiment running :data:`PROTOCOLS` and each job's."""
    overrides = [f"protocols=[{','.join(PROTOCOLS)}]", *(extra or [])]
    root = config_from_params(compose(overrides))
    jobs = {p: config_from_params(compose([*overrides, f"protocol={p}"])) for p in chosen(root)}
    return root, jobs


def _csv(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)


def plant(root: Path, sbs: dict[str, tuple[float, float, float]] | None = None) -> None:
    """Write the three protocols' reports under ``root`` (``sbs`` overrides :data:`SBS`)."""
    sbs = sbs or SBS
    reports = root / "reports"
    sb = {
        m: {
            "sbs": v,
            "sbs_ci_low": lo,
            "sbs_ci_high": hi,
            "significant_share": 0.5,
            "invalid_rate": 0.02,
        }
        for m, (v, lo, hi) in sbs.items()
    }
    (reports / "stylisticbias").mkdir(parents=True)
    (reports / "stylisticbias" / "metrics.json").write_text(json.dumps(sb), encoding="utf-8")
    win, gap, lo_odds, sel = [], [], [], []
    for m in MODELS:
        w, wl, wh = WIN[m]
        win += [
            {
                "model": m,
                "scenario_id": 1,
                "group": "A",
                "win_rate": w,
                "ci_low": wl,
                "ci_high": wh,
                "inconsistent_rate": 0.1,
            },
            {
                "model": m,
                "scenario_id": 1,
                "group": "B",
                "win_rate": 1 - w,
                "ci_low": 1 - wh,
                "ci_high": 1 - wl,
                "inconsistent_rate": 0.1,
            },
        ]
        gap.append(
            {
                "model": m,
                "scenario_id": 2,
                "group": "B",
                "gap_pct": -4.5,
                "ci_low": -7.0,
                "ci_high": -2.0,
            }
        )
        v, lo, hi = LOG_ODDS[m]
        lo_odds += [
            {
                "model": m,
                "activity": "x",
                "identity": "i1",
                "log_odds": v,
                "ci_low": lo,
                "ci_high": hi,
            },
            {
                "model": m,
                "activity": "x",
                "identity": "i2",
                "log_odds": v / 10,
                "ci_low": lo / 10,
                "ci_high": hi / 10,
            },
        ]
        sel.append(
            {
                "model": m,
                "scenario_id": 101,
                "identity": "i1",
                "selection_frequency": 40.0,  # VIGNETTE's S is in percent
                "ci_low": 30.0,
                "ci_high": 50.0,
            }
        )
    _csv(reports / "reflect" / "tables" / "reflect_win_rates.csv", win)
    _csv(reports / "reflect" / "tables" / "reflect_salary_gaps.csv", gap)
    _csv(reports / "vignette" / "tables" / "vignette_log_odds.csv", lo_odds)
    _csv(reports / "vignette" / "tables" / "vignette_selection.csv", sel)
    for p in PROTOCOLS:
        (reports / p / "README.md").write_text(f"# {p}\n", encoding="utf-8")
        if p != "stylisticbias":
            (reports / p / "metrics.json").write_text("{}\n", encoding="utf-8")
