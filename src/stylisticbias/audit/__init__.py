"""The audit: every protocol's headline findings about each judged model, in one place.

The ``audit`` stage (``python pipelines/audit.py``, :func:`stylisticbias.audit.stage.write_audit`)
runs after every protocol's report and writes ``<paths.audit>`` (``reports/audit/``):

- ``<model>.md``: the model's **bias card** -- per protocol its title, what it measures, its
  headline findings in plain words with their intervals and units (each family's ``audit`` hook,
  :mod:`stylisticbias.report.audit_findings`), a SIMULATED mark for a simulated judge and a link
  to the protocol's report;
- ``leaderboard.csv`` / ``leaderboard.html``: the cross-protocol leaderboard, models x
  protocols, each cell the protocol's headline number with its interval;
- ``README.md``: how to read the audit, the leaderboard, the cards, the protocols' reports and
  the generator audit (SODA);
- ``findings.json``: every finding, as the ``track`` stage logs it to MLflow
  (:mod:`stylisticbias.report.track`).

Every file is byte-deterministic (no time, no version): the directory is committed.
"""
