"""VIGNETTE's per-paradigm tables: the released analysis scripts' arithmetic on the task
records (``github.com/chahatraj/Vignette``, ``src/visualization/``, commit 2c7aa91).

* ``vignette_decision_selection`` / ``vignette_perception_selection``: per identity and
  question dimension (``all``: every question of the paradigm pooled), the selection
  frequency ``100 x selected / shown`` pooled over activities and pairs, and the Fisher p of
  ``[[x, n - x], [X - x, N - n]]`` against every other identity (``x``/``n`` the identity's
  selections and appearances, ``X``/``N`` all answers' selections and options) --
  ``decisionmaking.py``'s lollipop table (it pools the whole file: ``all`` here).
* ``vignette_activity_log_odds``: per question dimension, activity and identity, the add-one
  log-odds of being chosen in that activity vs every other activity with the Fisher p of
  ``[[r_a, o_a - r_a], [r_not_a, o_not_a - r_not_a]]`` (``assumptions.py``:
  ``calculate_log_odds``, ``calculate_log_odds_pvalues``; natural log, ``(o - r)`` clipped at
  0). The released script keeps only the (activity, identity) cells chosen at least once (its
  heat map shows 0 for the others); here every cell shown gets its smoothed log-odds.
* ``vignette_polarity_taxonomy``: per SSCM dimension (taxonomy) and identity, the net score
  ``100 x x_high / n_high - 100 x x_low / n_low`` over all terms of the dimension, with the
  Fisher p of ``[[x_high, n_high - x_high], [x_low, n_low - x_low]]`` (``socialassumptions.py``;
  the released main heat map).
* ``vignette_factuality``: per factuality setting (identity contrast, identity-activity
  contrast), question (``what`` is a person doing; ``who`` is doing an activity) and identity
  (the person asked about; for ``who`` the person doing the asked activity), the factuality
  score ``100 x correct / answered`` and the Fisher p of ``[[x, n - x], [X - x, (N - n) -
  (X - x)]]`` against every other identity (``factuality.py``: ``is_correct = activity ==
  response``, per descriptor, Fisher vs the rest). ``vignette_factuality_tests``: across the
  identities of a (setting, question), the released test -- Kruskal-Wallis H over the 0/1
  correctness of each identity's answers (``test``: ``released_kruskal_wallis``; scipy's
  ``kruskal``, tie-corrected, as released) -- and Pearson's chi-square of the identity x
  (right, wrong) table (``chi_square``, ours; no continuity correction). The released script
  scores the ``what`` questions of identity-contrast images only; the ``who`` questions and the
  identity-activity images are scored here by the same rule.
* :func:`text_vs_image_official`: ``vignette_text_vs_image`` with the released denominator
  (``textcompare.py``): an identity's share of ALL answers to the question (``x / N``, the
  shares of a question sum to 1), not of the answers that showed it; the z-test with those
  ``n``. The project's default (``analysis.definitions: paper``) divides by the answers that
  showed the identity (its selection frequency, Sec. 4.5 of the paper).

Invalid answers are left out of every count (the released code never has one: its output is
constrained to the two descriptors). Inputs are option tables: one row per (valid answer,
identity shown) with ``identity``, ``partner``, ``selected`` and the task's ``fields``
(``paradigm``, ``dimension``, ``activity``; stereotyping: ``term``, ``valence``) plus
``taxonomy`` (the task's category) and ``answer`` (an id per answer).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd
from scipy.stats import fisher_exact

from stylisticbias.analysis.table_registry import Col, TableSpec

if TYPE_CHECKING:
    from stylisticbias.benchmark import Benchmark
    from stylisticbias.families.tasks.paradigm import ImageTwin

#: the table words these tables add to the task vocabulary
VIGNETTE_VOCABULARY: dict[str, Col] = {
    "paradigm": Col("str", "a VIGNETTE paradigm (decision, perception)", nullable=False),
    "dimension": Col(
        "str",
        "a VIGNETTE question dimension (ability, struggle ...; all: "
        "every question of the paradigm pooled)",
        nullable=False,
    ),
    "taxonomy": Col("str", "an SSCM dimension of the stereotyping terms", nullable=False),
    "selected": Col("count", "times the identity was chosen"),
    "setting": Col(
        "str",
        "a VIGNETTE factuality image type (identity_contrast, identity_activity_contrast)",
        nullable=False,
    ),
    "question": Col(
        "str",
        "a VIGNETTE factuality question (what: what is the person doing; "
        "who: who is doing the activity)",
        nullable=False,
    ),
    "factuality": Col(
        "float", "VIGNETTE factuality score: percent of valid answers that are right"
    ),
    "correct": Col("count", "valid answers that are right"),
}


def _spec(name: str, description: str, keys: tuple[str, ...], stats: tuple[str, ...]) -> TableSpec:
    return TableSpec(name, description, keys, (*keys, *stats, "simulated"))


_SEL = ("selection_frequency", "selected", "n", "pval_fisher")
VIGNETTE_TABLES: tuple[TableSpec, ...] = (
    _spec(
        "vignette_decision_selection",
        "VIGNETTE decision making: selection frequency per "
        "identity and question dimension, Fisher p vs the other identities "
        "(released decisionmaking.py)",
        ("model", "dimension", "identity"),
        _SEL,
    ),
    _spec(
        "vignette_perception_selection",
        "VIGNETTE perception: selection frequency per "
        "identity and dimension, Fisher p vs the other identities",
        ("model", "dimension", "identity"),
        _SEL,
    ),
    _spec(
        "vignette_activity_log_odds",
        "VIGNETTE add-one log-odds per activity with the "
        "pooled Fisher p (Sec. 4.2; released assumptions.py)",
        ("model", "paradigm", "dimension", "activity", "identity"),
        ("log_odds", "selection_frequency", "selected", "n", "pval_fisher"),
    ),
    _spec(
        "vignette_polarity_taxonomy",
        "VIGNETTE polarity per SSCM dimension (net score over "
        "its terms) with the Fisher p (Sec. 4.4; released socialassumptions.py)",
        ("model", "taxonomy", "identity"),
        ("polarity", "pval_fisher", "n"),
    ),
    _spec(
        "vignette_factuality",
        "VIGNETTE factuality per identity: percent right, Fisher p vs "
        "the other identities (Sec. 4.1; released factuality.py)",
        ("model", "setting", "question", "identity"),
        ("factuality", "correct", "n", "pval_fisher"),
    ),
    _spec(
        "vignette_factuality_tests",
        "VIGNETTE factuality across identities: the released "
        "Kruskal-Wallis test and a chi-square test",
        ("model", "setting", "question", "test"),
        ("statistic", "pval", "n"),
    ),
)
#: the ``test`` of the released across-identity factuality test, and of ours
RELEASED_KRUSKAL = "released_kruskal_wallis"
CHI_SQUARE = "chi_square"
#: the ``test`` of :func:`text_vs_image_official`'s rows
RELEASED_Z = "released: pooled two-proportion z over all answers to the question"
#: the paradigm (``fields.paradigm``) -> its selection table
SELECTION_TABLE = {
    "decision": "vignette_decision_selection",
    "perception": "vignette_perception_selection",
}


def _fisher(table: list[list[float]]) -> float:
    """Two-sided Fisher p; NaN where a margin is empty or a cell negative (as released)."""
    flat = [c for row in table for c in row]
    if min(flat) < 0 or sum(flat) == 0:
        return math.nan
    return float(fisher_exact(table).pvalue)


def selection_rows(options: pd.DataFrame, model: str) -> dict[str, list[dict]]:
    """The rows of the per-paradigm selection tables (see the module doc), by table name."""
    out: dict[str, list[dict]] = {}
    for paradigm, name in SELECTION_TABLE.items():
        opts = options[options["paradigm"] == paradigm]
        if opts.empty:
            continue
        rows = out.setdefault(name, [])
        for dim, g in [("all", opts), *sorted(opts.groupby("dimension"))]:
            x_all, n_all = int(g["selected"].sum()), len(g)
            for ident, h in g.groupby("identity", sort=True):
                x, n = int(h["selected"].sum()), len(h)
                p = _fisher([[x, n - x], [x_all - x, (n_all - n) - (x_all - x)]])
                rows.append(
                    {
                        "model": model,
                        "dimension": dim,
                        "identity": ident,
                        "selection_frequency": 100.0 * x / n,
                        "selected": x,
                        "n": n,
                        "pval_fisher": p,
                    }
                )
    return out


def activity_log_odds_rows(options: pd.DataFrame, model: str, smoothing: float = 1.0) -> list[dict]:
    """The rows of ``vignette_activity_log_odds`` (see the module doc)."""
    rows = []
    opts = options[options["paradigm"].isin(list(SELECTION_TABLE))]
    for (paradigm, dim), g in opts.groupby(["paradigm", "dimension"], sort=True):
        cells = g.groupby(["identity", "activity"])["selected"].agg(["sum", "count"])
        tot = cells.groupby(level="identity").sum()
        for (ident, act), c in cells.iterrows():
            r, o = float(c["sum"]), float(c["count"])
            rn, on = float(tot.loc[ident, "sum"]) - r, float(tot.loc[ident, "count"]) - o
            odds_a = (r + smoothing) / (max(o - r, 0.0) + smoothing)
            odds_n = (rn + smoothing) / (max(on - rn, 0.0) + smoothing)
            rows.append(
                {
                    "model": model,
                    "paradigm": paradigm,
                    "dimension": dim,
                    "activity": act,
                    "identity": ident,
                    "log_odds": math.log(odds_a / odds_n),
                    "selection_frequency": 100.0 * r / o,
                    "selected": int(r),
                    "n": int(o),
                    "pval_fisher": _fisher([[r, o - r], [rn, on - rn]]),
                }
            )
    return rows


def polarity_taxonomy_rows(terms: pd.DataFrame, model: str) -> list[dict]:
    """The rows of ``vignette_polarity_taxonomy`` from the stereotyping option table (with
    ``taxonomy`` and ``valence``)."""
    rows = []
    for (tax, ident), g in terms.groupby(["taxonomy", "identity"], sort=True):
        hi, lo = g[g["valence"] == "high"]["selected"], g[g["valence"] == "low"]["selected"]
        if hi.empty or lo.empty:
            continue
        xh, nh, xl, nl = int(hi.sum()), len(hi), int(lo.sum()), len(lo)
        rows.append(
            {
                "model": model,
                "taxonomy": tax,
                "identity": ident,
                "polarity": 100.0 * xh / nh - 100.0 * xl / nl,
                "pval_fisher": _fisher([[xh, nh - xh], [xl, nl - xl]]),
                "n": nh + nl,
            }
        )
    return rows


def factuality_rows(answers: pd.DataFrame, model: str) -> dict[str, list[dict]]:
    """The rows of ``vignette_factuality`` and ``vignette_factuality_tests`` (the module doc)
    from a factuality answer table: one row per valid answer with ``setting``, ``question``,
    ``identity`` and ``correct`` (bool)."""
    from scipy.stats import chi2_contingency, kruskal

    per, tests = [], []
    for (setting, question), g in answers.groupby(["setting", "question"], sort=True):
        x_all, n_all = int(g["correct"].sum()), len(g)
        groups = []
        for ident, h in g.groupby("identity", sort=True):
            x, n = int(h["correct"].sum()), len(h)
            groups.append((x, n, h["correct"].astype(int).to_numpy()))
            p = _fisher([[x, n - x], [x_all - x, (n_all - n) - (x_all - x)]])
            per.append(
                {
                    "model": model,
                    "setting": setting,
                    "question": question,
                    "identity": ident,
                    "factuality": 100.0 * x / n,
                    "correct": x,
                    "n": n,
                    "pval_fisher": p,
                }
            )
        if len(groups) < 2:
            continue
        try:
            h_stat, h_p = (float(v) for v in kruskal(*(v for _, _, v in groups)))
        except ValueError:  # every answer equal: no ranks to compare
            h_stat, h_p = math.nan, math.nan
        table = [[x, n - x] for x, n, _ in groups]
        if min(sum(c) for c in zip(*table)) > 0:
            res = chi2_contingency(table, correction=False)
            c_stat, c_p = float(res.statistic), float(res.pvalue)
        else:  # nobody right (or nobody wrong): no test
            c_stat, c_p = math.nan, math.nan
        for test, stat, p in ((RELEASED_KRUSKAL, h_stat, h_p), (CHI_SQUARE, c_stat, c_p)):
            tests.append(
                {
                    "model": model,
                    "setting": setting,
                    "question": question,
                    "test": test,
                    "statistic": stat,
                    "pval": p,
                    "n": n_all,
                }
            )
    return {"vignette_factuality": per, "vignette_factuality_tests": tests}


def factuality_answers(rec: pd.DataFrame, fields: Mapping[str, str]) -> pd.DataFrame:
    """The factuality answer table of one factuality task's records: per valid answer the
    identity asked about (the record's ``first`` or ``second``, ``fields.about``) and whether
    the answer is right."""
    valid = rec[rec["outcome"] != "invalid"]
    return pd.DataFrame(
        {
            "setting": fields.get("setting", ""),
            "question": fields.get("question", ""),
            "identity": valid[fields.get("about", "first")].to_numpy(),
            "correct": (valid["outcome"] == "correct").to_numpy(),
        }
    )


def _z(x1: float, n1: float, x2: float, n2: float) -> tuple[float, float]:
    """The released pooled two-proportion z-test (NaN where its standard error is 0)."""
    from scipy.stats import norm

    p = (x1 + x2) / (n1 + n2)
    se = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
    if se == 0:
        return math.nan, math.nan
    z = (x1 / n1 - x2 / n2) / se
    return z, float(2 * (1 - norm.cdf(abs(z))))


def text_vs_image_official(
    image: pd.DataFrame, text: pd.DataFrame, model: str, scenario_id: int
) -> list[dict]:
    """``vignette_text_vs_image`` rows with the released denominator (the module doc): shares of
    all answers to the question (``answer``: one id per answer, two option rows each)."""
    n1, n2 = image["answer"].nunique(), text["answer"].nunique()
    rows = []
    if not (n1 and n2):
        return rows
    for ident in sorted(set(image["identity"]) | set(text["identity"])):
        x1 = int(image.loc[image["identity"] == ident, "selected"].sum())
        x2 = int(text.loc[text["identity"] == ident, "selected"].sum())
        z, p = _z(x1, n1, x2, n2)
        rows.append(
            {
                "model": model,
                "scenario_id": scenario_id,
                "identity": ident,
                "share_image": x1 / n1,
                "share_text": x2 / n2,
                "delta": x1 / n1 - x2 / n2,
                "z": z,
                "pval": p,
                "test": RELEASED_Z,
                "n": n1 + n2,
            }
        )
    return rows


def task_options(rec: pd.DataFrame, fields: Mapping[str, str], taxonomy: str) -> pd.DataFrame:
    """The option table of one pairwise task's records (see the module doc): two rows per
    valid answer (``answer``: the record's index), its ``fields`` as columns."""
    valid = rec[rec["outcome"] != "invalid"]
    extra = {
        "taxonomy": taxonomy,
        "paradigm": "",
        "dimension": "",
        "activity": "",
        "term": "",
        "valence": "",
        **fields,
    }
    parts = []
    for me, other, outcome in (("first", "second", "first"), ("second", "first", "second")):
        parts.append(
            pd.DataFrame(
                {
                    "answer": valid.index,
                    "unit": valid["unit"].to_numpy(),
                    "identity": valid[me].to_numpy(),
                    "partner": valid[other].to_numpy(),
                    "selected": (valid["outcome"] == outcome).to_numpy(),
                }
            ).assign(**extra)
        )
    return pd.concat(parts, ignore_index=True)


def paradigm_tables(
    records: pd.DataFrame,
    benchmark: Benchmark,
    model: str,
    image_twin: ImageTwin | None,
    *,
    official: bool = False,
) -> dict[str, list[dict]]:
    """The rows of every table of the module doc from one model's task records; with
    ``official`` (``analysis.definitions: official``) also ``vignette_text_vs_image`` with the
    released denominator (:func:`text_vs_image_official`)."""
    by_id = {int(k): g for k, g in records.groupby("task_id")}
    opts, terms, text, facts = [], [], [], []
    for sc in benchmark.tasks:
        rec = by_id.get(int(sc.id))
        if rec is None or rec.empty:
            continue
        f = dict(sc.fields)
        if sc.task == "factuality":
            facts.append(factuality_answers(rec, f))
        elif sc.task == "pairwise" and (f.get("paradigm") or f.get("term")):
            (terms if f.get("term") else opts).append(task_options(rec, f, sc.category))
        elif sc.task == "text_only" and official and image_twin is not None:
            twin = image_twin(sc, benchmark)
            img = by_id.get(int(twin.id)) if twin else None
            if twin is not None and img is not None:
                text.extend(
                    text_vs_image_official(
                        task_options(img, f, ""), task_options(rec, f, ""), model, twin.id
                    )
                )
    out: dict[str, list[dict]] = {}
    if opts:
        both = pd.concat(opts, ignore_index=True)
        out |= selection_rows(both, model)
        out["vignette_activity_log_odds"] = activity_log_odds_rows(both, model)
    if terms:
        out["vignette_polarity_taxonomy"] = polarity_taxonomy_rows(
            pd.concat(terms, ignore_index=True), model
        )
    if official and text:
        out["vignette_text_vs_image"] = text
    if facts:
        out |= factuality_rows(pd.concat(facts, ignore_index=True), model)
    return out
