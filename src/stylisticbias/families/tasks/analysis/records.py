"""The task tables of a task protocol (REFLECT, VIGNETTE) built from the judge stage's task
records (:mod:`~stylisticbias.judge.protocol.tasks.records`). Which tables a protocol's tasks
make is its paradigm's (``paradigm:``; :mod:`stylisticbias.families.tasks.paradigm`):

* every pairwise task: the paradigm's pairwise tables (REFLECT: ``reflect_win_rates``,
  ``reflect_win_matrix`` and ``task_position_bias``; VIGNETTE: position bias only);
* every ``choice_k`` task: ``reflect_mcq_distribution`` and ``reflect_mcq_gaps`` (option values
  from the protocol, 1..k where it gives none); every ``numeric`` task: ``reflect_salary_gaps``
  and ``reflect_salary_tests``; the reference group is :data:`REF` when judged, else the first;
* a paradigm with selection tables (VIGNETTE): its stereotyping tasks (``fields`` with
  ``term``) make ``vignette_selection``, ``vignette_log_odds``, ``vignette_pair_comp`` over all
  terms and ``vignette_polarity`` per trait pair; every ``text_only`` task against its image
  twin (the paradigm's rule): ``vignette_text_vs_image``.

Tables of one name from several tasks are stacked (their ``scenario_id`` tells them apart).
"""

from __future__ import annotations

import logging
from collections import defaultdict

import pandas as pd

from stylisticbias.benchmark import Benchmark, TaskScenario
from stylisticbias.families.tasks.analysis import tables as tt
from stylisticbias.families.tasks.analysis import vignette_tables as vt
from stylisticbias.family import family_of

log = logging.getLogger(__name__)

#: the reference group of the gap tables when judged
REF = "white-female"


def _pair_answers(rec: pd.DataFrame) -> pd.DataFrame:
    """The long answer table of a pairwise task, with the recorded positions: ``left_id`` (the
    image on the left / in slot 1 as asked) and ``chosen_id`` (the image of the identity
    chosen; empty for an invalid answer)."""
    ids = rec["image_ids"].str.split("|", n=1, expand=True).reindex(columns=[0, 1])
    chosen = ids[0].where(rec["outcome"] == "first", ids[1].where(rec["outcome"] == "second"))
    out = rec.rename(columns={"outcome": "choice"})[
        ["unit", "first", "second", "variant", "choice", "left_id"]
    ].assign(chosen_id=chosen.fillna("").to_numpy())
    return out.reset_index(drop=True)


def _options(rec: pd.DataFrame, activity: str) -> pd.DataFrame:
    """One row per (valid answer, identity shown): was that identity selected?"""
    valid = rec[rec["outcome"] != "invalid"]
    a = pd.DataFrame(
        {
            "unit": valid["unit"],
            "identity": valid["first"],
            "partner": valid["second"],
            "activity": activity,
            "selected": valid["outcome"] == "first",
        }
    )
    b = pd.DataFrame(
        {
            "unit": valid["unit"],
            "identity": valid["second"],
            "partner": valid["first"],
            "activity": activity,
            "selected": valid["outcome"] == "second",
        }
    )
    return pd.concat([a, b], ignore_index=True)


def _field(sc: TaskScenario, key: str) -> str | None:
    return dict(sc.fields).get(key)


def task_tables_from_records(
    records: pd.DataFrame,
    benchmark: Benchmark,
    model: str,
    *,
    n_boot: int = 500,
    seed: int = 0,
    simulated: bool = False,
    paper_tests: bool = False,
) -> dict[str, pd.DataFrame]:
    """Every task table of one model's records (see the module doc). ``paper_tests``
    (``analysis.definitions: official``): the papers' pooled tests in the tested tables
    (``test`` column) instead of the clustered ones, and no pooled salary row."""
    kw = {"n_boot": n_boot, "seed": seed, "simulated": simulated}
    salaries: list[tuple[int, pd.DataFrame]] = []
    parts: dict[str, list[pd.DataFrame]] = defaultdict(list)
    groups = sorted(set(records["first"]))
    ref = REF if REF in groups else groups[0]
    by_id = {int(k): g for k, g in records.groupby("task_id")}
    paradigm = family_of(benchmark).paradigm(benchmark.paradigm)
    terms: list[pd.DataFrame] = []
    valence: dict[str, dict[str, pd.DataFrame]] = defaultdict(dict)
    for sc in benchmark.tasks:
        rec = by_id.get(int(sc.id))
        if rec is None or rec.empty:
            continue
        if sc.task == "pairwise":
            tabs = tt.pairwise_tables(_pair_answers(rec), model, sc.id, **kw)
            for name, df in tabs.items():
                if name in paradigm.pairwise_tables:
                    parts[name].append(df)
            term = _field(sc, "term") if paradigm.selection_tables else None
            if term:
                opts = _options(rec, term)
                terms.append(opts)
                valence[_field(sc, "pair") or term][_field(sc, "valence") or "high"] = opts
        elif sc.task == "choice_k":
            df = pd.DataFrame(
                {"unit": rec["unit"], "group": rec["first"], "choice": rec["outcome"]}
            )
            values = [
                float(o.value) if o.value is not None else float(i + 1)
                for i, o in enumerate(sc.options)
            ]
            for name, t in tt.mcq_tables(
                df, model, sc.id, sc.labels, values, ref, paper_tests=paper_tests, **kw
            ).items():
                parts[name].append(t)
        elif sc.task == "numeric":
            df = pd.DataFrame({"unit": rec["unit"], "group": rec["first"], "value": rec["value"]})
            salaries.append((int(sc.id), df))
            for name, t in tt.salary_tables(
                df, model, sc.id, ref, paper_tests=paper_tests, **kw
            ).items():
                parts[name].append(t)
        elif sc.task == "text_only" and paradigm.image_twin is not None:
            image_task = paradigm.image_twin(sc, benchmark)
            img = by_id.get(int(image_task.id)) if image_task else None
            if img is not None:
                act = _field(sc, "activity") or ""
                parts["vignette_text_vs_image"].append(
                    tt.text_vs_image_table(
                        _options(img, act),
                        _options(rec, act),
                        model,
                        image_task.id,  # type: ignore[union-attr]
                        simulated=simulated,
                        paper_tests=paper_tests,
                    )
                )
    if terms:
        first_term = min(sc.id for sc in benchmark.tasks if _field(sc, "term"))
        for name, t in tt.vignette_tables(
            pd.concat(terms), model, first_term, paper_tests=paper_tests, **kw
        ).items():
            parts[name].append(t)
        counts = [
            tt.polarity_counts(by_val["high"], by_val["low"], pair)
            for pair, by_val in valence.items()
            if {"high", "low"} <= set(by_val)
        ]
        if counts:
            parts["vignette_polarity"].append(
                tt.polarity_table(pd.concat(counts), model, simulated=simulated)
            )
    if len(salaries) > 1 and not paper_tests:  # pooled over occupations (Table 3's row)
        parts["reflect_salary_tests"].append(tt.salary_pooled_tests(salaries, model, ref, **kw))
    if paradigm.selection_tables:  # VIGNETTE's per-paradigm tables (vignette_tables.py)
        for name, rows in vt.paradigm_tables(
            records, benchmark, model, paradigm.image_twin, official=paper_tests
        ).items():
            cols = list(tt.TASK_REGISTRY[name].columns[:-1])
            df = pd.DataFrame(rows, columns=cols).assign(simulated=simulated)
            parts[name] = [tt.validate_task_table(name, df)]
    return {name: pd.concat(dfs, ignore_index=True) for name, dfs in parts.items()}


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def task_markdown(tables: dict[str, pd.DataFrame], benchmark: Benchmark, max_rows: int = 12) -> str:
    """The report section of a task protocol: one markdown table per task table (its first
    ``max_rows`` rows; the CSV beside it has them all)."""
    lines = [f"## Task protocol: {benchmark.name}", ""]
    if any(bool(df["simulated"].any()) for df in tables.values() if "simulated" in df):
        lines += [
            "*Simulated judge (planted effects): these numbers check the pipeline, "
            "they are not findings about any model.*",
            "",
        ]
    for name in sorted(tables):
        df = tables[name]
        lines += [f"### {name} ({len(df)} rows; `{name}.csv`)", ""]
        cols = [c for c in df.columns if c != "simulated"]
        lines.append("| " + " | ".join(cols) + " |")
        lines.append("|" + "---|" * len(cols))
        for row in df[cols].head(max_rows).itertuples(index=False):
            lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
        lines.append("")
    return "\n".join(lines)


def task_fit(scores: pd.DataFrame, alpha: float = 0.01) -> dict[str, object]:
    """Do a simulated judge's answers follow the exact distributions its records carry?

    ``scores``: one model's task scores (``task_id``, ``group``, ``outcome``, ``count``,
    ``mass``; :func:`stylisticbias.scores.task_scores`). Per task with exact distributions, the
    Pearson statistic over its (group, outcome) cells with expected count ``mass`` and
    ``n_groups * (k - 1)`` degrees of freedom. The records' distributions differ row by row
    (pairs, orders), so the cell counts are Poisson-binomial, less variable than multinomial:
    the test is conservative. Free-number tasks (no distribution) are counted, not tested.
    """
    from scipy.stats import chi2

    tested = scores[scores["mass"].notna()]
    per_task = {}
    for tid, g in tested.groupby("task_id"):
        g = g[g["mass"] > 0]
        stat = float((((g["count"] - g["mass"]) ** 2) / g["mass"]).sum())
        dof = int(sum(len(x) - 1 for _, x in g.groupby("group")))
        per_task[str(int(tid))] = {"chi2": stat, "dof": dof, "pval": float(chi2.sf(stat, dof))}
    pvals = [v["pval"] for v in per_task.values()]
    return {
        "n_tasks_tested": len(per_task),
        "n_tasks_free_number": int(scores.loc[scores["mass"].isna(), "task_id"].nunique()),
        "n_rejected": sum(p < alpha for p in pvals),
        "alpha": alpha,
        "min_pval": min(pvals) if pvals else None,
        "tasks": per_task,
    }
