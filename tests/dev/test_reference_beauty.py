"""The transcription of Beauty and the Bias's tables (conf/reference/beauty-and-the-bias/)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from stylisticbias.config import ROOT
from stylisticbias_dev.reference.beauty_and_the_bias import transcribe

REF = ROOT / "conf" / "reference" / "beauty-and-the-bias"
PAPER = next(
    (
        p / "shared" / "papers" / "beauty-and-the-bias.txt"
        for p in ROOT.parents[:2]
        if (p / "shared" / "papers" / "beauty-and-the-bias.txt").is_file()
    ),
    None,
)


def _csv(name: str) -> pd.DataFrame:
    df = pd.read_csv(REF / name)
    return df.fillna({"stars": ""}) if "stars" in df.columns else df


def test_values_read_off_the_paper() -> None:
    vb = _csv("variation_bias.csv")
    row = vb[(vb["model"] == "Gemma") & (vb["positive"] == "Confident")].iloc[0]
    # Table 10: Confident / Insecure  0.69  0.39  486.70***
    assert (row["mean_variation"], row["mean_base"], row["h"], row["stars"]) == (
        0.69,
        0.39,
        486.70,
        "***",
    )
    assert row["scenario_id"] == 40 and row["table"] == "Table 10"
    rates = _csv("category_rates.csv")

    def share(table: str, model: str, sub: str) -> float:
        r = rates[(rates["table"] == table) & (rates["model"] == model)]
        return float(r[r["subcategory"] == sub]["share_significant"].iloc[0])

    assert share("Table 2", "DeepSeek", "all") == 0.901  # "90.1%"
    assert share("Table 2", "Pixtral", "Sentiment") == 1.0
    assert share("Table 2", "Average", "all") == 0.838  # the table-backed 83.8%
    assert share("Table 33", "LLaVA 1.5", "all") == 0.462
    st = _csv("stereotype_groups.csv")
    ce = st[(st["table"] == "Table 17") & (st["positive"] == "Chemical engineer")].iloc[0]
    assert (ce["mean_stereotyped_group"], ce["mean_other_group"], ce["h"]) == (0.93, 0.50, 714.36)
    assert st[st["positive"] == "Chief executive officer"]["scenario_id"].eq(6).all()
    bus = st[(st["table"] == "Table 24") & (st["positive"] == "Bus driver")]
    bus = bus[bus["negative"] == "Aircraft pilot"].iloc[0]
    assert (bus["axis"], bus["h"], bus["stars"]) == ("ethnicity", 19.62, "***")
    w = _csv("wilcoxon.csv")
    t5 = w[(w["table"] == "Table 5") & (w["model"] == "Phi3.5")].iloc[0]
    assert (t5["statistic"], t5["stars"]) == (228.0, "***")


def test_counts_agree_with_the_captions() -> None:
    vb = _csv("variation_bias.csv")
    assert len(vb) == 7 * 33
    # captions of Tables 10-16: "Out of 33 scenarios, N ... showed a significant halo effect"
    significant = vb[vb["stars"] != ""].groupby("model").size().to_dict()
    assert significant["Gemma"] == 31 and significant["Pixtral"] == 33
    # Table 2's sentiment shares are the significant counts of Tables 10-16
    rates = _csv("category_rates.csv")
    t2 = rates[(rates["table"] == "Table 2") & (rates["subcategory"] == "Sentiment")]
    for r in t2[t2["model"] != "Average"].itertuples():
        assert round(significant[r.model] / 33, 3) == pytest.approx(r.share_significant, abs=1e-3)
    st = _csv("stereotype_groups.csv")
    assert len(st) == 7 * 19 + 7 * 12
    assert set(st["scenario_id"]) == set(range(1, 32))


@pytest.mark.skipif(PAPER is None, reason="the paper's text is not beside the checkout")
def test_the_script_reproduces_the_committed_files(tmp_path: Path) -> None:
    assert PAPER is not None
    for path in transcribe(PAPER, tmp_path):
        assert path.read_bytes() == (REF / path.name).read_bytes(), path.name
