"""The simulated engine (``engine=simulated``): planted effects, no pixels read.

It promises records drawn from a known probability model (the planted effects of
``conf/planted/*.yaml``) that depend only on (model seed, image, scenario, ordering, seed), and
the exact expected phi and delta they imply (:func:`~.ground_truth.planted_truth`), so the
calibrate stage can check that the analysis recovers them. Modules: :mod:`.engine` (the
:class:`~.engine.SimulatedJudgeEngine`), :mod:`.planted` (the planted-effects file and a model's
knobs), :mod:`.model` (the vectorised probability model) and :mod:`.ground_truth`.
"""
