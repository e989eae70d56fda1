"""Judging engines: the interface (:mod:`.base`), the factory (:mod:`.factory`), one subpackage
per engine (:mod:`.hf`, :mod:`.simulated`, :mod:`.openai`).

Every engine promises the same thing: ``judge(items)`` returns one record per judgment cell with
the columns of :data:`stylisticbias.schemas.JUDGMENTS`, built from the shared protocol parts
(:mod:`stylisticbias.judge.protocol`), and never depends on batching, ranks or resuming. An
engine imports no other engine (an import-linter contract).
"""
