"""The pair fits and Kendall's W equal SciPy's and the row-by-row computation to the last bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from stylisticbias.analysis.pair_fits import kendalls_w, line_fit, two_sided_p


@pytest.mark.parametrize("seed", range(6))
def test_line_fit_is_linregress_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    x = rng.normal(size=n)
    y = 0.3 * x + rng.normal(scale=[0.0, 0.5, 2.0][seed % 3], size=n)
    if seed == 5:
        y = np.full(n, 0.25)  # constant y: r = 0
    ref = stats.linregress(x, y)
    got = line_fit(x, y)
    for name in ("slope", "intercept", "rvalue", "stderr"):
        a, b = getattr(got, name), getattr(ref, name)
        assert (a == b) or (np.isnan(a) and np.isnan(b)), name
    p = two_sided_p(np.array([got.tstat]), np.array([got.df]))[0]
    np.testing.assert_array_equal(p, ref.pvalue)  # (NaN = NaN: constant y)


def _w_rowwise(r: np.ndarray) -> tuple[float, float, float]:
    """The textbook computation: each rater ranked and its ties counted on its own."""
    m, n = r.shape
    ranks = np.apply_along_axis(stats.rankdata, 1, r)
    s = ((ranks.sum(axis=0) - m * (n + 1) / 2) ** 2).sum()
    ties = 0.0
    for row in ranks:
        _, counts = np.unique(row, return_counts=True)
        ties += (counts**3 - counts).sum()
    w = 12 * s / (m**2 * (n**3 - n) - m * ties)
    chi2 = m * (n - 1) * w
    return float(w), float(chi2), float(stats.chi2.sf(chi2, n - 1))


@pytest.mark.parametrize("ties", [False, True])
def test_kendalls_w_equals_rowwise(ties: bool) -> None:
    rng = np.random.default_rng(2)
    r = rng.normal(size=(17, 25)) + np.linspace(0, 2, 25)
    if ties:
        r = np.round(r)  # many tied ratings per rater
    assert kendalls_w(r) == _w_rowwise(r)


def test_kendalls_w_errors() -> None:
    with pytest.raises(ValueError, match="NaN"):
        kendalls_w(np.array([[1.0, np.nan], [1.0, 2.0]]))
    with pytest.raises(ValueError, match="same rank"):
        kendalls_w(np.ones((3, 4)))
    with pytest.raises(ValueError, match=">= 2 raters"):
        kendalls_w(np.ones((1, 4)))


@pytest.mark.parametrize("kind", ["plain", "ties", "constant", "short"])
def test_spearman_pairs_equal_spearmanr(kind: str) -> None:
    import warnings

    from stylisticbias.analysis.pair_fits import spearman_pairs

    rng = np.random.default_rng(7)
    x = rng.normal(size=(3 if kind == "short" else 25, 6))
    x[:, 1] = x[:, 0] * 2.0  # rho = 1 exactly
    if kind == "ties":
        x = np.round(x * 2)
    if kind == "constant":
        x[:, 3] = 0.5
    pairs = [(a, b) for a in range(6) for b in range(a + 1, 6)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rho, p = spearman_pairs(x, pairs)
        for k, (a, b) in enumerate(pairs):
            ref = stats.spearmanr(x[:, a], x[:, b])
            np.testing.assert_array_equal(rho[k], ref.statistic)
            np.testing.assert_array_equal(p[k], ref.pvalue)
