"""DVC stage `annotate@PROTOCOL-ANNOTATOR`: the QA questions about every edit ->
data/<protocol>/annotations/NAME/.

Usage: ``python pipelines/annotate.py --protocol NAME ANNOTATOR`` (a key of params.yaml
``annotators``).
Resumes an interrupted run; answers are cached (docs/annotate.md).
"""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config


@stage
def main() -> None:
    """Entry point."""
    args = stage_arguments(__doc__, model=True)
    config = load_config()  # every section typed (annotators by their engine) first
    from stylisticbias.annotate.run import run_annotation

    run_annotation(config, args.model)


if __name__ == "__main__":
    run(main)
