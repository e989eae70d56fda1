"""Hydra multirun over the whole pipeline: ``python -m stylisticbias.sweep -m model=a,b ...``.

Each job of a sweep composes ``conf/sweep.yaml`` (the main ``config`` plus ONE judged model from
the ``model`` group), checks it, writes its own ``params.yaml`` into its job directory (every
``paths.*`` rewritten there) and runs the stage scripts ``pipelines/*.py`` on it as
subprocesses (``$STYLISTICBIAS_PARAMS``). Jobs with the same dataset configuration share one
dataset build. MLflow: one parent run per sweep, one child run per job (every run its stages
create nested under it), and a comparison run listing all jobs. See ``docs/sweeps.md``.

Modules: :mod:`.spec` (what a job runs: params in, params out), :mod:`.dataset` (the shared
dataset builds), :mod:`.stages` (running the stage scripts), :mod:`.runs` (MLflow runs),
:mod:`.callback` (sweep start/end), :mod:`.app` (the Hydra application and its CLI).
"""
