"""The report stage: figures (paper Figs. 2-8 and diagnostics), ``reports/README.md``, the
paper-comparison table and MLflow logging, all computed from the ``analyze`` stage's tables.

Entry point: :func:`stylisticbias.report.run.build_report` (``pipelines/report.py``).
"""
