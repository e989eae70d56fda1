"""The SODA family (``family: soda``, ``conf/benchmark/soda.yaml``): an audit of an image
generator by the attributes of the objects it draws for demographic groups. Nothing is judged:
its own stages (``pipelines/soda.py``, ``pipelines/generator_audit.py``;
:mod:`stylisticbias.soda`) run beside any judged protocol, and the track stage logs its audit
with the judged protocol's runs."""

from stylisticbias.family import Family

_NOT_JUDGED = "a SODA protocol is not judged (the soda stage audits a generator: soda.protocol)"

FAMILY = Family(
    name="soda",
    hooks={},
    lacks={
        stage: _NOT_JUDGED
        for stage in (
            "judge",
            "requests",
            "scenario",
            "scores",
            "analyze",
            "calibrate",
            "report",
            "track",
            "audit",
        )
    },
)
