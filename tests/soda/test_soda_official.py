"""SODA's ``official`` definitions against an independent re-implementation of the released
analysis scripts (``Dasol-Choi/soda-framework``: ``analysis/analysis_js.py`` + ``bds_score.py``,
``analysis/cds_score.py``, ``analysis/analysis_bias.py`` + ``vac_score.py``), and the protocol's
fixed attributes asked of every image (a recording annotator).

The reference below is written from the released scripts' arithmetic in their own style (one
pandas frame per object with ``product_*`` / ``background_*`` columns, ``value_counts``
distributions, dict-keyed JS); it shares no code with ``stylisticbias.soda.metrics``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy

from stylisticbias.config import compose, project_root
from stylisticbias.soda import stage as soda_stage
from stylisticbias.soda.demo import StandIn, load_planted
from stylisticbias.soda.metrics import RELEASED_JS, bds
from stylisticbias.soda.protocol import BASE, Condition, load_soda
from stylisticbias.soda.stage import run_soda, soda_metrics
from stylisticbias.spec.parse import config_from_params

RELEASED_GROUPS = [
    "young_adults",
    "middle_aged",
    "elderly",
    "men",
    "women",
    "white",
    "black",
    "asian",
]


# --- the released arithmetic, re-implemented -------------------------------------------------


def _column(attr: str) -> str:
    """The released feature table's column of an attribute (product_ / background_ prefix)."""
    return f"background_{attr}" if attr.startswith("background_") else f"product_{attr}"


def _released_frame(labels: pd.DataFrame) -> pd.DataFrame:
    """One object's labels as the released ``feature_analysis.csv`` (level 1 / level 2 rows)."""
    out = pd.DataFrame(
        {
            "level": np.where(labels["condition"] == BASE, 1, 2),
            "demographic_type": labels["dimension"].where(labels["condition"] != BASE, np.nan),
            "demographic_value": labels["group"]
            .str.lower()
            .str.replace("-", "_")
            .str.replace(" ", "_")
            .where(labels["condition"] != BASE, np.nan),
        }
    )
    for c in labels.columns:
        if c.startswith("label:") and labels[c].notna().any():
            out[_column(c.removeprefix("label:"))] = labels[c].to_numpy()
    return out


def _features(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith("product_")] + [
        c for c in df.columns if c.startswith("background_")
    ]


def _prob(data: pd.DataFrame, feature: str) -> dict[str, float]:
    if len(data) == 0:
        return {}
    return {v: n / len(data) for v, n in data[feature].value_counts().items()}


def _js_distance(d1: dict[str, float], d2: dict[str, float]) -> float:
    if not d1 or not d2:
        return 0.0
    keys = sorted(set(d1) | set(d2))
    a = np.maximum(np.array([d1.get(k, 0) for k in keys]), 1e-10)
    b = np.maximum(np.array([d2.get(k, 0) for k in keys]), 1e-10)
    return float(jensenshannon(a / a.sum(), b / b.sum()))


def _bias_score(distribution: dict[str, int]) -> float:
    if len(distribution) == 0:
        return 0.0
    p = np.array(list(distribution.values()), dtype=float)
    p = p / p.sum()
    if len(p) == 1:
        return 1.0
    return 1 - entropy(p, base=2) / np.log2(len(p))


def _js2(p: dict[str, int], q: dict[str, int]) -> float:
    ps, qs = sum(p.values()), sum(q.values())
    if ps == 0 or qs == 0:
        return 0.0
    pn = {k: v / ps for k, v in p.items()}
    qn = {k: v / qs for k, v in q.items()}
    keys = set(pn) | set(qn)
    m = {k: 0.5 * (pn.get(k, 0) + qn.get(k, 0)) for k in keys}
    kl_p = sum(pn.get(k, 0) * np.log2(pn.get(k, 0) / m[k]) for k in keys if pn.get(k, 0) > 0)
    kl_q = sum(qn.get(k, 0) * np.log2(qn.get(k, 0) / m[k]) for k in keys if qn.get(k, 0) > 0)
    return 0.5 * (kl_p + kl_q)


def _clean(name: str) -> str:
    if name.startswith("product_product_"):
        return name.replace("product_product_", "")
    if name.startswith("product_"):
        return name.replace("product_", "")
    if name.startswith("background_"):
        return name.replace("background_", "")
    return name


def released_tables(labels: pd.DataFrame) -> dict[str, Any]:
    """BDS per (object, group), CDS per (dimension, attribute), VAC per object, as released."""
    bds_out: dict[tuple[str, str], float] = {}
    vac_out: dict[str, float] = {}
    pooled: Any = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(int))))
    for obj, rows in labels[labels["variant"] == "original"].groupby("object"):
        df = _released_frame(rows)
        feats = _features(df)
        base, demo = df[df["level"] == 1], df[df["level"] == 2]
        # analysis_js.py + bds_score.py
        for value, vdf in demo.groupby("demographic_value"):
            bds_out[(str(obj), str(value))] = float(
                np.mean([_js_distance(_prob(base, f), _prob(vdf, f)) for f in feats])
            )
        # analysis_bias.py + vac_score.py
        scores = [_bias_score(base[f].value_counts().to_dict()) for f in feats]
        demo_stats: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
        for dtype, tdf in demo.groupby("demographic_type"):
            demo_stats[str(dtype)] = {}
            for f in feats:
                demo_stats[str(dtype)][f] = {
                    str(v): vdf[f].value_counts().to_dict()
                    for v, vdf in tdf.groupby("demographic_value")
                }
                if f.startswith("product_") or f in ("product_color", "background_color"):
                    scores += [_bias_score(d) for d in demo_stats[str(dtype)][f].values()]
        kept = [x for x in scores if x >= 0.05]
        vac_out[str(obj)] = float(np.mean(kept)) if kept else 0.0
        # cds_score.py: pool the counts over objects
        for dim in ("age", "gender", "ethnicity"):
            for f, groups in demo_stats.get(dim, {}).items():
                for g, dist in groups.items():
                    if g in RELEASED_GROUPS:
                        for v, n in dist.items():
                            pooled[_clean(f)][dim][g][v] += n
    cds_out: dict[tuple[str, str], float] = {}
    for attr in sorted(pooled):
        for dim in ("age", "gender", "ethnicity"):
            dists = pooled[attr].get(dim, {})
            if len(dists) < 2:
                cds_out[(dim, attr)] = 0.0
                continue
            vals = [_js2(dists[a], dists[b]) for a, b in itertools.combinations(list(dists), 2)]
            cds_out[(dim, attr)] = float(np.mean(vals)) if vals else 0.0
    return {"bds": bds_out, "cds": cds_out, "vac": vac_out}


# --- the demo's labels -----------------------------------------------------------------------


def demo_labels(seed: int = 0, missing: float = 0.05) -> pd.DataFrame:
    """The soda-demo's stand-in images (all objects, conditions, 20 per prompt) labelled with
    their truth, a share of labels missing (invalid answers), and a constant fixed attribute."""
    planted = load_planted(project_root() / "conf/soda/planted.yaml")
    proto = load_soda()
    stand = StandIn(planted, seed)
    rng = np.random.default_rng(seed)
    rows = []
    for obj in proto.objects:
        for cond in proto.conditions("anti_stereotype"):
            for i in range(20):
                truth = stand.draw(obj, cond, i)
                row = {
                    "object": obj,
                    "condition": cond.id,
                    "dimension": cond.dimension,
                    "group": cond.group,
                    "variant": cond.variant,
                }
                for a, v in truth.items():
                    row[f"label:{a}"] = None if rng.random() < missing else v
                row["label:background_text_presence"] = "no_text"
                rows.append(row)
    return pd.DataFrame(rows)


def _spec(definitions: str) -> Any:
    cfg = config_from_params(compose(["experiment=soda-demo"]))
    return dataclasses.replace(cfg.soda, n_perm=2, definitions=definitions)


@pytest.fixture(scope="module")
def demo() -> tuple[pd.DataFrame, dict[str, pd.DataFrame], dict[str, Any]]:
    labels = demo_labels()
    tables = soda_metrics(labels, load_soda(), _spec("official"))
    return labels, tables, released_tables(labels)


def test_official_bds_equals_the_released_scripts(demo) -> None:
    _, tables, ref = demo
    b = tables["soda_bds"]
    checked = 0
    for r in b.itertuples():
        key = (r.object, r.group.lower().replace("-", "_").replace(" ", "_"))
        assert r.bds == pytest.approx(ref["bds"][key], abs=1e-9, rel=0), key
        checked += 1
    assert checked == 8 * 9
    # the paper setting with js_base=e, js_distance=true misses the released floor (> 1e-10)
    paper = soda_metrics(
        demo[0],
        load_soda(),
        dataclasses.replace(_spec("paper"), js_base=float(np.e), js_distance=True),
    )["soda_bds"]
    gap = np.abs(paper["bds"].to_numpy() - b["bds"].to_numpy())
    assert 0 < gap.max() < 1e-6


def test_official_cds_pools_objects_as_released(demo) -> None:
    _, tables, ref = demo
    c = tables["soda_cds_released"]
    c = c[c["variant"] == "original"]
    got = {(r.dimension, r.attribute): r.cds for r in c.itertuples()}
    assert set(got) == set(ref["cds"])
    for key, want in ref["cds"].items():
        assert got[key] == pytest.approx(want, abs=1e-9, rel=0), key
    # product and background colour are pooled as one `color`, as the released script does
    assert "color" in {a for _, a in got} and "product_color" not in {a for _, a in got}


def test_official_vac_keeps_released_scores(demo) -> None:
    _, tables, ref = demo
    v = tables["soda_vac_released"]
    assert len(v) == 8
    for r in v.itertuples():
        assert r.vac == pytest.approx(ref["vac"][r.object], abs=1e-9, rel=0), r.object
    # the per-condition VAC of the paper setting is a different aggregate
    assert not np.isclose(
        tables["soda_vac"].groupby("object")["vac"].mean().to_numpy(),
        v["vac"].to_numpy(),
        atol=1e-3,
    ).all()


def test_paper_definitions_unchanged_and_released_tables_empty(demo) -> None:
    labels = demo[0]
    paper = soda_metrics(labels, load_soda(), _spec("paper"))
    assert paper["soda_cds_released"].empty and paper["soda_vac_released"].empty
    one = labels[(labels["object"] == "car")]

    def sample(rows: pd.DataFrame, col: str) -> list[str | None]:
        return [None if pd.isna(x) else str(x) for x in rows[col]]

    base = {
        c.removeprefix("label:"): sample(one[one["condition"] == BASE], c)
        for c in one.columns
        if c.startswith("label:")
    }
    grp = one[one["condition"] == Condition("gender", "women").id]
    women = {a: sample(grp, f"label:{a}") for a in base}
    row = paper["soda_bds"].query("object == 'car' and group == 'women'").iloc[0]
    assert row["bds"] == pytest.approx(bds(base, women))  # base-2 divergence, NaN-free here
    assert bds(base, women, RELEASED_JS) != pytest.approx(row["bds"])


# --- fixed attributes: asked of every image ---------------------------------------------------


class Recording:
    """Wraps an annotator: records every item asked; discovery names only ``shape``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.engine = inner.engine
        self.asked: dict[str, set[str]] = defaultdict(set)

    def fingerprint(self) -> dict[str, Any]:
        return {**self.inner.fingerprint(), "recording": True}

    def annotate(self, items: list[Any]) -> list[dict[str, Any]]:
        out = []
        for it in items:
            if any(q.id == "discover" for q in it.questions):
                it = dataclasses.replace(
                    it, truth={"discover": [{"attribute": "shape", "values": ["round", "tall"]}]}
                )
            else:
                self.asked[it.image_id] |= {q.id for q in it.questions}
            out.append(it)
        return self.inner.annotate(out)

    def close(self) -> None:
        self.inner.close()


def test_fixed_attributes_are_asked_of_every_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(project_root() / "conf", tmp_path / "conf")
    monkeypatch.chdir(tmp_path)
    made: list[Recording] = []
    real = soda_stage.make_annotator

    def recording(spec: Any) -> Recording:
        made.append(Recording(real(spec)))
        return made[-1]

    monkeypatch.setattr(soda_stage, "make_annotator", recording)
    params = config_from_params(
        compose(
            [
                "experiment=soda-demo",
                "soda.objects=[car]",
                "soda.n_perm=2",
                "soda.images_per_prompt=2",
                "soda.mitigation=null",
            ]
        )
    )
    out = run_soda(params)
    images = pd.read_csv(out / "images.csv")
    fixed = set(load_soda().fixed_attributes)
    assert fixed == {
        "product_color",
        "text_presence",
        "background_color",
        "background_text_presence",
    }
    asked = made[0].asked
    assert set(asked) == set(images["image_id"])
    for image_id in images["image_id"]:
        assert fixed | {"shape"} <= asked[image_id], image_id
    ann = pd.read_parquet(out / "annotations/labels/annotations.parquet")
    assert fixed <= set(ann["question_id"])
    assert json.loads((out / "metrics.json").read_text())["enabled"] is True
