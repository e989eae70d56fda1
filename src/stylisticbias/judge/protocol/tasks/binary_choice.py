"""The binary forced choice (paper App. C.2): the first registered task type.

One prompt per (scenario, ordering) asks the judge to pick one of the scenario's two poles by
letter (:func:`~stylisticbias.judge.protocol.prompts.prompt_specs`); a response is read as one
letter or invalid (:mod:`~stylisticbias.judge.protocol.parsing`) and mapped to the pole it
stands for under its ordering: ``positive``, ``negative`` or ``invalid``. A cell's score is
phi, the share of valid responses on the positive pole (:func:`score_cells`; the estimators and
the undecided-mass bounds are described in :mod:`stylisticbias.scores`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.official_parser import classify_official
from stylisticbias.judge.protocol.outcomes import CHOICES, draw_outcomes
from stylisticbias.judge.protocol.parsing import PARSERS, decide_prefix, parse_response
from stylisticbias.judge.protocol.prompts import prompt_specs
from stylisticbias.judge.protocol.tasks.base import TaskType
from stylisticbias.judge.protocol.tasks.bounds import phi_bounds
from stylisticbias.judge.protocol.tasks.grouping import Groups


def _phi_drawn(rows: pd.DataFrame, g: Groups | None = None) -> pd.DataFrame:
    g = g or Groups(rows)
    choice = rows["choice"]
    red = g.reduce(
        pos=((choice == "positive").to_numpy(dtype=np.int64), "sum"),
        n_valid=(choice.isin(["positive", "negative"]).to_numpy(dtype=np.int64), "sum"),
        simulated=(rows["simulated"].to_numpy(dtype=bool), "any"),
        undecided=(rows["p_undecided"], "mean"),
    )
    out = g.keys.assign(
        pos=red["pos"],
        n_valid=red["n_valid"],
        n=g.lengths.astype(np.int64),
        simulated=red["simulated"],
        undecided=red["undecided"],
    )
    out["phi"] = np.where(
        out["n_valid"] > 0, out["pos"] / out["n_valid"].where(out["n_valid"] > 0), np.nan
    )
    out["n_valid"] = out["n_valid"].astype(float)
    # a drawn response that landed in undecided mass was recorded as invalid: n * u draws
    out["phi_low"], out["phi_high"] = phi_bounds(
        out["pos"],
        out["n_valid"],
        (out["n"] * out["undecided"]).clip(upper=out["n"] - out["n_valid"]),
    )
    return out.drop(columns="pos")


def _official_choices(rows: pd.DataFrame, benchmark: Benchmark) -> pd.DataFrame:
    """``rows`` with ``choice`` re-read by the paper's code's parser (``parser: official``)."""
    bad = sorted(set(rows["decoding"].astype(str)) - {"generate", "simulated"})
    if bad:
        raise StylisticBiasError(
            f"judge.parser official: needs drawn response texts (decoding generate or simulated); "
            f"the judgments hold decoding {', '.join(bad)} (distributions under the paper "
            "reader). Re-judge with engine.decoding generate, or use judge.parser paper"
        )
    choices = []
    for text, sid, oid in zip(rows["response"], rows["scenario_id"], rows["ordering"]):
        sc, o = benchmark.scenario(int(sid)), benchmark.ordering(int(oid))
        opt_a, opt_b = benchmark.options_shown(sc, o)
        choices.append(classify_official(text, o, opt_a, opt_b, benchmark.parser))
    return rows.assign(choice=choices)


def _phi_exact(rows: pd.DataFrame, k: int, g: Groups | None = None) -> pd.DataFrame:
    g = g or Groups(rows)
    red = g.reduce(
        pos=(rows["p_pos"], "sum"),
        valid=(rows["p_pos"] + rows["p_neg"], "sum"),
        simulated=(rows["simulated"].to_numpy(dtype=bool), "any"),
        und=(rows["p_undecided"], "sum"),
    )
    out = g.keys.assign(
        pos=red["pos"],
        valid=red["valid"],
        m=g.lengths.astype(np.int64),
        simulated=red["simulated"],
        und=red["und"],
    )
    out["phi"] = np.where(
        out["valid"] > 0, out["pos"] / out["valid"].where(out["valid"] > 0), np.nan
    )
    out["phi"] = out["phi"].clip(0.0, 1.0)
    out["phi_low"], out["phi_high"] = phi_bounds(out["pos"], out["valid"], out["und"])
    out["undecided"] = out["und"] / out["m"]
    out["n_valid"] = k * out["valid"]
    out["n"] = (k * out["m"]).astype(np.int64)
    return out.drop(columns=["pos", "valid", "m", "und"])


def _phi_expectation_of_drawn(rows: pd.DataFrame, g: Groups | None = None) -> pd.Series:
    """The exact-formula phi from the ``p_*`` of drawn rows (each ordering's seeds averaged),
    in the order of ``g.keys``."""
    g = g or Groups(rows)
    red = g.reduce(pos=(rows["p_pos"], "sum"), valid=(rows["p_pos"] + rows["p_neg"], "sum"))
    pos, valid = pd.Series(red["pos"]), pd.Series(red["valid"])
    return (pos / valid.where(valid > 0)).clip(0.0, 1.0).rename("phi_exact")


def _phi_paper_from_exact(rows: pd.DataFrame, k: int, g: Groups | None = None) -> pd.Series:
    """The paper's 12-draw estimator from exact rows: K seeded draws per ordering, in the
    order of ``g.keys``."""
    seeds = list(range(1, k + 1))
    pos = np.zeros(len(rows))
    valid = np.zeros(len(rows))
    cols = zip(
        rows["p_pos"],
        rows["p_neg"],
        rows["p_invalid"],
        rows["p_undecided"],
        rows["image_id"],
        rows["scenario_id"],
        rows["ordering"],
    )
    for i, (pp, pn, pi, pu, img, sid, oid) in enumerate(cols):
        p = {"positive": pp, "negative": pn, "invalid": pi, "undecided": pu}
        draws = draw_outcomes(p, seeds, str(img), int(sid), int(oid))
        pos[i] = sum(d == "positive" for d in draws)
        valid[i] = sum(d != "invalid" for d in draws)
    g = g or Groups(rows)
    red = g.reduce(pos=(pos, "sum"), valid=(valid, "sum"))
    n_pos, n_valid = pd.Series(red["pos"]), pd.Series(red["valid"])
    return (n_pos / n_valid.where(n_valid > 0)).rename("phi_paper")


def score_cells(
    judgments: pd.DataFrame,
    benchmark: Benchmark,
    *,
    source: str,
    k: int,
    reader: str,
) -> pd.DataFrame:
    """phi per (model, image, scenario) from JUDGMENTS rows, with both estimators.

    ``source``: ``drawn``, ``exact`` or ``auto`` (drawn rows when there are any); ``k``: the
    protocol's number of seeds; ``reader``: ``paper`` or ``official`` (``judge.parser``).
    """
    if "p_undecided" not in judgments.columns:  # a column subset without it: none recorded
        judgments = judgments.assign(p_undecided=0.0)
    is_drawn = (judgments["seed"] > 0).to_numpy()
    if is_drawn.all():  # no copy of millions of rows when every row is of one kind
        drawn, exact = judgments, judgments.iloc[:0]
    elif not is_drawn.any():
        drawn, exact = judgments.iloc[:0], judgments
    else:
        drawn, exact = judgments[is_drawn], judgments[~is_drawn]
    use = source if source != "auto" else ("drawn" if len(drawn) else "exact")
    if reader not in PARSERS:
        raise StylisticBiasError(
            f"params.yaml judge.parser: {reader!r}; valid: {', '.join(PARSERS)}"
        )
    if reader == "official":
        if use != "drawn":
            raise StylisticBiasError(
                "judge.parser official: needs drawn response texts; the judgments hold only "
                "exact rows (seed 0). Re-judge with engine.decoding generate, or use judge.parser "
                "paper"
            )
        phi = _phi_drawn(_official_choices(drawn, benchmark))
        # the paper's code: unparsed answers stay in the denominator
        phi["phi"] = np.where(phi["n"] > 0, phi["phi"] * phi["n_valid"] / phi["n"], np.nan)
        phi["phi"] = phi["phi"].fillna(0.0).where(phi["n"] > 0)
        phi["phi_low"] = phi["phi_high"] = phi["phi"]
    else:
        rows = drawn if use == "drawn" else exact
        groups = Groups(rows)
        phi = _phi_drawn(rows, groups) if use == "drawn" else _phi_exact(rows, k, groups)
    if reader == "paper":  # the two estimators side by side (aligned with phi's groups)
        if use == "drawn":
            phi["phi_exact"] = _phi_expectation_of_drawn(drawn, groups).to_numpy()
            phi["phi_paper"] = phi["phi"]
        else:
            phi["phi_paper"] = _phi_paper_from_exact(exact, k, groups).to_numpy()
            phi["phi_exact"] = phi["phi"]
    else:
        phi["phi_paper"] = phi["phi"]
        phi["phi_exact"] = np.nan
    return phi


BINARY_CHOICE = TaskType(
    name="binary_choice",
    outcomes=CHOICES,
    readers=PARSERS,
    prompts=prompt_specs,
    parse=parse_response,
    decide_prefix=decide_prefix,
    score_cells=score_cells,
)
