"""SODA metrics against SciPy and by hand; the permutation null recomputed split by split."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import jensenshannon

from stylisticbias.soda.metrics import (
    JSSettings,
    bds,
    cds,
    cds_per_attribute,
    concentration,
    distributions,
    entropy,
    js,
    js_labels,
    mitigation_test,
    null_bds,
    permutation_test,
    split_masks,
    vac,
)

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("k", [2, 3, 7])
@pytest.mark.parametrize("base", [2.0, np.e])
def test_js_matches_scipy(k: int, base: float) -> None:
    for _ in range(20):
        p, q = RNG.dirichlet(np.ones(k)), RNG.dirichlet(np.ones(k))
        q[RNG.integers(k)] = 0.0  # zeros in one distribution
        ref = jensenshannon(p, q, base=base)
        assert js(p, q, base, distance=True) == pytest.approx(ref, abs=1e-12)
        assert js(p, q, base) == pytest.approx(ref**2, abs=1e-12)
    assert js(np.array([1.0, 0]), np.array([0, 1.0])) == pytest.approx(1.0)  # disjoint, base 2
    assert js(np.array([0.3, 0.7]), np.array([0.3, 0.7])) == 0.0
    rows = RNG.dirichlet(np.ones(k), size=(5,))
    other = RNG.dirichlet(np.ones(k), size=(5,))
    want = [jensenshannon(a, b, base=2) ** 2 for a, b in zip(rows, other)]
    assert np.allclose(js(rows, other), want)


def test_entropy_and_concentration_match_scipy() -> None:
    for k in (2, 4, 9):
        p = RNG.dirichlet(np.ones(k))
        assert entropy(p) == pytest.approx(stats.entropy(p, base=2))
    labels = ["a"] * 19 + ["b"]
    # the released code's example: a 19/1 split gives 1 - 0.286 / 1 = 0.714
    assert concentration(labels) == pytest.approx(1 - stats.entropy([19, 1], base=2), abs=1e-12)
    assert concentration(labels) == pytest.approx(0.714, abs=5e-4)
    assert concentration(["a"] * 10 + ["b"] * 10) == pytest.approx(0.0)
    assert concentration(["a"] * 20) == 1.0
    three = ["a"] * 10 + ["b"] * 6 + ["c"] * 4
    assert concentration(three, k_options=5) == pytest.approx(
        1 - stats.entropy([10, 6, 4], base=2) / np.log2(5)
    )
    assert vac({"x": labels, "y": ["a"] * 10 + ["b"] * 10}) == pytest.approx(
        (concentration(labels) + 0.0) / 2
    )


def _labels(n: int, probs: dict[str, list[float]], rng: np.random.Generator) -> dict:
    return {
        a: list(rng.choice([f"{a}{i}" for i in range(len(p))], size=n, p=p))
        for a, p in probs.items()
    }


def test_bds_and_cds_by_hand() -> None:
    base = {"colour": ["red"] * 10 + ["blue"] * 10, "shape": ["box"] * 20}
    group = {"colour": ["red"] * 20, "shape": ["box"] * 10 + ["ball"] * 10}
    s = JSSettings()
    support, (p, q) = distributions(base["colour"], group["colour"])
    assert support == ["blue", "red"] and list(p) == [0.5, 0.5] and list(q) == [0, 1]
    want_c = jensenshannon([0.5, 0.5], [0, 1], base=2) ** 2
    want_s = jensenshannon([0, 1], [0.5, 0.5], base=2) ** 2
    assert bds(base, group) == pytest.approx((want_c + want_s) / 2)
    assert bds(base, group, JSSettings(np.e, True)) == pytest.approx(
        (jensenshannon([0.5, 0.5], [0, 1]) + jensenshannon([0, 1], [0.5, 0.5])) / 2
    )
    third = {"colour": ["blue"] * 20, "shape": ["box"] * 20}
    groups = {"g1": base, "g2": group, "g3": third}
    per = {a: cds_per_attribute(groups, a, s) for a in ("colour", "shape")}
    for a in per:
        pairs = [
            js_labels(groups[x][a], groups[y][a], s)
            for x, y in itertools.combinations(sorted(groups), 2)
        ]
        assert per[a] == pytest.approx(np.mean(pairs))
    assert cds(groups) == pytest.approx(np.mean(list(per.values())))
    assert np.isnan(js_labels([None, None], ["a"], s))


def test_permutation_null_is_bds_of_each_split() -> None:
    rng = np.random.default_rng(3)
    base = _labels(12, {"c": [0.5, 0.3, 0.2], "s": [0.7, 0.3]}, rng)
    group = _labels(9, {"c": [0.2, 0.3, 0.5], "s": [0.6, 0.4]}, rng)
    masks = split_masks(21, 9, 50, seed=4)
    assert (masks.sum(axis=1) == 9).all()
    null = null_bds(base, group, masks, JSSettings())
    pooled = {a: base[a] + group[a] for a in base}
    for row, value in zip(masks, null):
        g = {a: [x for x, m in zip(pooled[a], row) if m] for a in pooled}
        b = {a: [x for x, m in zip(pooled[a], row) if not m] for a in pooled}
        assert value == pytest.approx(bds(b, g))


def test_permutation_test_finds_a_shift_and_is_seeded() -> None:
    rng = np.random.default_rng(5)
    base = _labels(20, {"c": [0.8, 0.1, 0.1], "s": [0.5, 0.5]}, rng)
    shifted = _labels(20, {"c": [0.1, 0.1, 0.8], "s": [0.5, 0.5]}, rng)
    obs, p = permutation_test(base, shifted, n_perm=2000, seed=1)
    assert obs == pytest.approx(bds(base, shifted)) and p < 0.01
    assert permutation_test(base, shifted, n_perm=2000, seed=1) == (obs, p)
    same = _labels(20, {"c": [0.8, 0.1, 0.1], "s": [0.5, 0.5]}, rng)
    _, p_null = permutation_test(base, same, n_perm=2000, seed=1)
    assert p_null > 0.01 and 1 / 2001 <= p_null <= 1.0


def test_mitigation_test_matches_scipy() -> None:
    o = RNG.uniform(0.2, 0.6, size=12)
    m = o * RNG.uniform(0.5, 0.9, size=12)
    res = mitigation_test(o, m)
    ref = stats.ttest_rel(m, o)
    assert res.t == pytest.approx(ref.statistic) and res.pval == pytest.approx(ref.pvalue)
    assert res.change_pct == pytest.approx(np.mean((m - o) / o * 100))
    assert res.n == 12 and res.t < 0
    with pytest.raises(ValueError):
        mitigation_test([1.0], [0.5])
