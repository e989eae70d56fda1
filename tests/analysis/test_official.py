"""``analysis.definitions: official``: the same raw answers through our pipeline and through a
transcription of the paper's released code's formulas (written here, independently) agree.

The transcription follows ``src/evaluation/`` of ``timo-cavelius/StylisticBias``: phi = share of
positive answers among *all* answers (unparsed ones count), VS = mean over scenarios of the sample
SD (ddof 1) of the group means of phi, and the significance of Tables 12 and 3 as
``check_significance_independent.py`` makes it: a face-level two-sided Wilcoxon from three faces
(below: no test, p = 1 in the correction), Benjamini-Hochberg over every variation x demographic
group cell (Table 12: empty cells as p = 1) and every category x dimension cell (Table 3). The
unit is the face (models pooled), as there.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from stylisticbias.analysis.metrics import sbs
from stylisticbias.analysis.model_tables import table2
from stylisticbias.analysis.paper_tables import DIMENSIONS, shift_cells, table3, table12
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark
from stylisticbias.scores import compute_scores

TOL = 1e-12
MODEL = "m"
SCENARIOS = (1, 2, 12, 16, 22)


def _dataset(benchmark: Benchmark, n_faces: int = 28, seed: int = 7):
    """Faces, variations and raw answers (4 orderings x 3 seeds, some unparsed) of one model."""
    rng = np.random.default_rng(seed)
    by_cat: dict[str, list] = defaultdict(list)
    for v in benchmark.variations:
        if v.evaluated:
            by_cat[v.category].append(v)
    cats = list(by_cat)[:3]
    picks = [v for c in cats for v in by_cat[c][:2]]
    faces, variations, answers = [], [], []
    for f in range(n_faces):
        fid = f"f{f:03d}"
        demo = {a: str(rng.choice(benchmark.demographics[a])) for a in DEMOGRAPHIC_AXES}
        faces.append({"image_id": f"{fid}--base", "face_id": fid, **demo})
        images = [(f"{fid}--base", 0.0)]
        for i, v in enumerate(picks):
            if not (v.applies_to(demo["gender"])):
                continue
            img = f"{fid}--{v.slug}"
            variations.append(
                {
                    "image_id": img,
                    "face_id": fid,
                    "category": v.category,
                    "attribute": v.attribute,
                    "value": v.value,
                    **demo,
                }
            )
            images.append((img, 0.15 * (i % 3 - 1)))
        lean = 0.1 * benchmark.demographics["age"].index(demo["age"])
        for img, eff in images:
            for sc in SCENARIOS:
                p_pos = float(np.clip(0.45 + lean + eff + rng.normal(0, 0.1), 0.05, 0.95))
                for o in (1, 2, 3, 4):
                    for k in (1, 2, 3):
                        u = rng.random()
                        pos = u < 0.08 + 0.92 * p_pos
                        choice = "invalid" if u < 0.08 else "positive" if pos else "negative"
                        answers.append((img, sc, o, k, choice))
    j = pd.DataFrame(answers, columns=["image_id", "scenario_id", "ordering", "seed", "choice"])
    j["model"] = MODEL
    j["simulated"] = True
    j["p_undecided"] = 0.0
    j["decoding"] = "simulated"
    for col, pole in (("p_pos", "positive"), ("p_neg", "negative"), ("p_invalid", "invalid")):
        j[col] = (j["choice"] == pole).astype(float)
    return pd.DataFrame(faces), pd.DataFrame(variations), j


# ---- the transcription of the released code's formulas ---------------------------------------


def _off_phi(j: pd.DataFrame) -> dict[tuple[str, int], float]:
    out: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    for img, sc, ch in zip(j.image_id, j.scenario_id, j.choice):
        out[(img, sc)][0] += ch == "positive"
        out[(img, sc)][1] += 1
    return {k: a / n for k, (a, n) in out.items()}


def _off_wilcoxon_p(arr: np.ndarray) -> float:
    # Face means are rounded to 12 decimals first (ties are ties): the released code ranks the
    # float noise of its own summation order, which no other summation reproduces bit for bit.
    arr = np.round(arr[np.isfinite(arr)], 12)
    if len(arr) < 3:  # wilcoxon_vs_zero: NaN, entered as 1 in the correction
        return float("nan")
    if np.all(arr == 0):  # SciPy's answer for all-zero shifts
        return 1.0
    return float(wilcoxon(arr, zero_method="wilcox", alternative="two-sided").pvalue)


def _off_bh(pvals: list[float]) -> list[float]:
    pvals = [1.0 if np.isnan(p) else p for p in pvals]
    n = len(pvals)
    order = np.argsort(pvals)
    corrected = np.ones(n)
    for rank, idx in enumerate(order):
        corrected[idx] = pvals[idx] * n / (rank + 1)
    for i in range(n - 2, -1, -1):
        corrected[order[i]] = min(corrected[order[i]], corrected[order[i + 1]])
    return corrected.clip(0, 1).tolist()


def _off_std(values: list[float]) -> float:
    m = sum(values) / len(values)
    return (sum((v - m) ** 2 for v in values) / (len(values) - 1)) ** 0.5


# ---- the test --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(benchmark: Benchmark):
    faces, variations, j = _dataset(benchmark)
    s = replace(
        AnalysisSettings(definitions="official").resolved(), n_resamples=20, n_permutations=20
    )
    scores = compute_scores(j, faces, variations, benchmark, definitions="official")
    return faces, variations, j, scores, s


def test_settings_official_switches_the_choices() -> None:
    s = AnalysisSettings.from_config({"definitions": "official"})
    assert s.official and s.vs_ddof == 1 and s.min_faces == 3
    assert AnalysisSettings.from_config({}).vs_ddof == 0


def test_phi_and_delta_agree(run, benchmark: Benchmark) -> None:
    faces, variations, j, scores, _ = run
    phi = _off_phi(j)
    got = scores.set_index(["image_id", "scenario_id"])
    for (img, sc), want in phi.items():
        assert abs(got.loc[(img, sc), "phi"] - want) < TOL
    face_of = dict(zip(variations.image_id, variations.face_id))
    for img, fid in face_of.items():
        for sc in SCENARIOS:
            want = phi[(img, sc)] - phi[(f"{fid}--base", sc)]
            assert abs(got.loc[(img, sc), "delta"] - want) < TOL
    # the paper's default leaves unparsed answers out: different numbers
    paper = compute_scores(j, faces, variations, benchmark)
    assert (paper["phi"] - scores["phi"]).abs().max() > 0.01


def test_vs_agrees(run) -> None:
    faces, _, j, scores, s = run
    phi = _off_phi(j)
    t2 = table2(scores, s).set_index(["model", "dimension"])
    for dim, col in DIMENSIONS.items():
        stds = []
        for sc in SCENARIOS:
            groups: dict[str, list[float]] = defaultdict(list)
            for img, g in zip(faces.image_id, faces[col]):
                groups[g].append(phi[(img, sc)])
            means = [sum(v) / len(v) for v in groups.values()]
            if len(means) >= 2:
                stds.append(_off_std(means))
        want = sum(stds) / len(stds)
        assert abs(t2.loc[(MODEL, dim), "vs"] - want) < TOL, dim


def _face_means(delta: pd.DataFrame, mask: pd.Series) -> np.ndarray:
    sub = delta[mask]
    return sub.groupby("face_id")["delta"].mean().to_numpy()


@pytest.mark.slow  # SciPy's exact Wilcoxon on ~100 cells, twice: ~20 s (the transcription
# kind stays in make test: phi/delta, VS, Table 2's permutation test; the Wilcoxon and BH
# against SciPy/statsmodels: tests/analysis/test_significance.py)
def test_sbs_table12_and_table3_agree(run, benchmark: Benchmark) -> None:
    _, _, _, scores, s = run
    delta = scores[~scores["is_base"] & scores["delta"].notna()]
    faces = pd.Index(np.sort(scores["face_id"].astype(str).unique()))
    # SBS overall: mean over faces of each face's mean delta
    ov = sbs(delta, ["model"], **s.sbs_kwargs(), faces=faces)
    want = _face_means(delta, delta["model"] == MODEL).mean()
    assert abs(float(ov["effect"].iloc[0]) - want) < TOL
    # Table 12: variation x group cells, Wilcoxon per cell, BH over every variation x group cell
    # (check_significance_independent.py's check_big_table: empty cells as p = 1)
    shift = shift_cells(delta, faces, s)
    t12 = table12(shift, benchmark, s)
    cells, vals, ps = [], [], []
    for (a, v), d in delta.groupby(["attribute", "value"], observed=True):
        for dim, col in DIMENSIONS.items():
            for g in benchmark.demographics[col]:
                dg = d[d[col] == g]
                fm = dg.groupby("face_id")["delta"].mean().to_numpy()
                cells.append((a, v, dim, g))
                vals.append(fm.mean() if len(fm) else np.nan)
                ps.append(_off_wilcoxon_p(fm))
    bh = _off_bh(ps)
    got = t12.set_index(["attribute", "value", "dimension", "group"])
    assert len(got) == len(cells) and got["delta"].notna().sum() == np.isfinite(vals).sum()
    for key, val, p, q in zip(cells, vals, ps, bh):
        if np.isfinite(val):
            assert abs(got.loc[key, "delta"] - val) < TOL, key
        assert abs(got.loc[key, "pval_corr"] - q) < TOL, key
        if np.isfinite(p):
            assert abs(got.loc[key, "pval"] - p) < TOL, key
    n_var = delta[["attribute", "value"]].drop_duplicates().shape[0]
    assert len(cells) == n_var * 13  # every variation x every group (the 12-face export test,
    # tests/judge/test_official_layout_released.py, has empty cells)
    # Table 3: per group the mean of face means over the category's rows, averaged over groups;
    # the test: Wilcoxon on the pooled per-face means, BH across all cells
    t3 = table3(delta, faces, shift, benchmark, s)
    got3 = t3[t3.category != "Average"].set_index(["category", "dimension"])
    keys, v3, p3 = [], [], []
    for cat in benchmark.categories:  # check_table3: all 10 x 4 cells, empty ones as p = 1
        cd = delta[delta["category"] == cat]
        for dim, col in DIMENSIONS.items():
            sub = [
                cd[cd[col] == g].groupby("face_id")["delta"].mean().mean()
                for g in benchmark.demographics[col]
                if (cd[col] == g).any()
            ]
            keys.append((cat, dim))
            v3.append(float(np.mean(sub)) if sub else np.nan)
            p3.append(_off_wilcoxon_p(cd.groupby("face_id")["delta"].mean().to_numpy()))
    assert len(keys) == 40 and len(got3) < 40  # the family is larger than the rows
    for key, val, q in zip(keys, v3, _off_bh(p3)):
        if not np.isfinite(val):
            assert key not in got3.index
            continue
        assert abs(got3.loc[key, "sbs"] - val) < TOL, key
        assert abs(got3.loc[key, "pval_corr"] - q) < TOL, key


def _off_strength(phi: dict, faces: pd.DataFrame, labels: dict[str, str]) -> float:
    """The released code's ``_compute_strength_for_labels`` (face -> label, ddof 1)."""
    stds = []
    for sc in SCENARIOS:
        groups: dict[str, list[float]] = defaultdict(list)
        for img, fid in zip(faces.image_id, faces.face_id):
            groups[labels[fid]].append(phi[(img, sc)])
        means = [sum(v) / len(v) for v in groups.values()]
        if len(means) >= 2:
            stds.append(_off_std(means))
    return sum(stds) / len(stds)


def test_table2_permutation_test_is_the_released_one(run) -> None:
    """Same test as ``_permutation_p_value``: face labels shuffled across the base faces (each
    face keeps its scenario vector), VS recomputed, p = (1 + #{VS_perm >= VS_obs - 1e-12}) /
    (1 + n). Fed the permutations our generator draws, the transcription gives our p exactly."""
    faces, _, j, scores, s = run
    s = replace(s, n_permutations=200)
    phi = _off_phi(j)
    t2 = table2(scores, s).set_index(["model", "dimension"])
    order = sorted(faces.face_id)
    rng = np.random.default_rng(s.seed + 1)  # one draw per dimension, in order
    ps = []
    for dim, col in DIMENSIONS.items():
        lab = dict(zip(faces.face_id, faces[col]))
        labels = np.array([lab[f] for f in order], dtype=object)
        obs = _off_strength(phi, faces, lab)
        perm = np.argsort(rng.random((s.n_permutations, len(order))), axis=1)
        ge = sum(
            _off_strength(phi, faces, dict(zip(order, labels[p]))) >= obs - 1e-12 for p in perm
        )
        want = (ge + 1) / (s.n_permutations + 1)
        assert t2.loc[(MODEL, dim), "pval"] == pytest.approx(want, abs=TOL), dim
        ps.append(want)
    assert max(ps) > 0.05  # a dimension without a planted effect: not a floor-only check
