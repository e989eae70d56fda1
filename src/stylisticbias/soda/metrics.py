"""SODA's metrics on categorical attribute labels (its Eqs. 1-3, App. F, §5.5).

For one object, one attribute ``a`` and one prompt condition ``c`` (``base`` or a group ``g``),
``P_c^a`` is the empirical distribution of the labels an annotator gave that condition's images,
on the union of the values observed in the compared conditions.

* ``JS(P, Q)``: Jensen-Shannon divergence ``KL(P||M)/2 + KL(Q||M)/2``, ``M = (P+Q)/2``; base 2
  by default (in [0, 1]; Table 3's 1.000 values imply base 2); ``distance=True`` gives its
  square root, as ``scipy.spatial.distance.jensenshannon`` (the released code's natural-log
  distance is ``base=e, distance=True``).
* **BDS(g)** = mean over attributes of ``JS(P_base^a, P_g^a)`` (Eq. 1).
* **CDS(G)** = mean over attributes of the mean over unordered group pairs of dimension ``G`` of
  ``JS(P_gi^a, P_gj^a)`` (Eq. 2); :func:`cds_per_attribute` is its inner part (Table 3).
* **VAC** = mean over attributes of ``1 - H(P^a) / H_max`` (Eq. 3); ``H_max = log k`` with ``k``
  the number of observed values (the released code; one observed value gives 1) or, with
  ``k_options``, the number of values the attribute can take.
* **Permutation test** of BDS(g): the base and group images are pooled (each image keeps all
  its labels) and split at random into the two sizes ``n_perm`` times (seeded); one-sided
  ``p = (1 + #{BDS_null >= BDS_obs}) / (1 + n_perm)``.
* **Mitigation**: the mean change of a metric from the original to the mitigated prompts,
  paired by (object, dimension) for CDS and (object, group) for VAC, with the paired t-test
  (``scipy.stats.ttest_rel``, the paper's) and the mean change in percent. Its default p-value
  is the **swap permutation test** (:func:`swap_counts`, :func:`cds_counts`,
  :func:`vac_counts`, :func:`two_sided_permutation_p`): the images of each (object, group)'s
  original and mitigated prompt are pooled and re-split at random, both sizes kept, and the
  mean change recomputed. Its null -- the mitigated prompt draws every object as the original
  -- holds whatever the images per prompt; the t-test's does not (a prompt refused more often
  has fewer images and a larger expected CDS/VAC by chance alone).

``soda.definitions: official`` (the released analysis scripts of ``Dasol-Choi/soda-framework``,
``analysis/analysis_js.py`` + ``bds_score.py``, ``cds_score.py``, ``analysis_bias.py`` +
``vac_score.py``), :data:`RELEASED_JS` and the ``*_released`` functions:

* **BDS**: per attribute, each condition's distribution is counts over the condition's images
  (an image without a label counts in the total), every entry of the union support floored at
  ``1e-10``, renormalised, and ``scipy.spatial.distance.jensenshannon`` (natural log, the
  *distance*); a condition with no label gives 0 (kept in the mean); the mean runs over every
  attribute of the object.
* **CDS** (:func:`cds_released`): the label counts of each (attribute, group) are *pooled over
  objects*, attributes keyed by the released cleaned column name (:func:`released_attribute`),
  only the released scripts' eight groups (:data:`RELEASED_GROUPS`), base-2 JS divergence, mean
  over unordered group pairs; a dimension with < 2 groups gives 0.
* **VAC** (:func:`vac_released`): per object, the mean of the concentration scores that are
  ``>= 0.05`` among: every attribute of the base condition, and the *product* attributes (not
  ``background_*``) of every demographic group (original prompts); 0 when none is.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: labels of one condition's images: attribute -> one label per image (None: no valid answer)
Labels = Mapping[str, Sequence[str | None]]


def distributions(
    *samples: Sequence[str | None],
) -> tuple[list[str], list[np.ndarray]]:
    """The union support (sorted) and each sample's empirical distribution on it.

    Missing labels (None) are left out; a sample with no label gives an all-zero vector.
    """
    support = sorted({x for s in samples for x in s if x is not None})
    index = {v: i for i, v in enumerate(support)}
    out = []
    for s in samples:
        counts = np.zeros(len(support))
        for x in s:
            if x is not None:
                counts[index[x]] += 1
        total = counts.sum()
        out.append(counts / total if total else counts)
    return support, out


def _log(x: np.ndarray, base: float) -> np.ndarray:
    return np.log(x) / np.log(base)


def entropy(p: np.ndarray, base: float = 2.0) -> float:
    """Shannon entropy of a distribution (0 log 0 = 0)."""
    p = np.asarray(p, dtype=np.float64)
    nz = p > 0
    return float(-(p[nz] * _log(p[nz], base)).sum())


def js(p: np.ndarray, q: np.ndarray, base: float = 2.0, distance: bool = False) -> np.ndarray:
    """Jensen-Shannon divergence (or its square root) of ``p`` and ``q`` along the last axis.

    Rows are normalised to sum to 1 first (an all-zero row gives NaN).
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = p / p.sum(axis=-1, keepdims=True)
        q = q / q.sum(axis=-1, keepdims=True)
        m = (p + q) / 2
        kl_p = np.where(p > 0, p * _log(np.where(p > 0, p, 1) / np.where(m > 0, m, 1), base), 0)
        kl_q = np.where(q > 0, q * _log(np.where(q > 0, q, 1) / np.where(m > 0, m, 1), base), 0)
    d = np.clip((kl_p.sum(axis=-1) + kl_q.sum(axis=-1)) / 2, 0.0, None)
    return np.sqrt(d) if distance else d


@dataclass(frozen=True)
class JSSettings:
    """How JS is taken: the log base and whether the divergence or its square root.

    ``floor > 0`` is the released code's arithmetic: each distribution is counts over *all* the
    sample's images (missing labels count in the total), its zero entries raised to ``floor``,
    then renormalised; and a sample with no label gives JS 0 (kept in a mean), not NaN.
    """

    base: float = 2.0
    distance: bool = False
    floor: float = 0.0


#: base-2 Jensen-Shannon divergence (the default of every metric)
DEFAULT_JS = JSSettings()
#: the released BDS (``analysis_js.py``): natural-log JS distance, zeros floored at 1e-10
RELEASED_JS = JSSettings(base=float(np.e), distance=True, floor=1e-10)


def _floored(counts: np.ndarray, total: np.ndarray | float, floor: float) -> np.ndarray:
    """``counts / total`` with every entry raised to ``floor`` (the released JS's input)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.maximum(counts / total, floor)


def js_labels(a: Sequence[str | None], b: Sequence[str | None], s: JSSettings) -> float:
    """JS between the label distributions of two samples (NaN when either has no label;
    0 under the released arithmetic, ``s.floor > 0``)."""
    _, (p, q) = distributions(a, b)
    if not p.sum() or not q.sum():
        return 0.0 if s.floor > 0 else float("nan")
    if s.floor > 0:
        n_a = sum(x is not None for x in a)
        n_b = sum(x is not None for x in b)
        p = _floored(p * n_a, len(a), s.floor)
        q = _floored(q * n_b, len(b), s.floor)
    return float(js(p, q, s.base, s.distance))


def bds(base: Labels, group: Labels, s: JSSettings = DEFAULT_JS) -> float:
    """BDS: the mean over attributes of JS(base, group) (attributes of both; NaN ones skipped)."""
    vals = [js_labels(base[a], group[a], s) for a in sorted(set(base) & set(group))]
    vals = [v for v in vals if not np.isnan(v)]
    return float(np.mean(vals)) if vals else float("nan")


#: the groups the released analysis scripts tabulate (``bds_score.py``, ``cds_score.py``), in
#: their spelling; its feature extraction files Latinx images under ``unknown``
RELEASED_GROUPS = (
    "young_adults",
    "middle_aged",
    "elderly",
    "men",
    "women",
    "white",
    "black",
    "asian",
)


def released_group(group: str) -> str:
    """A protocol group in the released scripts' spelling (``middle-aged`` -> ``middle_aged``)."""
    return group.strip().lower().replace("-", "_").replace(" ", "_")


def released_attribute(attribute: str) -> str:
    """The attribute name the released ``cds_score.py`` pools under.

    The released feature table names a product attribute ``product_<name>`` and a background
    one ``background_<name>`` (here: an attribute whose name starts with ``background_``);
    ``cds_score.py`` then strips ``product_product_``, else ``product_``, else every
    ``background_`` (``str.replace``) -- so ``product_color`` and ``background_color`` are
    both pooled as ``color``, as in the released code.
    """
    background = attribute.startswith("background_")
    col = f"background_{attribute}" if background else f"product_{attribute}"
    if col.startswith("product_product_"):
        return col.replace("product_product_", "")
    if col.startswith("product_"):
        return col.replace("product_", "")
    return col.replace("background_", "")


def is_product_attribute(attribute: str) -> bool:
    """A product attribute (the released VAC's ``product_`` columns), not a background one."""
    return not attribute.startswith("background_")


def cds_released(
    groups: Mapping[str, Sequence[Labels]],
) -> dict[str, float]:
    """The released CDS of one dimension: released attribute name -> mean pairwise JS.

    ``groups``: group -> the labels of that group's images, one :data:`Labels` per object. The
    label counts are pooled over the objects by :func:`released_attribute`; groups outside
    :data:`RELEASED_GROUPS` are left out; JS is the base-2 divergence of the pooled counts; an
    attribute with fewer than two groups with labels gives 0.0.
    """
    pooled: dict[str, dict[str, dict[str, int]]] = {}
    for g in groups:
        if released_group(g) not in RELEASED_GROUPS:
            continue
        for labels in groups[g]:
            for a, values in labels.items():
                counts = pooled.setdefault(released_attribute(a), {}).setdefault(g, {})
                for v in values:
                    if v is not None:
                        counts[v] = counts.get(v, 0) + 1
    out: dict[str, float] = {}
    for attr in sorted(pooled):
        dists = {g: c for g, c in pooled[attr].items() if sum(c.values()) > 0}
        vals = []
        for g, h in itertools.combinations(sorted(dists), 2):
            support = sorted(set(dists[g]) | set(dists[h]))
            p = np.array([dists[g].get(v, 0) for v in support], dtype=np.float64)
            q = np.array([dists[h].get(v, 0) for v in support], dtype=np.float64)
            vals.append(float(js(p, q, 2.0, False)))
        out[attr] = float(np.mean(vals)) if vals else 0.0
    return out


def vac_released(base: Labels, groups: Sequence[Labels], threshold: float = 0.05) -> float:
    """The released per-object VAC (``vac_score.py``): the mean of the concentration scores
    ``>= threshold`` of every base attribute and of every group's product attributes."""
    scores = [concentration(v) for v in base.values()]
    for labels in groups:
        scores += [concentration(v) for a, v in labels.items() if is_product_attribute(a)]
    kept = [x for x in scores if not np.isnan(x) and x >= threshold]
    return float(np.mean(kept)) if kept else 0.0


def cds_per_attribute(
    groups: Mapping[str, Labels], attribute: str, s: JSSettings = DEFAULT_JS
) -> float:
    """The mean JS over unordered pairs of ``groups`` for one attribute (Table 3's cells)."""
    vals = [
        js_labels(groups[g][attribute], groups[h][attribute], s)
        for g, h in itertools.combinations(sorted(groups), 2)
    ]
    vals = [v for v in vals if not np.isnan(v)]
    return float(np.mean(vals)) if vals else float("nan")


def cds(groups: Mapping[str, Labels], s: JSSettings = DEFAULT_JS) -> float:
    """CDS of one dimension: the mean over attributes of :func:`cds_per_attribute`."""
    attrs = sorted(set.intersection(*(set(v) for v in groups.values())))
    vals = [cds_per_attribute(groups, a, s) for a in attrs]
    vals = [v for v in vals if not np.isnan(v)]
    return float(np.mean(vals)) if vals else float("nan")


def concentration(labels: Sequence[str | None], k_options: int | None = None) -> float:
    """``1 - H / H_max`` of one label sample (``H_max = log k``; one value gives 1.0)."""
    _, (p,) = distributions(labels)
    k = k_options if k_options is not None else int((p > 0).sum())
    if not p.sum():
        return float("nan")
    if k <= 1:
        return 1.0
    return float(1.0 - entropy(p, 2.0) / np.log2(k))


def vac(labels: Labels, k_options: Mapping[str, int] | None = None) -> float:
    """VAC of one condition: the mean over attributes of :func:`concentration`."""
    vals = [
        concentration(labels[a], (k_options or {}).get(a) if k_options else None)
        for a in sorted(labels)
    ]
    vals = [v for v in vals if not np.isnan(v)]
    return float(np.mean(vals)) if vals else float("nan")


def _onehot(labels: Sequence[str | None]) -> np.ndarray:
    support = sorted({x for x in labels if x is not None})
    index = {v: i for i, v in enumerate(support)}
    x = np.zeros((len(labels), max(1, len(support))))
    for i, v in enumerate(labels):
        if v is not None:
            x[i, index[v]] = 1.0
    return x


def permutation_seed(seed: int, *parts: str) -> int:
    """A 64-bit seed from ``seed`` and ``parts`` (the same test gets the same shuffles)."""
    h = hashlib.sha256("\x1f".join([str(seed), *parts]).encode()).digest()
    return int.from_bytes(h[:8], "big")


def split_masks(n: int, n_group: int, n_perm: int, seed: int) -> np.ndarray:
    """``n_perm`` random splits of ``n`` pooled images: 1.0 marks the ``n_group`` group ones."""
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((n_perm, n)), axis=1)
    masks = np.zeros((n_perm, n))
    np.put_along_axis(masks, order[:, :n_group], 1.0, axis=1)
    return masks


def null_bds(base: Labels, group: Labels, masks: np.ndarray, s: JSSettings) -> np.ndarray:
    """BDS of every split in ``masks`` (rows over the pooled images: base first, then group)."""
    attrs = sorted(set(base) & set(group))
    total = np.zeros(len(masks))
    used = np.zeros(len(masks))
    n_g = masks.sum(axis=1, keepdims=True)
    n_b = masks.shape[1] - n_g
    for a in attrs:
        x = _onehot(list(base[a]) + list(group[a]))
        valid = x.sum(axis=1)
        cg = masks @ x
        cb = x.sum(axis=0) - cg
        has = ((masks @ valid) > 0) & (((1 - masks) @ valid) > 0)
        if s.floor > 0:  # the released arithmetic: floored shares of all images; empty -> 0
            d = js(_floored(cb, n_b, s.floor), _floored(cg, n_g, s.floor), s.base, s.distance)
            d = np.where(has, d, 0.0)
            ok = np.ones(len(masks), dtype=bool)
        else:
            d = js(cb, cg, s.base, s.distance)
            ok = ~np.isnan(d) & has
        total += np.where(ok, d, 0.0)
        used += ok
    with np.errstate(invalid="ignore"):
        return total / np.where(used > 0, used, np.nan)


def permutation_test(
    base: Labels,
    group: Labels,
    n_perm: int = 10_000,
    seed: int = 0,
    s: JSSettings = DEFAULT_JS,
) -> tuple[float, float]:
    """``(BDS_obs, p)`` of the one-sided label-shuffling test of BDS(group) (module docstring).

    Images are pooled (each keeps all its attribute labels) and re-split ``n_perm`` times.
    """
    attrs = sorted(set(base) & set(group))
    n_b = len(base[attrs[0]]) if attrs else 0
    n_g = len(group[attrs[0]]) if attrs else 0
    observed = bds(base, group, s)
    if not attrs or not n_b or not n_g or np.isnan(observed):
        return observed, float("nan")
    null = null_bds(base, group, split_masks(n_b + n_g, n_g, n_perm, seed), s)
    exceed = int(np.sum(null >= observed - 1e-12))
    return observed, (1 + exceed) / (1 + n_perm)


@dataclass(frozen=True)
class PairedTest:
    """A paired t-test of a metric under two prompt variants."""

    n: int
    mean_original: float
    mean_mitigated: float
    change_pct: float  # mean of the per-pair changes, in percent of the original
    t: float
    pval: float


def mitigation_test(original: Sequence[float], mitigated: Sequence[float]) -> PairedTest:
    """``scipy.stats.ttest_rel(mitigated, original)`` and the mean per-pair percent change."""
    o = np.asarray(original, dtype=np.float64)
    m = np.asarray(mitigated, dtype=np.float64)
    if o.shape != m.shape or o.size < 2:
        raise ValueError("mitigation_test needs two equal-length samples of >= 2 pairs")
    res = stats.ttest_rel(m, o)
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(o != 0, (m - o) / o * 100.0, np.nan)
    return PairedTest(
        n=int(o.size),
        mean_original=float(o.mean()),
        mean_mitigated=float(m.mean()),
        change_pct=float(np.nanmean(pct)),
        t=float(res.statistic),
        pval=float(res.pvalue),
    )


def _onehot_on(labels: Sequence[str | None], support: Sequence[str]) -> np.ndarray:
    """One row per image, one column per value of ``support`` (a missing label: all zeros)."""
    index = {v: i for i, v in enumerate(support)}
    x = np.zeros((len(labels), max(1, len(support))))
    for i, v in enumerate(labels):
        if v is not None:
            x[i, index[v]] = 1.0
    return x


def swap_counts(
    original: Labels,
    mitigated: Labels,
    support: Mapping[str, Sequence[str]],
    n_perm: int,
    seed: int,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Label counts of one prompt's original and mitigated images, as observed (row 0) and
    under ``n_perm`` seeded re-splits of the pooled images: ``(original, mitigated)``, each
    attribute -> ``(n_perm + 1, k)`` counts on ``support[attribute]`` (one support per
    attribute, shared by every condition compared).

    Each image keeps all its labels (missing ones too) and both sizes are kept. (Re-splitting
    within missingness patterns, to keep each prompt's labelled images per attribute, was
    measured too: no closer to the level on the planted designs, and less power.)
    """
    attrs = sorted(set(original) & set(mitigated) & set(support))
    if not attrs:
        return {}, {}
    n_o, n_m = len(original[attrs[0]]), len(mitigated[attrs[0]])
    observed = np.r_[np.zeros(n_o), np.ones(n_m)][None, :]
    masks = np.vstack([observed, split_masks(n_o + n_m, n_m, n_perm, seed)])
    out_o: dict[str, np.ndarray] = {}
    out_m: dict[str, np.ndarray] = {}
    for a in attrs:
        x = _onehot_on(list(original[a]) + list(mitigated[a]), support[a])
        out_m[a] = masks @ x
        out_o[a] = x.sum(axis=0) - out_m[a]
    return out_o, out_m


def cds_counts(
    groups: Mapping[str, Mapping[str, np.ndarray]], s: JSSettings = DEFAULT_JS
) -> np.ndarray:
    """CDS of every row of label counts: group -> attribute -> ``(rows, k)`` counts (one
    support per attribute). Row by row it equals :func:`cds` of the labels behind it: the
    attributes every group has a label for, the mean JS over group pairs, the mean over those
    attributes (NaN when none). Only the plain divergence/distance (``s.floor == 0``)."""
    if s.floor > 0:
        raise ValueError("cds_counts: the floored (released) JS is not supported")
    attrs = sorted(set.intersection(*(set(v) for v in groups.values())))
    names = sorted(groups)
    rows = next(iter(groups[names[0]].values())).shape[0] if attrs else 0
    total = np.zeros(rows)
    used = np.zeros(rows)
    first, second = np.array(list(itertools.combinations(range(len(names)), 2))).T
    for a in attrs:
        c = np.stack([groups[g][a] for g in names])  # (groups, rows, k)
        has = np.all(c.sum(axis=-1) > 0, axis=0)
        pairs = js(c[first], c[second], s.base, s.distance)  # (pairs, rows)
        total += np.where(has, pairs.mean(axis=0), 0.0)
        used += has
    with np.errstate(invalid="ignore"):
        return total / np.where(used > 0, used, np.nan)


def vac_counts(counts: Mapping[str, np.ndarray]) -> np.ndarray:
    """VAC of every row of label counts (attribute -> ``(rows, k)``): row by row it equals
    :func:`vac` of the labels behind it (``H_max`` = log of the observed values)."""
    if not counts:
        return np.zeros(0)
    width = max(c.shape[-1] for c in counts.values())
    rows = next(iter(counts.values())).shape[0]
    c = np.zeros((len(counts), rows, width))  # zero columns change neither H nor k
    for i, a in enumerate(sorted(counts)):
        c[i, :, : counts[a].shape[-1]] = counts[a]
    tot = c.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = c / tot
        h = -np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0).sum(axis=-1)
        k = (c > 0).sum(axis=-1)
        conc = np.where(k <= 1, 1.0, 1.0 - h / np.log2(np.maximum(k, 2)))
    stack = np.where(tot[..., 0] > 0, conc, np.nan)
    ok = ~np.isnan(stack)
    with np.errstate(invalid="ignore"):
        return np.where(ok, stack, 0.0).sum(axis=0) / np.where(
            ok.any(axis=0), ok.sum(axis=0), np.nan
        )


def two_sided_permutation_p(statistic: np.ndarray) -> float:
    """Two-sided p of ``statistic[0]`` (observed) against ``statistic[1:]`` (its permutation
    distribution): ``min(1, 2 min(p_upper, p_lower))`` with ``p = (1 + #) / (1 + n_perm)``;
    NaN rows of the null are left out."""
    obs = float(statistic[0])
    null = statistic[1:][~np.isnan(statistic[1:])]
    if np.isnan(obs) or not len(null):
        return float("nan")
    up = (1 + int(np.sum(null >= obs - 1e-12))) / (1 + len(null))
    lo = (1 + int(np.sum(null <= obs + 1e-12))) / (1 + len(null))
    return float(min(1.0, 2 * min(up, lo)))
