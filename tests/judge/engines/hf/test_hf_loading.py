"""hf_loading: the judge loads tiny checkpoints but never builds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.hf.loading import resolve_source


def test_missing_tiny_checkpoint_is_one_line_naming_the_build_command(tmp_path: Path) -> None:
    cfg = {"name": "tiny-llava-next", "hub_id": "nope/llava-next", "local_build": "llava_next"}
    with pytest.raises(StylisticBiasError) as exc:
        resolve_source(cfg, root=tmp_path)
    msg = str(exc.value)
    assert "\n" not in msg and "conf/model/tiny-llava-next.yaml" in msg
    assert "python -m stylisticbias_dev.tiny --model tiny-llava-next" in msg
    assert not (tmp_path / "nope").exists()  # nothing was built


def test_built_tiny_checkpoint_resolves_to_its_local_directory(tmp_path: Path) -> None:
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "config.json").write_text("{}")
    cfg = {"name": "t", "hub_id": "ck", "local_build": "llava_next"}
    assert resolve_source(cfg, root=tmp_path) == (str(tmp_path / "ck"), True)


def test_hub_id_without_local_directory_stays_a_hub_id(tmp_path: Path) -> None:
    cfg = {"name": "m", "hub_id": "org/model"}
    assert resolve_source(cfg, root=tmp_path) == ("org/model", False)


# slow tier: imports every judge module in a subprocess (~7 CPU-s); in make test the import-linter
# contract (pyproject.toml, forbidden stylisticbias_dev) checks the same statically
@pytest.mark.slow
def test_production_judge_modules_do_not_import_the_dev_package() -> None:
    import subprocess
    import sys

    code = (
        "import sys, stylisticbias.judge.engines.hf.engine, "
        "stylisticbias.judge.engines.hf.loading, "
        "stylisticbias.judge.run; "
        "print([m for m in sys.modules if m.startswith('stylisticbias_dev')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
