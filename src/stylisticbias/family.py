"""Protocol families: what kind of measurement a protocol file declares (``family:``).

Every protocol file (``conf/benchmark/<name>.yaml``) names its family, a checked field:

- ``variation_shift``: the StylisticBias tables (base faces x single-attribute edits, phi and
  its shift per scenario);
- ``paired_variation``: one image per person before and after one edit (Beauty and the Bias);
- ``tasks``: task-typed questions (pairs, k-way choices, numbers, text-only: REFLECT, VIGNETTE);
- ``soda``: the generator audit of SODA (objects drawn for demographic groups; not judged).

A file without ``family:`` (an older user file) has its family inferred from its shape, with a
warning; an unknown family fails in one line naming the valid ones.
"""

from __future__ import annotations

from stylisticbias.errors import StylisticBiasError

#: Every family, in the order messages list them.
FAMILY_NAMES: tuple[str, ...] = ("variation_shift", "paired_variation", "tasks", "soda")


def check_family(value: object, where: str) -> str:
    """``value`` as a family name; anything else fails in one line naming the valid families."""
    if not isinstance(value, str) or value not in FAMILY_NAMES:
        raise StylisticBiasError(
            f"{where}: family: unknown family {value!r}; valid: {', '.join(FAMILY_NAMES)}"
        )
    return value
