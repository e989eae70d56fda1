"""The documentation links only inside the repository: every relative Markdown link of
README.md, docs/ and the families' READMEs resolves to a file or folder of the working tree,
and no page sends a reader to a path outside it (``../shared``, absolute paths)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stylisticbias.config import ROOT

PAGES = sorted(
    [
        ROOT / "README.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "src/stylisticbias/families").glob("*/README.md"),
    ]
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
OUTSIDE = re.compile(r"(?<![\w.])(\.\./)+(shared|\.library)\b|`/work/")


def _relative_targets(text: str) -> list[str]:
    out = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # http(s):, mailto:, an anchor on the page
        out.append(target.split("#", 1)[0])
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve_inside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not OUTSIDE.search(text), f"{page}: names a path outside the repository"
    for target in _relative_targets(text):
        dest = (page.parent / target).resolve()
        assert dest.is_relative_to(ROOT.resolve()), f"{page}: link {target} leaves the repo"
        assert dest.exists(), f"{page}: link {target} points nowhere"
