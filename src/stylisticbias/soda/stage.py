"""The ``soda`` stage: audit a generator the SODA way -> ``<paths.soda>/``.

1. **Images**: every (object, prompt condition) of the protocol -- the base prompt, each
   demographic group, and each group under the mitigation suffix -- gets ``images_per_prompt``
   images, written to ``images/`` with a manifest: from the offline stand-in (:mod:`~.demo`,
   ``soda.generator: standin``), or from the configured text-to-image generator
   (``soda.generator: configured``: diffusers or Gemini, each SODA prompt sent verbatim through
   its ``generate_faces``, one seed per image; a refused or blocked image is kept in the
   manifest with its reason and left out of the labelling).
2. **Attribute discovery** (SODA phase 1): the annotator is asked the free question on
   ``discovery_per_condition`` images of each condition; the attributes and values it names
   (the union of its valid answers per object) become the labelling questions.
3. **Labelling** (phase 2): one categorical question per discovered attribute, and one per
   fixed attribute of the protocol (``fixed_attributes``: asked of every image whatever the
   discovery named, with the discovered values and then the protocol's options), through
   :func:`stylisticbias.annotate.run.annotate_items` (resumable, cached; invalid answers
   are kept in ``annotations/`` and leave that image's label out).
4. **Metrics** (:mod:`~.metrics`): BDS per (object, group) with its permutation p-value, CDS per
   (object, dimension) and attribute, VAC per (object, condition), the mitigation tests (the
   swap permutation test; ``official``: the paper's paired t-test) -- tables in ``tables/``
   (:data:`~.tables.SODA_TABLES`), ``metrics.json`` and ``README.md``.
   ``soda.definitions: official`` takes BDS with the released arithmetic, the mitigation's
   paired t-test, and adds the released CDS pooled over objects (``soda_cds_released``) and
   per-object VAC (``soda_vac_released``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stylisticbias.annotate.items import AnnotationItem
from stylisticbias.annotate.questions import Question
from stylisticbias.annotate.run import annotate_items, make_annotator
from stylisticbias.benchmark import slug
from stylisticbias.config import config_output, configured_annotator, project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.outputs import OutputLock, atomic_write_json, atomic_write_text
from stylisticbias.soda.demo import Planted, StandIn, load_planted
from stylisticbias.soda.metrics import (
    DEFAULT_JS,
    RELEASED_JS,
    JSSettings,
    Labels,
    cds,
    cds_counts,
    cds_per_attribute,
    cds_released,
    mitigation_test,
    permutation_seed,
    permutation_test,
    swap_counts,
    two_sided_permutation_p,
    vac,
    vac_counts,
    vac_released,
)
from stylisticbias.soda.protocol import BASE, Condition, SodaProtocol, load_soda
from stylisticbias.soda.tables import SODA_TABLES, empty, write_soda_table
from stylisticbias.spec import Config
from stylisticbias.spec.soda import SodaSpec

log = logging.getLogger(__name__)

DISCOVERY_TEXT = (
    'This image was generated for the prompt "{prompt}". Name the visual attributes of the '
    "{object} that could tell images of {object}s apart (colour, shape, text, background ...), "
    "each with the values it can take."
)


def _images(spec: SodaSpec, proto: SodaProtocol, stand: StandIn, out: Path) -> pd.DataFrame:
    rows = []
    for obj in spec.objects:
        for cond in proto.conditions(spec.mitigation):
            for i in range(int(spec.images_per_prompt)):
                truth = stand.draw(obj, cond, i)
                rel = f"images/{slug(obj)}/{slug(cond.id)}/{i:03d}.png"
                path = out / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                stand.render(truth).save(path, format="PNG", optimize=False)
                rows.append(
                    {
                        "image_id": f"{slug(obj)}-{slug(cond.id)}-{i:03d}",
                        "object": obj,
                        "condition": cond.id,
                        "dimension": cond.dimension,
                        "group": cond.group,
                        "variant": cond.variant,
                        "prompt": proto.prompt(obj, cond),
                        "path": rel,
                        **truth,
                    }
                )
    return pd.DataFrame(rows)


def configured_generator(config: Config) -> Any:
    """The ``generator:`` section's generator, refused unless it draws what a prompt says."""
    from hydra.utils import get_class

    from stylisticbias.dataset.rendering import generator_config, make_generator

    cfg = generator_config(config.generator)
    target = str(cfg["_target_"])
    try:
        cls = get_class(target)
    except Exception as exc:
        raise StylisticBiasError(f"generator._target_={target!r} does not import: {exc}") from exc
    if not getattr(cls, "text_to_image", False):
        raise StylisticBiasError(
            f"soda.generator=configured needs a text-to-image generator; generator._target_="
            f"{target!r} draws faces whatever the prompt (choose generator=diffusers or "
            "generator=gemini, or soda.generator=standin)"
        )
    return make_generator(cfg)


def _generated_images(
    spec: SodaSpec, proto: SodaProtocol, generator: Any, out: Path
) -> pd.DataFrame:
    """Every (object, condition, i) image from ``generator.generate_faces`` (prompt verbatim)."""
    from stylisticbias.generators.base import FaceSpec

    wanted = []
    for obj in spec.objects:
        for cond in proto.conditions(spec.mitigation):
            for i in range(int(spec.images_per_prompt)):
                image_id = f"{slug(obj)}-{slug(cond.id)}-{i:03d}"
                seed = permutation_seed(int(spec.seed), "image", str(obj), cond.id, str(i))
                req = FaceSpec(image_id, "", "", "", "", seed % 2**31, proto.prompt(obj, cond))
                wanted.append((obj, cond, i, req))
    size = max(1, int(getattr(generator, "batch_size", 1)))
    results = []
    for k in range(0, len(wanted), size):
        results += generator.generate_faces([w[3] for w in wanted[k : k + size]])
    ext = str(getattr(generator, "file_format", "png"))
    rows = []
    for (obj, cond, i, req), res in zip(wanted, results, strict=True):
        rel = f"images/{slug(obj)}/{slug(cond.id)}/{i:03d}.{ext}"
        if res.status == "ok" and res.image is not None:
            path = out / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            res.image.save(path, **dict(getattr(generator, "save_kwargs", {}) or {}))
        rows.append(
            {
                "image_id": req.face_id,
                "object": obj,
                "condition": cond.id,
                "dimension": cond.dimension,
                "group": cond.group,
                "variant": cond.variant,
                "prompt": req.prompt,
                "seed": req.seed,
                "status": res.status,
                "reason": res.reason,
                "path": rel if res.status == "ok" else None,
            }
        )
    return pd.DataFrame(rows)


def _discovery(
    spec: SodaSpec, images: pd.DataFrame, planted: Planted, annotator: Any, out: Path
) -> dict[str, dict[str, list[str]]]:
    """object -> attribute -> values named by the annotator (union of its valid answers)."""
    k = int(spec.discovery_per_condition)
    sample = images[images["variant"] == "original"].groupby(["object", "condition"]).head(k)
    truth = [{"attribute": a, "values": list(v)} for a, v in planted.attributes.items()]
    items = [
        AnnotationItem(
            image_id=r["image_id"],
            path=str(out / r["path"]),
            questions=(
                Question(
                    "discover",
                    "free",
                    DISCOVERY_TEXT.format(prompt=r["prompt"], object=r["object"]),
                ),
            ),
            truth={"discover": truth},
        )
        for r in sample.to_dict("records")
    ]
    table = annotate_items(annotator, items, out / "annotations" / "discovery", 64)
    found: dict[str, dict[str, list[str]]] = {}
    obj_of = dict(zip(images["image_id"], images["object"]))
    for r in table[table["valid"]].itertuples():
        attrs = found.setdefault(obj_of[r.image_id], {})
        for entry in json.loads(r.answer):
            vals = attrs.setdefault(str(entry["attribute"]), [])
            vals.extend(v for v in entry["values"] if v not in vals)
    return found


def questioned_attributes(
    discovered: dict[str, list[str]], fixed: dict[str, tuple[str, ...]] | Any
) -> dict[str, list[str]]:
    """attribute -> options asked of an object's images: the discovered attributes with >= 2
    values, and every fixed attribute (its discovered values first, then the protocol's)."""
    attrs = {a: list(v) for a, v in discovered.items() if len(v) >= 2}
    for a, options in fixed.items():
        vals = list(discovered.get(a, []))
        attrs[a] = vals + [v for v in options if v not in vals]
    return attrs


def _labels(
    images: pd.DataFrame,
    discovered: dict[str, dict[str, list[str]]],
    annotator: Any,
    out: Path,
    fixed: dict[str, tuple[str, ...]] | Any = (),
) -> pd.DataFrame:
    """images with one label column per attribute (None where the answer was invalid)."""
    items = []
    for r in images.to_dict("records"):
        attrs = questioned_attributes(discovered.get(r["object"], {}), dict(fixed or {}))
        qs = tuple(
            Question(
                a,
                "categorical",
                f"Which {a.replace('_', ' ')} does the {r['object']} in this image have?",
                tuple(vals),
            )
            for a, vals in sorted(attrs.items())
            if len(vals) >= 2
        )
        truth = {a: r[a] for a in attrs if a in r}
        items.append(AnnotationItem(r["image_id"], str(out / r["path"]), qs, truth=truth))
    table = annotate_items(annotator, items, out / "annotations" / "labels", 256)
    labels = images.set_index("image_id")[
        ["object", "condition", "dimension", "group", "variant"]
    ].copy()
    for q, rows in table.groupby("question_id"):
        ans = rows.set_index("image_id")["answer"]
        labels[f"label:{q}"] = ans.map(lambda a: json.loads(a) if isinstance(a, str) else None)
    return labels.reset_index()


def _sample(labels: pd.DataFrame, cols: list[str] | None = None) -> Labels:
    """attribute -> labels of ``labels``' images: the label columns with a label, or ``cols``."""
    if cols is None:
        cols = [c for c in labels.columns if c.startswith("label:") and labels[c].notna().any()]
    return {
        c.removeprefix("label:"): [None if pd.isna(x) else str(x) for x in labels[c]] for c in cols
    }


def soda_metrics(
    labels: pd.DataFrame,
    proto: SodaProtocol,
    spec: SodaSpec,
    planted: Planted | None = None,
) -> dict[str, pd.DataFrame]:
    """The SODA tables from the labelled images (see the module docstring).

    ``spec.definitions == "official"``: BDS (and its permutation test) with :data:`RELEASED_JS`
    over every attribute of the object, CDS per object with the released base-2 divergence, the
    mitigation's paired t-test (``paper``: the swap permutation test, :func:`mitigation_table`),
    and the released tables ``soda_cds_released`` / ``soda_vac_released`` (empty otherwise).
    """
    official = getattr(spec, "definitions", "paper") == "official"
    s = RELEASED_JS if official else JSSettings(float(spec.js_base), bool(spec.js_distance))
    s_cds = DEFAULT_JS if official else s
    bds_rows, cds_rows, vac_rows, vac_rel = [], [], [], []
    pooled: dict[str, dict[str, dict[str, list[Labels]]]] = {}
    samples: dict[str, dict[str, Labels]] = {}
    for obj, rows in labels.groupby("object", sort=True):
        # official: every attribute of the object, in every condition (the released table's
        # columns); paper: the attributes a condition has labels for
        cols = (
            [c for c in rows.columns if c.startswith("label:") and rows[c].notna().any()]
            if official
            else None
        )
        by_cond = {c: _sample(g, cols) for c, g in rows.groupby("condition", sort=True)}
        samples[str(obj)] = by_cond
        n_by = rows.groupby("condition").size().to_dict()
        base = by_cond[BASE]
        for dim, groups in proto.dimensions.items():
            for group in groups:
                cid = Condition(dim, group).id
                obs, p = permutation_test(
                    base,
                    by_cond[cid],
                    int(spec.n_perm),
                    permutation_seed(int(spec.seed), str(obj), cid),
                    s,
                )
                bds_rows.append(
                    {
                        "object": obj,
                        "dimension": dim,
                        "group": group,
                        "bds": obs,
                        "pval": p,
                        "significant": bool(p < float(spec.alpha)),
                        "n_base": n_by[BASE],
                        "n_group": n_by[cid],
                        "planted_shift": bool(planted.is_shifted(group)) if planted else False,
                    }
                )
            variants = ["original"] + ([spec.mitigation] if spec.mitigation else [])
            for variant in variants:
                gs = {g: by_cond[Condition(dim, g, variant).id] for g in groups}
                attrs = sorted(set.intersection(*(set(v) for v in gs.values())))
                key = {"object": obj, "dimension": dim, "variant": variant}
                for a in attrs:
                    cds_rows.append({**key, "attribute": a, "cds": cds_per_attribute(gs, a, s_cds)})
                cds_rows.append({**key, "attribute": "all", "cds": cds(gs, s_cds)})
                for g in groups:
                    pooled.setdefault(dim, {}).setdefault(variant, {}).setdefault(g, [])
                    pooled[dim][variant][g].append(gs[g])
        for cond, lab in by_cond.items():
            vac_rows.append({"object": obj, "condition": cond, "vac": vac(lab), "n": n_by[cond]})
        if official:
            groups_orig = [
                by_cond[Condition(d, g).id] for d, gs_ in proto.dimensions.items() for g in gs_
            ]
            vac_rel.append({"object": obj, "vac": vac_released(by_cond[BASE], groups_orig)})
    cds_rel = []
    if official:
        for dim, variants in pooled.items():
            for variant, gl in variants.items():
                for attr, value in cds_released(gl).items():
                    cds_rel.append(
                        {"dimension": dim, "variant": variant, "attribute": attr, "cds": value}
                    )

    def frame(name: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
        return pd.DataFrame(rows, columns=list(SODA_TABLES[name][1].columns))

    tables = {
        "soda_bds": frame("soda_bds", bds_rows),
        "soda_cds": frame("soda_cds", cds_rows),
        "soda_vac": frame("soda_vac", vac_rows),
        "soda_cds_released": frame("soda_cds_released", cds_rel),
        "soda_vac_released": frame("soda_vac_released", vac_rel),
    }
    tables["soda_mitigation"] = mitigation_table(
        tables, proto, spec, None if official else samples, s_cds
    )
    return tables


#: ``soda_mitigation.test``: the default (``paper`` definitions) and the paper's (``official``)
MITIGATION_TESTS = {
    "paper": "swap permutation: images re-split between the original and the mitigated prompt "
    "of each (object, group), sizes kept; two-sided p of the mean change",
    "official": "paired t-test over the rows' pairs (paper Sec. 5.5)",
}


def _swapped(
    samples: dict[str, dict[str, Labels]],
    proto: SodaProtocol,
    spec: SodaSpec,
    s: JSSettings,
) -> tuple[dict[tuple[str, str], np.ndarray], dict[tuple[str, str], np.ndarray]]:
    """CDS per (object, dimension) and VAC per (object, group condition) of the mitigated
    minus the original prompt: row 0 observed, then ``spec.n_perm`` swaps (seeded)."""
    mit = str(spec.mitigation)
    d_cds: dict[tuple[str, str], np.ndarray] = {}
    d_vac: dict[tuple[str, str], np.ndarray] = {}
    for obj, by_cond in samples.items():
        support: dict[str, list[str]] = {}
        for lab in by_cond.values():
            for a, vals in lab.items():
                support.setdefault(a, [])
                support[a] = sorted(set(support[a]) | {v for v in vals if v is not None})
        for dim, groups in proto.dimensions.items():
            counts: dict[str, dict[str, dict[str, np.ndarray]]] = {"o": {}, "m": {}}
            for g in groups:
                cid = Condition(dim, g).id
                mid = Condition(dim, g, mit).id
                if cid not in by_cond or mid not in by_cond:
                    continue
                co, cm = swap_counts(
                    by_cond[cid],
                    by_cond[mid],
                    support,
                    int(spec.n_perm),
                    permutation_seed(int(spec.seed), "mitigation", obj, cid),
                )
                counts["o"][g], counts["m"][g] = co, cm
                d_vac[(obj, cid)] = vac_counts(cm) - vac_counts(co)
            if len(counts["o"]) >= 2:
                d_cds[(obj, dim)] = cds_counts(counts["m"], s) - cds_counts(counts["o"], s)
    return d_cds, d_vac


def _swap_p(diffs: dict[Any, np.ndarray], units: list[Any]) -> float:
    """Two-sided swap-permutation p of the mean over ``units`` of their changes."""
    stack = np.vstack([diffs[u] for u in units if u in diffs])
    ok = ~np.isnan(stack)
    with np.errstate(invalid="ignore"):
        stat = np.where(ok, stack, 0.0).sum(axis=0) / ok.sum(axis=0)
    return two_sided_permutation_p(stat)


def mitigation_table(
    tables: dict[str, pd.DataFrame],
    proto: SodaProtocol,
    spec: SodaSpec,
    samples: dict[str, dict[str, Labels]] | None = None,
    s: JSSettings = DEFAULT_JS,
) -> pd.DataFrame:
    """CDS (pairs: object x dimension) per dimension and overall, and group VAC (pairs: object
    x group), under the original vs the mitigated prompt: the mean change, the paired t, and
    the p-value of the row's ``test`` (:data:`MITIGATION_TESTS`).

    With ``samples`` (object -> condition -> labels; the ``paper`` definitions) the p-value is
    the swap permutation test (``spec.n_perm`` re-splits, seeded): valid under the null that
    the mitigated prompt draws every object as the original one, whatever the images per
    prompt (a prompt refused more often gives fewer images and a larger expected CDS/VAC by
    chance alone, which the paired t-test reads as an effect). Without, the paper's paired
    t-test (``official``).
    """
    if not spec.mitigation:
        return empty("soda_mitigation")
    swapped = _swapped(samples, proto, spec, s) if samples is not None else None
    test = MITIGATION_TESTS["paper" if swapped is not None else "official"]
    rows = []
    c = tables["soda_cds"]
    c = c[c["attribute"] == "all"]
    wide = c.pivot_table(index=["object", "dimension"], columns="variant", values="cds")
    for dim in [*proto.dimensions, "all"]:
        sub = wide if dim == "all" else wide.xs(dim, level="dimension", drop_level=False)
        sub = sub.dropna()
        if len(sub) >= 2:
            res = mitigation_test(sub["original"].to_numpy(), sub[spec.mitigation].to_numpy())
            row = {"metric": "cds", "dimension": dim, "variant": spec.mitigation, **_res(res)}
            if swapped is not None:
                row["pval"] = _swap_p(swapped[0], [(str(o), str(d)) for o, d in sub.index])
            rows.append({**row, "test": test})
    v = tables["soda_vac"].copy()
    v = v[v["condition"] != BASE]
    v["variant"] = np.where(v["condition"].str.contains(r"\+"), spec.mitigation, "original")
    v["cid"] = v["condition"].str.split("+").str[0]
    wide = v.pivot_table(index=["object", "cid"], columns="variant", values="vac").dropna()
    if len(wide) >= 2:
        res = mitigation_test(wide["original"].to_numpy(), wide[spec.mitigation].to_numpy())
        row = {"metric": "vac", "dimension": "all", "variant": spec.mitigation, **_res(res)}
        if swapped is not None:
            row["pval"] = _swap_p(swapped[1], [(str(o), str(c)) for o, c in wide.index])
        rows.append({**row, "test": test})
    return pd.DataFrame(rows, columns=list(SODA_TABLES["soda_mitigation"][1].columns))


def _res(res: Any) -> dict[str, Any]:
    return {
        "n": res.n,
        "mean_original": res.mean_original,
        "mean_mitigated": res.mean_mitigated,
        "change_pct": res.change_pct,
        "t": res.t,
        "pval": res.pval,
    }


def summary(tables: dict[str, pd.DataFrame], spec: SodaSpec) -> dict[str, Any]:
    """Headline numbers: BDS per group, how many planted and null groups were significant."""
    b = tables["soda_bds"]
    out: dict[str, Any] = {"enabled": bool(spec.objects), "objects": list(spec.objects)}
    if b.empty:
        return out
    planted, null = b[b["planted_shift"]], b[~b["planted_shift"]]
    out.update(
        alpha=float(spec.alpha),
        n_perm=int(spec.n_perm),
        bds_by_group={g: float(x) for g, x in b.groupby("group")["bds"].mean().items()},
        planted_found=int(planted["significant"].sum()),
        planted_tests=len(planted),
        null_rejected=int(null["significant"].sum()),
        null_tests=len(null),
        vac_mean=float(tables["soda_vac"]["vac"].mean()),
    )
    if getattr(spec, "definitions", "paper") == "official":
        v = tables["soda_vac_released"]
        out.update(
            definitions="official",
            vac_released_mean=float(v["vac"].mean()) if len(v) else float("nan"),
        )
    m = tables["soda_mitigation"]
    if not m.empty:
        row = m[(m["metric"] == "cds") & (m["dimension"] == "all")]
        if len(row):
            out["mitigation_cds_change_pct"] = float(row["change_pct"].iloc[0])
            out["mitigation_cds_pval"] = float(row["pval"].iloc[0])
    return out


def _md(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.itertuples(index=False):
        cells = [f"{x:.4g}" if isinstance(x, float) else str(x) for x in r]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def readme(tables: dict[str, pd.DataFrame], summ: dict[str, Any], spec: SodaSpec) -> str:
    """``README.md`` of the audit."""
    head = "# SODA audit of the image generator"
    if not summ.get("enabled"):
        return f"{head}\n\nOff (`soda.objects: []`); `experiment=soda-demo` runs it.\n"
    b = tables["soda_bds"]
    by_group = (
        b.groupby(["dimension", "group"], sort=False)
        .agg(
            bds=("bds", "mean"),
            significant=("significant", "sum"),
            objects=("object", "count"),
            planted_shift=("planted_shift", "first"),
        )
        .reset_index()
    )
    banner = (
        "> **SIMULATED.** Images come from the offline stand-in with planted attribute "
        "distributions (`soda.planted`), labelled by the annotator "
        f"`{spec.annotator}`; the numbers test the metrics, not any real generator."
        if spec.generator == "standin"
        else f"Images from the configured generator, labelled by the annotator `{spec.annotator}`"
        f" ({summ.get('images_failed', 0)} not generated: `images.csv` says why)."
    )
    parts = [
        head,
        banner,
        f"BDS permutation tests ({spec.n_perm} shuffles, alpha {spec.alpha}): planted "
        f"differences found in {summ['planted_found']} of {summ['planted_tests']} tests; null "
        f"groups rejected in {summ['null_rejected']} of {summ['null_tests']}.",
        "## BDS per group (mean over objects; significant: objects with p < alpha)\n\n"
        + _md(by_group),
        "## CDS per dimension (over attributes)\n\n"
        + _md(
            tables["soda_cds"][tables["soda_cds"]["attribute"] == "all"]
            .groupby(["dimension", "variant"])["cds"]
            .mean()
            .reset_index()
        ),
        "## VAC per condition (mean over objects)\n\n"
        + _md(tables["soda_vac"].groupby("condition")["vac"].mean().reset_index()),
    ]
    if not tables["soda_cds_released"].empty:
        parts.append(
            "## Released definitions (`soda.definitions: official`)\n\nBDS above: the released "
            "natural-log JS distance. CDS pooled over objects (released `cds_score.py`):\n\n"
            + _md(tables["soda_cds_released"])
            + "\n\nVAC per object (released `vac_score.py`):\n\n"
            + _md(tables["soda_vac_released"])
        )
    if not tables["soda_mitigation"].empty:
        parts.append(
            "## Mitigation (p: the `test` column's; t: the paired t statistic)\n\n"
            + _md(tables["soda_mitigation"])
        )
    parts.append("Every table is in `tables/` (docs/soda.md explains each column).")
    return "\n\n".join(parts) + "\n"


def run_soda(config: Config) -> Path:
    """The ``soda`` stage (module docstring); returns ``<paths.soda>``."""
    spec = config.soda
    root = project_root()
    out = config_output(config, "soda")
    proto = load_soda(spec.protocol)
    unknown = sorted(set(spec.objects) - set(proto.objects))
    if unknown:
        raise StylisticBiasError(
            f"soda.objects: unknown {unknown}; valid: {', '.join(proto.objects)} ({proto.source})"
        )
    with OutputLock(root, out):
        out.mkdir(parents=True, exist_ok=True)
        (out / "tables").mkdir(exist_ok=True)
        planted = None
        failed = 0
        if spec.objects:
            planted = load_planted(root / spec.planted)
            if spec.generator == "configured":
                generator = configured_generator(config)
                try:
                    images = _generated_images(spec, proto, generator, out)
                finally:
                    generator.close()
                failed = int((images["status"] != "ok").sum())
                if failed:
                    log.warning(
                        "soda: %d image(s) not generated (kept in images.csv with the "
                        "reason; left out of the labelling)",
                        failed,
                    )
                usable = images[images["status"] == "ok"].reset_index(drop=True)
                truth = None
            else:
                stand = StandIn(planted, int(spec.seed), int(spec.image_size))
                images = usable = _images(spec, proto, stand, out)
                truth = planted
            annotator = make_annotator(configured_annotator(config, spec.annotator))
            try:
                discovered = _discovery(spec, usable, planted, annotator, out)
                labels = _labels(usable, discovered, annotator, out, proto.fixed_attributes)
            finally:
                annotator.close()
            images.to_csv(out / "images.csv", index=False, lineterminator="\n")
            tables = soda_metrics(labels, proto, spec, truth)
        else:
            tables = {name: empty(name) for name in SODA_TABLES}
        for name, df in tables.items():
            write_soda_table(name, df, out / "tables")
        summ = summary(tables, spec)
        if spec.objects:
            summ.update(generator=spec.generator, images_failed=failed)
        atomic_write_json(out / "metrics.json", summ)
        atomic_write_text(out / "README.md", readme(tables, summ, spec))
    log.info("soda: %s", {k: v for k, v in summ.items() if not isinstance(v, dict)})
    return out
