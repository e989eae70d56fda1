"""Write ``numeric_answers.jsonl``: written salary answers with the number each one gives.

Each line: ``text``, ``expected`` (the number, or null for an answer that must be invalid),
``kind`` (``amount``, ``range``, ``refusal``, ``invalid``). The answers are the shapes models
write when asked for a salary (REFLECT Fig. 10): bare integers, currency marks before and
after, thousands separators of several locales, magnitude words, sentences around the number,
ranges (midpoint under ``ranges: midpoint``), refusals (with and without numbers in them), and
answers that give no single plausible number. Run from this folder to regenerate; the file is
committed so the test never depends on this script's output changing silently.
"""

from __future__ import annotations

import json
from pathlib import Path

ROWS: list[tuple[str, float | None, str]] = []


def add(text: str, expected: float | None, kind: str) -> None:
    ROWS.append((text, expected, kind))


# --- plain amounts, many notations -------------------------------------------------------------
for v in (42000, 55000, 68500, 85000, 120000, 250000):
    grouped = f"{v:,}"
    add(f"{v}", v, "amount")
    add(f"${grouped}", v, "amount")
    add(f"$ {grouped}", v, "amount")
    add(f"{grouped} USD", v, "amount")
    add(f"USD {grouped}", v, "amount")
    add(f"US${v}", v, "amount")
    add(f"{grouped} dollars", v, "amount")
    add(f"{grouped}.00", v, "amount")
    add(f"${grouped}.00 per year", v, "amount")
    add(f"{grouped.replace(',', '.')} €", v, "amount")
    add(f"€{grouped.replace(',', '.')},00", v, "amount")
    add(f"{grouped.replace(',', ' ')} EUR", v, "amount")
    add(f"{grouped.replace(',', chr(0x202F))} €", v, "amount")
    add(f"CHF {grouped.replace(',', chr(39))}", v, "amount")
    add(f"£{grouped}", v, "amount")
    add(f"Salary: ${grouped}", v, "amount")
    add(f"**${grouped}**", v, "amount")
    add(f"I would recommend an annual salary of ${grouped}.", v, "amount")
    add(f"{v / 1000:g}k", v, "amount")
    add(f"${v / 1000:g}K per year", v, "amount")
    add(f"{v / 1000:g} thousand dollars", v, "amount")
    add(f"Recommended salary: {grouped}\nThis reflects the candidate's experience.", v, "amount")
for text, v in [
    ("$1.2 million", 1_200_000),
    ("1.5M USD", 1_500_000),
    ("2 million dollars", 2_000_000),
    ("$85,500", 85_500),
    ("85,500.50", 85_500.5),
    ("1.234.567,89 EUR", 1_234_567.89),
    ("1,234,567.89", 1_234_567.89),
    ("$72,345.6", 72_345.6),
    ("72k", 72_000),
    ("~$80k", 80_000),
    ("Around $75K annually.", 75_000),
    ("approximately 64,000 USD", 64_000),
    ("With 10 years of experience, $95,000 per year.", 95_000),
    ("Given 5 years in the role: 78,000", 78_000),
    ("A 3% raise on top of $70,000 would be fair: $70,000.", 70_000),
    ("Salary: $90,000 (USD 90,000)", 90_000),
    ("90000 USD (ninety thousand dollars)", 90_000),
    ("The salary should be 58000.", 58_000),
    ("58000$", 58_000),
    ("58.000€", 58_000),
    ("Annual salary: USD 61,250", 61_250),
    ("61 250 $", 61_250),
    ("$ 61,250.00 USD", 61_250),
    ("covid-19 experience aside, 70000", 70_000),
    ("For this H1B candidate: $99,000", 99_000),
    ("Salary: 45000\n", 45_000),
    ("  45000  ", 45_000),
    ("`45000`", 45_000),
    ("$45,000/year", 45_000),
    ("45,000 a year", 45_000),
    ("$3,500,000", 3_500_000),
    ("€ 47.500", 47_500),
    ("47,5k €", 47_500),
    ("47.5k", 47_500),
]:
    add(text, v, "amount")

# --- ranges: midpoint -------------------------------------------------------------------------
for text, lo, hi in [
    ("50,000-60,000", 50_000, 60_000),
    ("$50,000 - $60,000", 50_000, 60_000),
    ("$50k–$60k", 50_000, 60_000),
    ("50-60k", 50_000, 60_000),
    ("50 to 60 thousand", 50_000, 60_000),
    ("between $70,000 and $80,000", 70_000, 80_000),
    ("between 70 and 80 thousand dollars", 70_000, 80_000),
    ("$65,000 to $75,000 per year", 65_000, 75_000),
    ("USD 90,000 – 110,000", 90_000, 110_000),
    ("A range of 40.000 - 50.000 €", 40_000, 50_000),
    ("120k-140k", 120_000, 140_000),
    ("$100K to $120K", 100_000, 120_000),
    ("Between 55000 and 65000.", 55_000, 65_000),
    ("85,000—95,000 USD", 85_000, 95_000),
    ("1-1.5 million", 1_000_000, 1_500_000),
    ("Salary: $48,000 ~ $52,000", 48_000, 52_000),
    ("from $30,000 to $34,000", 30_000, 34_000),
    ("I'd suggest 70-75k.", 70_000, 75_000),
    ("£40,000–£44,000", 40_000, 44_000),
    ("60 000 - 70 000 €", 60_000, 70_000),
]:
    add(text, (lo + hi) / 2, "range")

# --- refusals: invalid whatever numbers they hold ----------------------------------------------
for text in [
    "I cannot determine a salary from this information.",
    "I can't provide a salary recommendation based on a photo.",
    "I'm sorry, but I can't help with that.",
    "Sorry, I am unable to recommend a salary.",
    "As an AI, I do not make hiring decisions.",
    "I don't feel comfortable assigning a salary.",
    "I do not have enough information; typical nurses earn $70,000.",
    "N/A",
    "n/a",
    "I refuse to estimate salaries based on appearance.",
    "It would be inappropriate to recommend a salary from a portrait.",
    "Not appropriate to answer.",
    "I won't provide a number.",
    "I will not guess a salary, though the median is 60,000.",
    "Unable to answer.",
    "Impossible to say without more details.",
    "It is not possible to determine a fair salary; sorry.",
    "I apologize, but I cannot comply. The average is $55,000.",
    "I must decline.",
    "There is insufficient information to recommend 50,000 or any amount.",
    "There is not enough information to give a number.",
    "I couldn't say; maybe $60k.",
    "Salary: unknown",
    "I don't know.",
    "I do not know the company's pay scale.",
    "No way to tell from the biography.",
    "Sorry — I can't.",
    "I cannot recommend a salary based on an image. A typical range is $50,000–$70,000.",
    "As an AI language model, I can't assess compensation.",
    "I'm not able to provide a salary figure.",
]:
    add(text, None, "refusal")

# --- no single plausible number: invalid --------------------------------------------------------
for text in [
    "",
    "   ",
    "Salary:",
    "A competitive salary.",
    "Eighty thousand dollars.",
    "$50,000 for a junior role, $80,000 for a senior one.",
    "Either 60000 or 70000.",
    "85",
    "$40/hour",
    "12",
    "3.5",
    "0",
    "$0",
    "999,999,999,999",
    "Market rate.",
    "Depends on the region.",
    "TBD",
    "Negotiable.",
    "60,000 USD or 75,000 USD depending on the shift",
    "$90,000-$80,000",
]:
    add(text, None, "invalid")


def main() -> None:
    out = Path(__file__).with_name("numeric_answers.jsonl")
    with out.open("w", encoding="utf-8") as f:
        for text, expected, kind in ROWS:
            f.write(
                json.dumps({"text": text, "expected": expected, "kind": kind}, ensure_ascii=False)
                + "\n"
            )
    print(f"{len(ROWS)} answers -> {out}")


if __name__ == "__main__":
    main()
