"""Analyses of the paper's released code that the paper's tables do not show.

Each is a registered table (``analysis.table_registry``), written by the ``analyze`` stage,
shown in the report and logged to MLflow; docs/statistics.md ("Beyond the paper: the released
code's analyses") documents them. Definitions follow the released code
(``timo-cavelius/StylisticBias``, ``src/evaluation/``) with the fixes named below:

* :func:`mixed_effects` / :func:`effect_sizes` -- Delta averaged to face x variation category x
  scenario category, ``delta ~ C(variation_category) + C(scenario_category)`` with a random
  intercept per face (statsmodels ``mixedlm``, REML, L-BFGS); partial eta^2 per factor from nested
  OLS fits (SS = SSR_reduced - SSR_full; eta2p = SS / (SS + SSR_full); F, p), demographic eta2p
  from one-way OLS on each face's mean Delta, with face-bootstrap CIs. Marginal R^2 (Nakagawa):
  var(X beta) / (var(X beta) + sigma2_face + sigma2_resid) -- the released code's
  var(fittedvalues - resid) is not the fixed-effect variance (it is reported beside it as
  ``r2_marginal_released``). A face variance estimated at 0 (or a fit that fails) is the
  OLS fit: the mixed model with sigma2_face = 0 (``method`` says which). Default definitions
  (valid inference; ``official`` keeps the released code's): the fixed effects' SEs and p-values
  are face-clustered (CR1, t on G - 1; ``method`` ``+cr1_face``), the category factors' F is the
  face-clustered Wald F on (q, G - q) df (``model_kind`` ``mixed_cluster_wald``), and an eta^2
  interval's lower end is 0 when its test does not reject at ``1 - ci``.
* :func:`negativity_asymmetry` -- the released code's five positive/negative variation pairs:
  per face |Delta_neg| - |Delta_pos| (face means over the pair's rows, models pooled), one-sided
  Wilcoxon (greater), BH over the pairs (a pair with < 3 faces as p = 1), ratio of the median
  |Delta|s with a face-bootstrap CI.
* :func:`scenario_agreement` -- the models' per-scenario SBS: Kendall's W, ICC(2,1) (two-way
  random, absolute agreement) and ICC(3,1) (two-way mixed, consistency; the released code calls
  this one "ICC(2,1)"), pairwise Spearman; bootstrap CIs over scenarios. Under ``official``
  on the released inputs: |SBS| per scenario, W over the four released scenario categories.
  Default: W's p from a permutation test, the ICCs' CIs from the F distribution.
* :func:`base_preference` / :func:`preference_summary` -- the absolute-preference screen of the
  base faces (per model x scenario: z = |mean phi - 0.5| / (sd / sqrt(n)) >= 3.29,
  |mean phi - 0.5| >= 0.20, n >= 50) and the |Delta| >= 0.5 / >= 0.75 tail rates.

The modules: :mod:`.effects` (the mixed model and effect sizes), :mod:`.negativity`,
:mod:`.agreement`, :mod:`.preference` (the screen and the tails); the interaction tests are
:mod:`stylisticbias.analysis.interactions`. :func:`official_analyses` builds them all.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from stylisticbias.analysis.interactions import interaction_tests
from stylisticbias.analysis.metrics import CellSums
from stylisticbias.analysis.official_analyses.agreement import scenario_agreement
from stylisticbias.analysis.official_analyses.effects import (
    cell_ratio,
    effect_sizes,
    face_groups,
    mixed_effects,
    mixed_frame,
    scenario_categories,
)
from stylisticbias.analysis.official_analyses.negativity import negativity_asymmetry
from stylisticbias.analysis.official_analyses.preference import preference_summary
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.table_registry import spec
from stylisticbias.benchmark import Benchmark

#: the pooled cell sums these analyses read (added to the streaming analysis' groupings)
ATTRIBUTE_SCENARIO = ("attribute", "scenario_id")


def face_means(
    pooled: dict[str, CellSums], faces: pd.Index, dimensions: dict[str, str]
) -> pd.DataFrame:
    """Each face's mean Delta over its edits and scenarios (``attribute_scenario`` sums) with its
    demographic groups (from the ``t12_<dim>`` sums): the one-way effect sizes' input, faces
    without a finite mean left out."""
    a = pooled["attribute_scenario"]
    fm = pd.DataFrame({"face_id": faces, "delta": cell_ratio(a.num.sum(axis=1), a.den.sum(axis=1))})
    groups = face_groups({d: pooled[f"t12_{d}"] for d in dimensions}, dimensions)
    fm = pd.concat([fm, groups], axis=1)
    return fm[np.isfinite(fm["delta"].to_numpy(np.float64))].reset_index(drop=True)


def official_analyses(
    pooled: dict[str, CellSums],
    by_scenario: pd.DataFrame,
    base_cells: pd.DataFrame,
    tails: pd.DataFrame,
    faces: pd.Index,
    benchmark: Benchmark,
    s: AnalysisSettings,
    *,
    dimensions: dict[str, str],
    pooled_label: str,
) -> dict[str, pd.DataFrame]:
    """Every table of this module from the pooled cell sums (``t12_<dim>`` and
    ``attribute_scenario``), the per-model per-scenario SBS, the base-face screen cells and the
    tail counts of each model."""
    out: dict[str, pd.DataFrame] = {}
    mf = mixed_frame(pooled["attribute_scenario"], faces, benchmark, s)
    out["mixed_model"] = mixed_effects(mf, cluster=not s.official)
    fm = face_means(pooled, faces, dimensions)
    out["effect_sizes"] = effect_sizes(mf, fm, faces, s)
    out["negativity_asymmetry"] = negativity_asymmetry(pooled["t12_gender"], s)
    t12 = {d: pooled[f"t12_{d}"] for d in dimensions}
    out["interaction_tests"] = interaction_tests(t12, benchmark, s, dimensions)
    sc = by_scenario[by_scenario["model"].astype(str) != pooled_label]
    out["scenario_agreement"] = scenario_agreement(sc, s, scenario_categories(benchmark, s))
    out["base_preference"] = base_cells.reset_index(drop=True)
    out["preference_summary"] = preference_summary(base_cells, tails, pooled_label)
    return {k: df[spec(k).built_columns] for k, df in out.items()}
