"""Stage `calibrate`: simulated judge -> analysis -> reports/calibration.json (planted recovery).

Default: the pipeline's own procedural dataset and simulated scores (data/scores/model=MODEL/).
``--synthetic N`` calibrates on a synthetic N-face manifest instead.
"""

from stylisticbias.analysis.calibration import main

if __name__ == "__main__":
    raise SystemExit(main())
