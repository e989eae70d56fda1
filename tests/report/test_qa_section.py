"""The report's QA section counts the checks and, under ``qa.policy=exclude``, says how many
edits were left out of judging and which."""

from __future__ import annotations

from stylisticbias.report.markdown import MAX_EXCLUDED_LISTED, qa_section


def _summary(policy: str, excluded: list[str]) -> dict:
    check = {
        "checked": 10,
        "passed": 8,
        "failed": 2,
        "unknown": 1,
        "pass_share": 0.8,
        "per_value": [],
    }
    return {
        "policy": policy,
        "annotator": "sim",
        "edits": 30,
        "failed_any": len(excluded) or 4,
        "checks": {"locality": check, "attribute": check, "identity": check},
        "excluded": excluded,
    }


def test_exclude_policy_counts_and_names_the_excluded_edits() -> None:
    ids = [f"img-{i:03d}" for i in range(MAX_EXCLUDED_LISTED + 3)]
    text = qa_section(_summary("exclude", ids))
    assert f"{len(ids)} of 30 edits failed a check and were left out of judging" in text
    assert "`img-000`" in text and f"`img-{MAX_EXCLUDED_LISTED - 1:03d}`" in text
    assert f"`img-{MAX_EXCLUDED_LISTED:03d}`" not in text and "and 3 more." in text
    assert "| identity | 10 | 8 | 2 | 1 |" in text


def test_report_policy_excludes_nothing() -> None:
    text = qa_section(_summary("report", []))
    assert "**Policy: report only.** 4 of 30 edits fail at least one check" in text
    assert "left out" not in text
