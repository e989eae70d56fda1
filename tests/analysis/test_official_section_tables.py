"""``analysis.definitions: official`` Tables 4-6 against a transcription of the released
``compute_section_tables.py`` (``timo-cavelius/StylisticBias``, ``src/evaluation/``), written here
independently from that script's logic, on planted per-face data.

The script builds each of its tables from ``paired_deltas.csv`` rows (``variation_name`` =
``<key>:<value>``): per cell the per-face mean Δ (a face = ``model||face_folder``; one model
here), the cell's value their mean, a two-sided Wilcoxon by its helper ``wilcoxon_p`` (p = 1
below 5 finite values or when all are zero) and its ``bh_correct`` over every cell it lists for
the table (an empty cell has no faces and enters as p = 1). ``compute_age_gradient``: nine
styles (equal value, else substring) x three ages, Y-E = elderly - young, untested;
``compute_tattoo_flip``: every tattoo row x the age, gender and body groups (no ethnicity);
``compute_body_compensation``: five styles (substring) x three body types. Marks: ``***`` below
0.001, ``*`` below 0.05, else ``ns``. Face means are rounded to 12 decimals before ranking, as in
every test of the project (ties are ties; docs/statistics.md).

The planted data has cells of 4 faces (tested from 3, not from 5), empty cells (Streetwear for
the elderly, Worn/Distressed for obese faces), a fashion value in neither style list, unequal
row counts per face (the mean of face means is not the row mean) and planted age and body
gradients; the mutations at the end show the comparison fails with 3 faces, with a family of the
non-empty cells, or with Table 6's family taken from Table 4's styles.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from stylisticbias.analysis import official
from stylisticbias.analysis.paper_tables import shift_cells, table4, table5, table6, table12
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import Benchmark

TOL = 1e-12
SCENARIOS = (1, 2, 3, 4)

# ---- the transcription of compute_section_tables.py -----------------------------------------

REL_AGE_STYLES = [
    "Professional / Business formal",
    "Formal / Evening wear",
    "Smart casual",
    "Vintage / Retro",
    "Casual",
    "Streetwear",
    "Functional / outdoor wear",
    "Sporty / Athletic wear",
    "Worn / Distressed clothing",
]
REL_BODY_STYLES = [
    "Professional / Business formal",
    "Formal / Evening wear",
    "Smart casual",
    "Vintage / Retro",
    "Worn / Distressed clothing",
]
REL_AGES = ["young adult", "middle-aged adult", "elderly"]
REL_BODIES = ["thin", "normal", "obese"]
REL_TATTOO_GROUPS = [
    ("Age", "young adult", "age"),
    ("Age", "middle-aged adult", "age"),
    ("Age", "elderly", "age"),
    ("Gender", "male", "gender"),
    ("Gender", "female", "gender"),
    ("Body", "thin", "body_index"),
    ("Body", "normal", "body_index"),
    ("Body", "obese", "body_index"),
]


def _rel_face_arr(rows: list[dict]) -> np.ndarray:
    per_face: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        per_face[r["model"] + "||" + r["face_folder"]].append(r["delta"])
    return np.array([np.mean(v) for v in per_face.values()])


def _rel_wilcoxon_p(arr: np.ndarray) -> float:
    arr = np.round(arr[np.isfinite(arr)], 12)  # ties are ties (see the module docstring)
    if len(arr) < 5 or np.all(arr == 0):
        return 1.0
    return float(wilcoxon(arr, alternative="two-sided").pvalue)


def _rel_bh(pvals: list[float]) -> list[float]:
    n = len(pvals)
    order = np.argsort(pvals)
    corrected = np.ones(n)
    for rank, idx in enumerate(order):
        corrected[idx] = pvals[idx] * n / (rank + 1)
    for i in range(n - 2, -1, -1):
        corrected[order[i]] = min(corrected[order[i]], corrected[order[i + 1]])
    return corrected.clip(0, 1).tolist()


def _rel_mean(arr: np.ndarray) -> float:
    return float(np.mean(arr)) if len(arr) else float("nan")


def _rel_finish(cells: list[tuple]) -> list[dict]:
    """cells: (style or dim, group, face_arr) in the script's order -> its printed numbers."""
    p_raw = [_rel_wilcoxon_p(arr) for _, _, arr in cells]
    p_bh = _rel_bh(p_raw)
    out = []
    for (a, g, arr), p, pb in zip(cells, p_raw, p_bh):
        sig = "***" if pb < 0.001 else ("*" if pb < 0.05 else "ns")
        out.append(
            {
                "key": a,
                "group": g,
                "sbs": _rel_mean(arr),
                "p": p,
                "p_bh": pb,
                "sig": sig,
                "n": len(arr),
            }
        )
    return out


def rel_age_gradient(rows: list[dict]) -> tuple[list[dict], dict[str, float]]:
    fashion = [r for r in rows if r["cat_key"] == "fashion_style"]
    cells, gaps = [], {}
    for style in REL_AGE_STYLES:
        srows = [
            r
            for r in fashion
            if r["variation_name"].split(":", 1)[1].strip().lower() == style.lower()
        ]
        if not srows:
            srows = [r for r in fashion if style.lower() in r["variation_name"].lower()]
        if not srows:
            continue
        means = {}
        for ag in REL_AGES:
            arr = _rel_face_arr([r for r in srows if r["age"] == ag])
            means[ag] = _rel_mean(arr)
            cells.append((style, ag, arr))
        ya, el = means["young adult"], means["elderly"]
        gaps[style] = el - ya if np.isfinite(el) and np.isfinite(ya) else float("nan")
    return _rel_finish(cells), gaps


def rel_tattoo_flip(rows: list[dict]) -> list[dict]:
    tattoo = [r for r in rows if r["cat_key"] == "tattoos"]
    cells = [
        (dim, grp, _rel_face_arr([r for r in tattoo if r[col] == grp]))
        for dim, grp, col in REL_TATTOO_GROUPS
    ]
    return _rel_finish(cells)


def rel_body_compensation(rows: list[dict]) -> list[dict]:
    fashion = [r for r in rows if r["cat_key"] == "fashion_style"]
    cells = []
    for style in REL_BODY_STYLES:
        srows = [r for r in fashion if style.lower() in r["variation_name"].lower()]
        if not srows:
            continue
        for bg in REL_BODIES:
            cells.append((style, bg, _rel_face_arr([r for r in srows if r["body_index"] == bg])))
    return _rel_finish(cells)


# ---- planted per-face data -----------------------------------------------------------------


def _planted(benchmark: Benchmark, seed: int = 3) -> tuple[pd.DataFrame, list[dict]]:
    """Our delta rows and the same rows as the released ``paired_deltas.csv`` (one model)."""
    rng = np.random.default_rng(seed)
    n = 48
    age = ["elderly" if f < 4 else REL_AGES[f % 2] for f in range(n)]  # 4 elderly, 4 thin:
    body = ["thin" if 4 <= f < 8 else ("normal", "obese")[f // 2 % 2] for f in range(n)]
    eth = benchmark.demographics["ethnicity"]
    fashion = [v for v in benchmark.variations if v.category == "Fashion"]
    assert any(not v.evaluated for v in fashion)  # Luxury / High fashion: in no style list
    tattoo = [v for v in benchmark.variations if v.category == "Tattoos"]
    plant = {
        "Professional / Business formal": 0.12,
        "Worn / Distressed clothing": -0.15,
        "Streetwear": -0.06,
        "Facial tattoo": 0.03,
    }
    ours, rel = [], []
    for f in range(n):
        d = {
            "age": age[f],
            "gender": ("male", "female")[f % 3 == 0],
            "ethnicity": eth[f % len(eth)],
            "body_type": body[f],
        }
        u = rng.normal(0, 0.05)
        for v in fashion + tattoo:
            if v.value == "Streetwear" and d["age"] == "elderly":
                continue  # an empty Table 4 cell
            if v.value == "Worn / Distressed clothing" and d["body_type"] == "obese":
                continue  # an empty Table 6 cell
            eff = plant.get(v.value, 0.0) + 0.04 * REL_AGES.index(d["age"])
            eff += 0.05 * REL_BODIES.index(d["body_type"]) * (v.category == "Fashion")
            for sc in SCENARIOS:
                if rng.random() < 0.2:
                    continue  # unequal rows per face
                delta = float(eff + u + rng.normal(0, 0.1))
                ours.append(
                    {
                        "face_id": f"f{f:03d}",
                        "model": "m",
                        "attribute": v.attribute,
                        "value": v.value,
                        "scenario_id": sc,
                        "delta": delta,
                        **d,
                    }
                )
                rel.append(
                    {
                        "model": "m",
                        "face_folder": f"f{f:03d}",
                        "cat_key": v.key,
                        "variation_name": f"{v.key}:{v.value}",
                        "age": d["age"],
                        "gender": d["gender"],
                        "ethnicity": d["ethnicity"],
                        "body_index": d["body_type"],
                        "delta": delta,
                    }
                )
    return pd.DataFrame(ours), rel


@pytest.fixture(scope="module")
def planted(benchmark: Benchmark):
    delta, rel = _planted(benchmark)
    s = replace(
        AnalysisSettings(definitions="official").resolved(), n_resamples=20, n_permutations=20
    )
    faces = pd.Index(np.sort(delta["face_id"].unique()))
    shift = shift_cells(delta, faces, s)
    t12 = table12(shift, benchmark, s)
    return delta, rel, s, shift, t12


def _ours(shift, t12, benchmark, s) -> dict[str, pd.DataFrame]:
    return {
        "age": table4(shift, t12, benchmark, s),
        "tattoo": table5(t12, benchmark, s, shift=shift),
        "body": table6(t12, benchmark, s, shift=shift),
    }


_SIG = {"***": "p<0.001", "*": "p<0.05", "ns": "ns"}


def _same_cells(got: pd.DataFrame, want: list[dict], groups: list[str]) -> None:
    assert list(got["group"]) == groups, "the script's cells, in its order"
    for (_, g), w in zip(got.iterrows(), want):
        assert g["n"] == w["n"]
        if w["n"]:
            assert abs(g["sbs"] - w["sbs"]) < TOL
            assert abs(g["pval"] - w["p"]) < TOL
            assert g["significance"] == _SIG[w["sig"]]
        else:  # an empty cell: no value, no test, p = 1 in the correction
            assert np.isnan(g["sbs"]) and np.isnan(g["pval"]) and g["significance"] == ""
        assert abs(g["pval_corr"] - w["p_bh"]) < TOL


def _check(tables: dict[str, pd.DataFrame], rel: list[dict], benchmark: Benchmark) -> None:
    label = {v.value: v.label for v in benchmark.variations}
    want, gaps = rel_age_gradient(rel)
    t4 = tables["age"]
    cells = t4[t4["group"] != "elderly_minus_young"].reset_index(drop=True)
    assert list(cells["variation"]) == [label[w["key"]] for w in want]
    _same_cells(cells, want, [w["group"] for w in want])
    gap = t4[t4["group"] == "elderly_minus_young"].set_index("variation")["sbs"]
    assert list(gap.index) == [label[k] for k in gaps]
    for k, g in gaps.items():
        assert abs(gap[label[k]] - g) < TOL or (np.isnan(g) and np.isnan(gap[label[k]]))
    t5 = tables["tattoo"]
    want = rel_tattoo_flip(rel)
    assert list(t5["dimension"].str.lower()) == [w["key"].lower() for w in want]
    _same_cells(t5, want, [w["group"] for w in want])
    t6 = tables["body"]
    want = rel_body_compensation(rel)
    assert list(t6["variation"]) == [label[w["key"]] for w in want]
    _same_cells(t6, want, [w["group"] for w in want])


def test_official_tables_4_to_6_follow_compute_section_tables(planted, benchmark) -> None:
    _, rel, s, shift, t12 = planted
    tables = _ours(shift, t12, benchmark, s)
    _check(tables, rel, benchmark)
    # the data exercises every rule: 4-face cells, empty cells, significant and ns marks
    allc = pd.concat(tables.values())
    assert ((allc["n"] > 0) & (allc["n"] < 5)).any() and (allc["n"] == 0).any()
    assert {"p<0.001", "p<0.05", "ns"} <= set(allc["significance"])
    assert len(tables["body"]) == 15 and len(tables["tattoo"]) == 8 and len(tables["age"]) == 36


@pytest.mark.parametrize("mutation", ["three_faces", "family_with_data", "body_styles"])
def test_the_comparison_sees_a_wrong_rule(planted, benchmark, monkeypatch, mutation) -> None:
    _, rel, s, shift, t12 = planted
    if mutation == "three_faces":  # check_significance_independent.py's minimum
        monkeypatch.setattr(official, "SECTION_MIN_FACES", 3)
    elif mutation == "family_with_data":  # empty cells left out of the correction
        orig = official.adjust_untested_as_one

        def family_with_data(p, in_family, method, *, extra=0):
            return orig(p, in_family & np.isfinite(p), method, extra=extra)

        monkeypatch.setattr(official, "adjust_untested_as_one", family_with_data)
    else:  # Table 6 over Table 4's nine styles
        import stylisticbias.analysis.paper_tables as pt

        monkeypatch.setattr(pt, "BODY_COMPENSATION_STYLES", official.AGE_GRADIENT_STYLES)
    with pytest.raises(AssertionError):
        _check(_ours(shift, t12, benchmark, s), rel, benchmark)


def test_paper_definitions_keep_the_table12_cells(planted, benchmark) -> None:
    """``paper``: Tables 4-6 are Table 12's cells and marks (every fashion value, BH over
    Table 12); the released helper's tables differ from them here."""
    delta, rel, s, _, _ = planted
    p = replace(s, definitions="paper")
    faces = pd.Index(np.sort(delta["face_id"].unique()))
    shift = shift_cells(delta, faces, p)
    t12 = table12(shift, benchmark, p)
    t6 = table6(t12, benchmark, p)
    cells = t12[(t12.dimension == "body") & t12.variation.isin(t6.variation)]
    n_fashion = sum(v.category == "Fashion" for v in benchmark.variations)
    assert set(t6["variation"]) == set(cells["variation"]) and len(t6) == 3 * n_fashion
    with pytest.raises(AssertionError):
        _check(_ours(shift, t12, benchmark, p), rel, benchmark)
