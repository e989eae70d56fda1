"""Stage `calibrate`: simulated judge -> analysis -> reports/calibration.json (planted recovery).

Usage: ``python pipelines/calibrate.py [--faces N]``.
"""

from stylisticbias.analysis.calibration import main

if __name__ == "__main__":
    raise SystemExit(main())
