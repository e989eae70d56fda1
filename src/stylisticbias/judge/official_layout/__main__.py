"""``python -m stylisticbias.judge.official_layout export|import`` (see :mod:`.cli`)."""

from stylisticbias.judge.official_layout.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
