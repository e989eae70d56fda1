"""DVC stage `generator_audit`: the variation generator's own bias -> data/qa/."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config, load_params
from stylisticbias.soda.generator_audit import build_generator_audit


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    load_config()  # the typed check of every section, before anything runs
    build_generator_audit(load_params())


if __name__ == "__main__":
    run(main)
