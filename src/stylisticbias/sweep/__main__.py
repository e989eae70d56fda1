"""``python -m stylisticbias.sweep``: see :mod:`stylisticbias.sweep.app`."""

from stylisticbias.sweep.app import cli

if __name__ == "__main__":
    cli()
