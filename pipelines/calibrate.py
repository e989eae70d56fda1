"""Stage `calibrate@PROTOCOL`: simulated judge -> analysis -> reports/<protocol>/calibration.json
(planted recovery). Usage: ``python pipelines/calibrate.py --protocol NAME``.

Default: the pipeline's own procedural dataset and simulated scores
(data/<protocol>/scores/model=MODEL/).
``--synthetic N`` calibrates on a synthetic N-face manifest instead.
"""

from stylisticbias.analysis.calibration import main

if __name__ == "__main__":
    raise SystemExit(main())
