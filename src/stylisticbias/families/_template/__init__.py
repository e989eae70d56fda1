"""A protocol family to copy (``family: <name>``); it is never a protocol's family itself.

1. ``cp -r src/stylisticbias/families/_template src/stylisticbias/families/<name>`` and
   replace ``_template`` by ``<name>`` in the copy (the references below name their module).
2. Add ``<name>`` to :data:`stylisticbias.family.FAMILY_NAMES` and to the import-linter
   ``families-independent`` contract (pyproject.toml); the family registry finds the package.
3. Declare every stage once in :data:`FAMILY`: a hook (``"module:attr"``, imported when its
   stage runs; the call of each: :data:`stylisticbias.family.HOOKS`) or a lack (why, said once
   when the stage runs). Shared hooks are fine: a family judged and scored as the forced-choice
   protocols are names ``judge.run`` and ``scores`` as below.
4. Its code lives here (a module or subpackage per stage, as ``families/tasks/``), its tests in
   ``tests/families/<name>/`` (unique basenames), its planted effects in ``conf/planted/`` or
   here; it imports shared modules only, never another family.
5. Fill in ``README.md`` (what it measures, its tables and statistics, how to add a protocol,
   the validity checklist) and add the family's row to ``tests/families/test_seam.py``.
"""

from stylisticbias.family import Family

FAMILY = Family(
    name="_template",
    hooks={
        "judge": "stylisticbias.judge.run:judge_forced_choice",
        "requests": "stylisticbias.judge.batch:forced_choice_requests",
        "scenario": "stylisticbias.benchmark.spec:Benchmark.scenario",
        "scores": "stylisticbias.scores:write_forced_choice_scores",
        "analyze": "stylisticbias.families._template.stage:analyze",
        "report": "stylisticbias.families._template.stage:report",
    },
    lacks={
        "calibrate": "the family has no planted-effect calibration yet (see its README)",
        "track": "the family's report is not logged to MLflow yet (reports/ holds it)",
        "audit": "the family says nothing on the bias cards yet (its report holds its findings)",
    },
)
