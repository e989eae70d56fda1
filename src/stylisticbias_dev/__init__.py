"""Development-only code: tiny test checkpoints, full-size random-weight builders, benchmarks.

Not shipped in the wheel (``pyproject.toml`` packages only ``stylisticbias``) and never imported
by it (an import-linter contract): the dev checkout puts ``src/`` on the path (pytest's
``pythonpath``, the Makefile), so ``python -m stylisticbias_dev.tiny --all`` and
``python -m stylisticbias_dev.bench.<name>`` run from the repository root.
"""
