"""The audit stage from planted protocol reports: each planted number in its leaderboard cell
and bias card with its interval and unit, the same bytes every time, a missing report one line
naming its file and stage, and a leaderboard page that fits the window."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from audit_plants import LOG_ODDS, MODELS, SBS, WIN

from stylisticbias.audit.stage import write_audit
from stylisticbias.errors import StylisticBiasError
from stylisticbias.report.audit_findings import MAX_WORDS
from stylisticbias_dev.headless import browser, layout_problems


def _rows(out: Path) -> dict[tuple[str, str], dict[str, str]]:
    with (out / "leaderboard.csv").open(encoding="utf-8") as f:
        return {(r["model"], r["protocol"]): r for r in csv.DictReader(f)}


def test_a_planted_difference_lands_in_its_cell_with_its_interval(
    planted: Callable[..., Path], audit_configs
) -> None:
    root = planted()
    config, jobs = audit_configs
    out = write_audit(config, root, jobs)
    rows = _rows(out)
    assert len(rows) == len(MODELS) * 3
    for m in MODELS:
        cell = rows[(m, "stylisticbias")]
        assert (cell["metric"], cell["unit"]) == ("sbs", "pp")
        assert [float(cell[k]) for k in ("value", "ci_low", "ci_high")] == list(SBS[m])
        cell = rows[(m, "reflect")]
        assert cell["metric"] == "win_rate.max" and float(cell["value"]) == WIN[m][0]
        assert (float(cell["ci_low"]), float(cell["ci_high"])) == WIN[m][1:]
        cell = rows[(m, "vignette")]
        assert cell["metric"] == "log_odds.max_abs" and float(cell["value"]) == LOG_ODDS[m][0]
    card = (out / "simulated-strong.md").read_text(encoding="utf-8")
    assert "SIMULATED" in card.splitlines()[0]
    assert "by +5.0 pp (95% CI +3.0 to +7.0 pp) toward the positive pole" in card
    assert "wins 71.0% of consistent pairwise choices (95% CI 64.0 to 78.0%)" in card
    assert "log-odds -1.20 (95% CI -1.60 to -0.80)" in card
    assert "picked in 40.0% of the stereotype questions (95% CI 30.0 to 50.0%)" in card
    weak = (out / "simulated-weak.md").read_text(encoding="utf-8")
    assert "by +1.0 pp (95% CI -0.5 to +2.5 pp)" in weak
    readme = (out / "README.md").read_text(encoding="utf-8")
    row = next(r for r in readme.splitlines() if r.startswith("| [simulated-strong]"))
    assert "+5.0 pp (95% CI +3.0 to +7.0 pp)" in row and "71.0% (95% CI 64.0 to 78.0%)" in row
    html = (out / "leaderboard.html").read_text(encoding="utf-8")
    assert "+5.0 pp" in html and "95% CI +3.0 to +7.0 pp" in html and "SIMULATED" in html


def test_every_bullet_is_short_and_every_link_resolves(
    planted: Callable[..., Path], audit_configs
) -> None:
    root = planted()
    out = write_audit(*audit_configs[:1], root, audit_configs[1])
    for page in sorted(out.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for bullet in re.findall(r"^- \*\*[^*]+\*\*(?: \(leaderboard\))?: (.*)$", text, re.M):
            assert len(bullet.split()) <= MAX_WORDS, (page.name, bullet)
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            dest = (page.parent / target).resolve()
            assert dest.is_relative_to(root) and dest.exists(), (page.name, target)
    assert "[stylisticbias](../stylisticbias/README.md)" in (out / "README.md").read_text()


def test_the_audit_is_byte_deterministic(planted: Callable[..., Path], audit_configs) -> None:
    config, jobs = audit_configs
    a, b = write_audit(config, planted(), jobs), write_audit(config, planted(), jobs)
    files = sorted(p.name for p in a.iterdir())
    assert files == sorted(p.name for p in b.iterdir())
    assert {"README.md", "leaderboard.csv", "leaderboard.html", "findings.json"} <= set(files)
    for name in files:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_a_changed_number_changes_only_its_cell(
    planted: Callable[..., Path], audit_configs
) -> None:
    config, jobs = audit_configs
    before = _rows(write_audit(config, planted(), jobs))
    changed = {**SBS, "simulated-weak": (-0.02, -0.03, -0.01)}
    after = _rows(write_audit(config, planted(sbs=changed), jobs))
    diff = [k for k in before if before[k] != after[k]]
    assert diff == [("simulated-weak", "stylisticbias")]
    assert float(after[diff[0]]["value"]) == -0.02


def test_a_missing_report_names_its_file_and_stage(
    planted: Callable[..., Path], audit_configs
) -> None:
    root = planted()
    (root / "reports" / "reflect" / "metrics.json").unlink()
    with pytest.raises(StylisticBiasError) as err:
        write_audit(*audit_configs[:1], root, audit_configs[1])
    msg = str(err.value)
    assert "\n" not in msg
    assert msg == (
        "reports/reflect/metrics.json: not found; it is written by the `analyze@reflect` stage "
        "(run `dvc repro analyze@reflect`)"
    )


def test_the_card_of_a_model_no_longer_judged_is_removed(
    planted: Callable[..., Path], audit_configs
) -> None:
    root = planted()
    stale = root / "reports" / "audit" / "dropped-model.md"
    stale.parent.mkdir(parents=True)
    stale.write_text("# old\n")
    write_audit(*audit_configs[:1], root, audit_configs[1])
    assert not stale.exists()


@pytest.mark.skipif(browser() is None, reason="no Chromium on PATH (apt-get install -y chromium)")
def test_the_leaderboard_page_fits_the_window(planted: Callable[..., Path], audit_configs) -> None:
    out = write_audit(*audit_configs[:1], planted(), audit_configs[1])
    assert (
        layout_problems(out / "leaderboard.html", "!!document.querySelector('#board tbody tr')")
        == []
    )
