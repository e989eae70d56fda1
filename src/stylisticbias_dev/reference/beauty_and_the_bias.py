"""Transcribe *Beauty and the Bias*'s result tables into ``conf/reference/beauty-and-the-bias/``.

Reads the paper's text (a Markdown conversion in which every table is a block of tab-separated
lines followed by its ``Table N:`` caption) and writes, mechanically, no number retyped:

=============================  ===============  ================================================
file                           paper            columns
=============================  ===============  ================================================
``category_rates.csv``         Tables 2, 31-33  table, bias_test, model, scenario_category,
                                                subcategory, n_scenarios, share_significant
``variation_bias.csv``         Tables 10-16     table, model, scenario_id, positive, negative,
                                                mean_variation, mean_base, h, stars, significant
``stereotype_groups.csv``      Tables 17-30     table, model, axis, scenario_id, positive,
                                                negative, mean_stereotyped_group,
                                                mean_other_group, h, stars, significant
``wilcoxon.csv``               Tables 4, 5      table, model, comparison, axis, statistic, stars
=============================  ===============  ================================================

``share_significant`` is a fraction (the paper prints percentages); ``stars`` is ``***``
(p < 0.001), ``**`` (p < 0.01) or empty; ``significant`` is the paper's bold (its Table 12 has
two bold rows that are not significant, kept as printed). Scenario ids are matched by the pair
of choices against ``conf/benchmark/beauty-and-the-bias.yaml`` (the appendix's "Chief executive
officer" is Table 6's "Chief executive"). Model names are the paper's short names.

Run from the project root (``--out`` defaults to ``conf/reference/beauty-and-the-bias``)::

    python -m stylisticbias_dev.reference.beauty_and_the_bias \
        ../shared/papers/beauty-and-the-bias.txt
"""

from __future__ import annotations

import argparse
import csv
import logging
import re
from pathlib import Path

from stylisticbias.benchmark import Benchmark, load_benchmark

log = logging.getLogger(__name__)

MODELS = ("Gemma", "Phi3.5", "DeepSeek", "Molmo", "Qwen2", "Pixtral", "LLaVA 1.5")
#: the columns of Tables 2 and 31-33: (scenario category, subcategory, n)
CATEGORY_COLUMNS = (
    ("all", "all", 91),
    ("Stereotyped jobs", "Gender", 19),
    ("Stereotyped jobs", "Race", 12),
    ("Stereotyped jobs", "Attractiveness", 8),
    ("Stereotyped traits", "Sentiment", 33),
    ("Stereotyped traits", "Other", 8),
    ("Stereotyped conditions", "Geography", 4),
    ("Stereotyped conditions", "Wealth", 5),
    ("Stereotyped conditions", "Other", 2),
)
CATEGORY_TABLES = {2: "variation", 31: "gender", 32: "age", 33: "race"}
SPELLINGS = {"chief executive officer": "chief executive"}
_TAG = re.compile(r"</?[bi]>")


def tables(text: str) -> dict[int, tuple[str, list[list[str]]]]:
    """``{N: (caption, rows)}``: the tab-separated block before each ``Table N:`` caption."""
    lines = text.splitlines()
    out: dict[int, tuple[str, list[list[str]]]] = {}
    for i, line in enumerate(lines):
        m = re.match(r"^Table (\d+): (.*)$", line)
        if not m:
            continue
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        block = []
        while j >= 0 and "\t" in lines[j]:
            block.append(lines[j].split("\t"))
            j -= 1
        out[int(m.group(1))] = (m.group(2), block[::-1])
    return out


def _clean(cell: str) -> str:
    return _TAG.sub("", cell).strip()


def _bold(cell: str) -> bool:
    return "<b>" in cell


def _number(cell: str) -> tuple[float, str]:
    """``'250.84***'`` -> (250.84, '***'); ``'nan'`` -> (nan, '')."""
    raw = _clean(cell).replace("\\*", "*")
    stars = re.search(r"\*+$", raw)
    num = raw[: stars.start()] if stars else raw
    return float(num), stars.group(0) if stars else ""


def _model(caption: str) -> str:
    found = [m for m in MODELS if re.search(rf"\bfor {re.escape(m)}\b", caption)]
    if len(found) != 1:
        raise ValueError(f"caption names no single model: {caption[:80]!r}")
    return found[0]


def _scenario_id(bench: Benchmark, first: str, second: str) -> int:
    a = SPELLINGS.get(first.lower(), first.lower())
    b = SPELLINGS.get(second.lower(), second.lower())
    for s in bench.scenarios:
        if (s.positive.lower(), s.negative.lower()) == (a, b):
            return s.id
    raise ValueError(f"no scenario {first} / {second} in {bench.source}")


def category_rates(tabs: dict[int, tuple[str, list[list[str]]]]) -> list[dict[str, object]]:
    """Tables 2 and 31-33: the share of significant scenarios per model and column."""
    rows = []
    for n, test in CATEGORY_TABLES.items():
        _, block = tabs[n]
        for line in block:
            name = _clean(line[0])
            if name not in (*MODELS, "Average"):
                continue
            cells = line[1:]
            if len(cells) != len(CATEGORY_COLUMNS):
                raise ValueError(f"Table {n}, {name}: {len(cells)} cells")
            for (cat, sub, k), cell in zip(CATEGORY_COLUMNS, cells, strict=True):
                share = float(_clean(cell).rstrip("%")) / 100
                rows.append(
                    {
                        "table": f"Table {n}",
                        "bias_test": test,
                        "model": name,
                        "scenario_category": cat,
                        "subcategory": sub,
                        "n_scenarios": k,
                        "share_significant": round(share, 4),
                    }
                )
    return rows


def variation_bias(tabs, bench: Benchmark) -> list[dict[str, object]]:
    """Tables 10-16: the halo scenarios per model."""
    rows = []
    for n in range(10, 17):
        caption, block = tabs[n]
        model = _model(caption)
        for line in block[1:]:
            h, stars = _number(line[4])
            rows.append(
                {
                    "table": f"Table {n}",
                    "model": model,
                    "scenario_id": _scenario_id(bench, _clean(line[0]), _clean(line[1])),
                    "positive": _clean(line[0]),
                    "negative": _clean(line[1]),
                    "mean_variation": float(_clean(line[2])),
                    "mean_base": float(_clean(line[3])),
                    "h": h,
                    "stars": stars,
                    "significant": _bold(line[0]),
                }
            )
    return rows


def stereotype_groups(tabs, bench: Benchmark) -> list[dict[str, object]]:
    """Tables 17-23 (gender jobs: male vs female) and 24-30 (race jobs: race 1 vs race 2)."""
    rows = []
    for n in range(17, 31):
        caption, block = tabs[n]
        model = _model(caption)
        for line in block[1:]:
            h, stars = _number(line[4])
            rows.append(
                {
                    "table": f"Table {n}",
                    "model": model,
                    "axis": "gender" if n <= 23 else "ethnicity",
                    "scenario_id": _scenario_id(bench, _clean(line[0]), _clean(line[1])),
                    "positive": _clean(line[0]),
                    "negative": _clean(line[1]),
                    "mean_stereotyped_group": float(_clean(line[2])),
                    "mean_other_group": float(_clean(line[3])),
                    "h": h,
                    "stars": stars,
                    "significant": _bold(line[0]),
                }
            )
    return rows


def wilcoxon(tabs) -> list[dict[str, object]]:
    """Table 4 (demographic H on original vs beautified) and Table 5 (W^attr_gender)."""
    rows = []
    _, t4 = tabs[4]
    for line in t4[1:]:
        for axis, cell in zip(("gender", "age", "race"), line[1:], strict=True):
            stat, stars = _number(cell)
            rows.append(
                {
                    "table": "Table 4",
                    "model": _clean(line[0]),
                    "comparison": "kind",
                    "axis": axis,
                    "statistic": stat,
                    "stars": stars,
                }
            )
    _, t5 = tabs[5]
    for line in t5[1:]:
        stat, stars = _number(line[1])
        rows.append(
            {
                "table": "Table 5",
                "model": _clean(line[0]),
                "comparison": "subgroups",
                "axis": "gender",
                "statistic": stat,
                "stars": stars,
            }
        )
    return rows


def _write(rows: list[dict[str, object]], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    log.info("wrote %s (%d rows)", path, len(rows))


def transcribe(paper: Path, out: Path) -> list[Path]:
    """Write the four reference CSVs from the paper's text; returns their paths."""
    tabs = tables(paper.read_text(encoding="utf-8"))
    bench = load_benchmark("beauty-and-the-bias")
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "category_rates.csv": category_rates(tabs),
        "variation_bias.csv": variation_bias(tabs, bench),
        "stereotype_groups.csv": stereotype_groups(tabs, bench),
        "wilcoxon.csv": wilcoxon(tabs),
    }
    for name, rows in files.items():
        _write(rows, out / name)
    return [out / n for n in files]


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.reference.beauty_and_the_bias")
    ap.add_argument("paper", type=Path, help="the paper's text (Markdown conversion)")
    ap.add_argument("--out", type=Path, default=Path("conf/reference/beauty-and-the-bias"))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    transcribe(args.paper, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
