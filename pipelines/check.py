"""DVC stage `check`: resolve params.yaml into the whole configuration, check it, and write what
each group of stages reads (data/config/, stylisticbias.stage_inputs).

params.yaml is an experiment's view (stylisticbias.params_view): the settings users sweep, as DVC's
Hydra integration composes them from conf/dvc/ on `dvc exp run -S ...`. This stage composes
conf/ with the view's choices and values (the checks `python -m stylisticbias.configure compose`
runs), so a bad value stops the run here in one line (exit 2) before any other stage starts,
and writes data/config/resolved.yaml, each protocol's job (data/config/<protocol>/resolved.yaml:
what that protocol's stages read, stylisticbias.protocols) and one file per group of stages
(settings + input hashes) that the group depends on. It runs on every `dvc repro`
(always_changed); a file whose content is unchanged invalidates nothing.

With $STYLISTICBIAS_PARAMS set (a sweep job's params file) it only checks that file.
"""

import os

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import (
    PARAMS_ENV,
    load_config,
    load_params,
    load_yaml_file,
    project_root,
)
from stylisticbias.errors import StylisticBiasError
from stylisticbias.params_view import view_conf_drift
from stylisticbias.protocols import jobs as protocol_jobs
from stylisticbias.spec.parse import config_from_params
from stylisticbias.stage_inputs import write_stage_inputs
from stylisticbias.validate import validate_params


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    if not os.environ.get(PARAMS_ENV):
        drift = view_conf_drift()
        if drift:
            raise StylisticBiasError(
                f"conf/dvc/ is out of date with conf/ ({', '.join(drift[:3])}"
                f"{', ...' if len(drift) > 3 else ''}): run `python -m stylisticbias.configure "
                "compose` (it regenerates conf/dvc/ and params.yaml)"
            )
    if os.environ.get(PARAMS_ENV):
        params = load_params()
        load_config()  # the typed specs: unknown keys, types, ranges
        validate_params(params)  # what needs more than the schema (configure compose's checks)
        return
    # always from params.yaml and conf/ (never a resolved file of an earlier run)
    view_file = project_root() / "params.yaml"
    view = load_yaml_file(view_file)
    params = load_params(view_file)
    jobs = protocol_jobs(view if isinstance(view, dict) else params, where=view_file.name)
    for job in jobs.values():  # every protocol's job: the typed specs, then the other checks
        config_from_params(job, where=view_file.name)
        validate_params(job)
    write_stage_inputs(params, project_root(), jobs)


if __name__ == "__main__":
    run(main)
