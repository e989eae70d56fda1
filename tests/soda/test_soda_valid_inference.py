"""The SODA mitigation test holds its level where the paper's paired t-test does not, and the
vectorised swap-permutation statistics equal the metrics they permute.

A planted null design (:data:`stylisticbias_dev.bench.soda_valid_inference.CHECK_DESIGN`): four
objects with their own attribute distributions, the demographic groups shifted, the mitigated
prompt drawing every object exactly as the original one, but refused less often (originals lose
20-50% of their 20 images, mitigated prompts 0-5%). Fewer images give a larger expected CDS by
chance alone, so the paired t-test of CDS reads the refusals as a mitigation effect; the
swap-permutation test (images re-split between the two prompts, sizes kept) does not.

Power of this check (``python -m stylisticbias_dev.bench.soda_valid_inference --check-power``
runs it over 20 other seeds): the t-test is caught in 18 of 20 seeds and the swap test passes
in 20 of 20. With the t-test's p put under ``paper`` too (a deliberately wrong default), this
seed reads 0.6 for both and the test fails.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from stylisticbias.soda.metrics import (
    JSSettings,
    cds,
    cds_counts,
    swap_counts,
    two_sided_permutation_p,
    vac,
    vac_counts,
)
from stylisticbias.soda.protocol import load_soda
from stylisticbias.soda.stage import MITIGATION_TESTS, soda_metrics
from stylisticbias_dev.bench.soda_valid_inference import (
    CHECK_DESIGN,
    audit_spec,
    check_rates,
    draw_object,
)

SPEC = replace(audit_spec(199, "paper"), mitigation="anti_stereotype")


def test_swap_test_holds_level_where_paired_t_test_does_not() -> None:
    rates = check_rates(seed=0, replicates=15)
    # the paper's paired t-test rejects a true null at >= 3 x alpha ...
    assert rates["official"] >= 0.3, rates
    # ... the default stays near alpha 0.05 (<= 3 of 15: P(Binom(15, 0.05) > 3) = 0.005)
    assert rates["paper"] <= 0.2, rates


def _labels(rng: np.random.Generator, n: int, miss: float) -> dict[str, list[str | None]]:
    return {
        f"a{j}": [None if rng.random() < miss else f"v{rng.integers(2 + j)}" for _ in range(n)]
        for j in range(4)
    }


def _present(lab: dict[str, list[str | None]]) -> dict[str, list[str | None]]:
    """As the stage's samples: the attributes with a label in that condition."""
    return {a: v for a, v in lab.items() if any(x is not None for x in v)}


@pytest.mark.parametrize("trial", range(40))
def test_count_statistics_equal_the_metrics(trial: int) -> None:
    rng = np.random.default_rng(trial)
    orig = {
        g: _labels(rng, int(rng.integers(2, 12)), float(rng.choice([0, 0.3, 0.9]))) for g in "xyz"
    }
    mit = {g: _labels(rng, int(rng.integers(2, 12)), 0.1) for g in "xyz"}
    support = {
        a: sorted({v for d in (orig, mit) for lab in d.values() for v in lab[a] if v is not None})
        for a in orig["x"]
    }
    s = JSSettings(base=float(rng.choice([2.0, np.e])), distance=bool(rng.integers(2)))
    counts: dict[str, dict[str, dict[str, np.ndarray]]] = {"o": {}, "m": {}}
    for g in "xyz":
        counts["o"][g], counts["m"][g] = swap_counts(orig[g], mit[g], support, 7, trial)
        # every re-split keeps the pooled labels
        for a in support:
            pooled = counts["o"][g][a] + counts["m"][g][a]
            assert (pooled == pooled[0]).all()
    for key, src in (("o", orig), ("m", mit)):
        got = cds_counts(counts[key], s)[0]
        want = cds({g: _present(src[g]) for g in "xyz"}, s)
        assert got == pytest.approx(want, abs=1e-12, nan_ok=True)
        for g in "xyz":
            assert vac_counts(counts[key][g])[0] == pytest.approx(
                vac(_present(src[g])), abs=1e-12, nan_ok=True
            )


def test_two_sided_permutation_p() -> None:
    null = np.arange(-50, 50, dtype=float)  # 100 shuffles, symmetric about -0.5
    assert two_sided_permutation_p(np.r_[49.0, null]) == pytest.approx(2 * 2 / 101)
    assert two_sided_permutation_p(np.r_[-50.0, null]) == pytest.approx(2 * 2 / 101)
    assert two_sided_permutation_p(np.r_[0.0, null]) == 1.0
    assert np.isnan(two_sided_permutation_p(np.r_[np.nan, null]))


def _frame(labels_by_object: dict[str, dict[str, dict[str, list[str | None]]]]) -> pd.DataFrame:
    rows = []
    for obj, by_cond in labels_by_object.items():
        for cid, lab in by_cond.items():
            n = len(next(iter(lab.values())))
            for i in range(n):
                rows.append(
                    {
                        "object": obj,
                        "condition": cid,
                        **{f"label:{a}": v[i] for a, v in lab.items()},
                    }
                )
    return pd.DataFrame(rows)


def test_official_keeps_the_paired_t_test_and_paper_swaps() -> None:
    proto = load_soda("soda")
    rng = np.random.default_rng(7)
    labels = _frame({f"o{i}": draw_object(CHECK_DESIGN, proto, rng, True, True) for i in range(4)})
    for defs in ("paper", "official"):
        spec = replace(SPEC, definitions=defs)
        tables = soda_metrics(labels, proto, spec)
        mit = tables["soda_mitigation"]
        c = tables["soda_cds"].query("attribute == 'all'")
        wide = c.pivot_table(index=["object", "dimension"], columns="variant", values="cds")
        t = stats.ttest_rel(wide["anti_stereotype"], wide["original"])
        row = mit.query("metric == 'cds' and dimension == 'all'").iloc[0]
        assert row["t"] == pytest.approx(t.statistic)
        assert row["test"] == MITIGATION_TESTS[defs]
        if defs == "official":  # the paper's test, as before
            assert row["pval"] == pytest.approx(t.pvalue)
        else:  # the swap test: its own p, from spec.n_perm re-splits
            assert row["pval"] != pytest.approx(t.pvalue)
            assert row["pval"] >= 2 / (1 + spec.n_perm)
