"""The one exception type that user-facing entry points turn into a single clear line."""

from __future__ import annotations


class StylisticBiasError(Exception):
    """Bad input or configuration: the message names the file, row or key and the valid choices.

    Pipeline entry points catch it, log the message as one line and exit with status 2.
    """
