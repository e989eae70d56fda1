"""DVC stage `check`: params.yaml passes the configuration checks before any other stage runs.

`dvc exp run -S key=value` writes params.yaml itself (DVC composes conf/ with the override), so
the checks `python -m stylisticbias.configure compose` runs before it writes the file run here
too: every stage depends on this stage's stamp, so a bad value stops the run in one line
(exit 2) before any other stage starts. The stamp's bytes never change, so a re-run of this
stage invalidates no other stage.
"""

from pathlib import Path

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config, load_params, project_root
from stylisticbias.validate import validate_params

#: the stamp every other stage depends on (dvc.yaml); its content is constant
STAMP = Path("data/check/params.ok")
STAMP_TEXT = "params.yaml passed the configuration checks (pipelines/check.py)\n"


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    load_config()  # the typed specs: unknown keys, types, ranges
    validate_params(load_params())  # what needs more than the schema (configure compose's checks)
    stamp = project_root() / STAMP
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(STAMP_TEXT, encoding="utf-8")


if __name__ == "__main__":
    run(main)
