"""Optional sections of a protocol file beyond the StylisticBias paper's own.

A protocol file (``conf/benchmark/<name>.yaml``, :mod:`stylisticbias.benchmark`) may annotate
its scenarios and declare how its answers are analysed and who may see its images. These
sections are generic: each is a small frozen spec, checked key by key with one-line errors, and
absent sections leave a protocol exactly as before.

- per scenario: ``subcategory`` (the results tables' grouping), ``tags`` (e.g. ``halo``: the
  scenarios a statistic restricts itself to) and ``stereotype`` (the demographic group each pole
  is stereotyped towards, e.g. ``{axis: gender, positive: male, negative: female}``);
- ``statistics``: which statistics suite the ``analyze``/``report`` stages run and its settings
  (:class:`StatisticsSpec`); absent: the StylisticBias tables;
- ``licence``: whether the images may be sent to remote API models (:class:`LicenceSpec`);
- ``seeds``: the seeds the paper judged with (an experiment sets ``judge.seeds`` to them);
- ``option_case``: how the poles are written into the forced-choice prompt (``as_written`` or
  ``lower``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stylisticbias.errors import StylisticBiasError

#: Statistics suites a protocol may name (``statistics.suite``).
STATISTICS_SUITES: tuple[str, ...] = ("variation_shift", "paired_variation")
OPTION_CASES: tuple[str, ...] = ("as_written", "lower")
_STEREOTYPE_KEYS = ("axis", "positive", "negative")
_STATISTICS_KEYS = ("suite", "alpha", "variation", "halo_tag", "axes", "group_tests")
_VARIATION_KEYS = ("attribute", "value", "base_label", "label")
_LICENCE_KEYS = ("api_models", "note")
API_POLICIES: tuple[str, ...] = ("allowed", "forbidden")


@dataclass(frozen=True)
class StereotypeTarget:
    """The demographic group each pole of a scenario is stereotyped towards.

    ``axis`` is a demographic axis of the protocol (a column of the faces manifest);
    ``positive`` the group of the stereotyped (counted) pole, ``negative`` the other pole's
    group or ``""`` when the scenario contrasts one group with all others.
    """

    axis: str
    positive: str
    negative: str = ""


@dataclass(frozen=True)
class VariationContrast:
    """The one variation the statistics compare with the base images (e.g. beautified)."""

    attribute: str
    value: str
    base_label: str = "original"  # how tables name the base images
    label: str = "variation"  # how tables name the variation's images


@dataclass(frozen=True)
class StatisticsSpec:
    """How a protocol's answers are analysed (``statistics:`` of the protocol file).

    ``suite``: ``variation_shift`` (the StylisticBias tables) or ``paired_variation``
    (Kruskal-Wallis of phi between the base images and one variation per scenario, a halo rate
    over the scenarios tagged ``halo_tag``, demographic Kruskal-Wallis tests per scenario and
    the subgroup comparison of the variation's effect by Wilcoxon signed-rank tests).
    ``axes``: display name -> faces-manifest column (e.g. ``race: ethnicity``), in table order.
    ``group_tests``: which display axes the per-scenario demographic tests use.
    """

    suite: str = "variation_shift"
    alpha: float = 0.01
    variation: VariationContrast | None = None
    halo_tag: str = ""
    axes: tuple[tuple[str, str], ...] = ()
    group_tests: tuple[str, ...] = ()

    def column(self, axis: str) -> str:
        """The faces-manifest column of a display axis."""
        for name, col in self.axes:
            if name == axis:
                return col
        valid = ", ".join(n for n, _ in self.axes)
        raise StylisticBiasError(f"statistics.axes: unknown axis {axis!r}; valid: {valid}")


@dataclass(frozen=True)
class LicenceSpec:
    """What the licence of a protocol's images allows (``licence:`` of the protocol file).

    ``api_models: forbidden``: the images may not be sent to a remote API model; an ``openai``
    engine whose endpoint is not on the loopback or a private network refuses to run unless
    the model's ``engine.allow_remote_licensed_images`` is set explicitly.
    """

    api_models: str = "allowed"
    note: str = ""

    @property
    def forbids_api(self) -> bool:
        """Whether remote API models are forbidden."""
        return self.api_models == "forbidden"


def check_keys(
    node: Any, where: str, allowed: Sequence[str], required: Sequence[str] = ()
) -> Mapping[str, Any]:
    """``node`` as a mapping whose keys are all in ``allowed`` and include ``required``."""
    if not isinstance(node, Mapping):
        raise StylisticBiasError(f"{where}: expected a mapping with keys {', '.join(allowed)}")
    valid = ", ".join(allowed)
    for key in node:
        if key not in allowed:
            raise StylisticBiasError(f"{where}: unknown key {key!r}; valid keys: {valid}")
    for key in required:
        if key not in node:
            raise StylisticBiasError(f"{where}: missing key {key!r}; valid keys: {valid}")
    return node


def non_empty_list(node: Any, where: str) -> list[Any]:
    """``node`` as a non-empty list (one line naming ``where`` otherwise)."""
    if not isinstance(node, list) or not node:
        raise StylisticBiasError(f"{where}: expected a non-empty list")
    return node


def integer(value: Any, where: str) -> int:
    """``value`` as an int (not a bool; one line naming ``where`` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise StylisticBiasError(f"{where}: {value!r} is not an integer")
    return value


def _choice(value: Any, valid: Sequence[str], where: str) -> str:
    text = str(value)
    if text not in valid:
        raise StylisticBiasError(f"{where}: {text!r}; valid: {', '.join(valid)}")
    return text


def parse_stereotype(
    node: Any, demographics: Mapping[str, Sequence[str]], where: str
) -> StereotypeTarget | None:
    """A scenario's ``stereotype`` (or None), its groups checked against the axis's values."""
    if node is None:
        return None
    node = check_keys(node, where, _STEREOTYPE_KEYS, ("axis", "positive"))
    axis = _choice(node["axis"], tuple(demographics), f"{where}.axis")
    values = tuple(str(v) for v in demographics[axis])
    positive = _choice(node["positive"], values, f"{where}.positive")
    negative = node.get("negative")
    neg = "" if negative is None else _choice(negative, values, f"{where}.negative")
    return StereotypeTarget(axis, positive, neg)


def parse_tags(node: Any, where: str) -> tuple[str, ...]:
    """A scenario's ``tags``: a list of names."""
    if node is None:
        return ()
    if not isinstance(node, list) or any(not isinstance(t, str) or not t for t in node):
        raise StylisticBiasError(f"{where}: expected a list of names, got {node!r}")
    return tuple(node)


def parse_statistics(
    node: Any,
    demographics: Mapping[str, Sequence[str]],
    variations: Sequence[tuple[str, str]],
    tags: Sequence[str],
    where: str,
) -> StatisticsSpec:
    """The ``statistics`` section; absent: the StylisticBias suite."""
    if node is None:
        return StatisticsSpec()
    node = check_keys(node, where, _STATISTICS_KEYS, ("suite",))
    suite = _choice(node["suite"], STATISTICS_SUITES, f"{where}.suite")
    alpha = node.get("alpha", 0.01)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise StylisticBiasError(f"{where}.alpha: {alpha!r} is not a number in (0, 1)")
    contrast = None
    if node.get("variation") is not None:
        v = check_keys(
            node["variation"], f"{where}.variation", _VARIATION_KEYS, ("attribute", "value")
        )
        pair = (str(v["attribute"]), str(v["value"]))
        if pair not in variations:
            valid = ", ".join(f"{a}/{x}" for a, x in variations)
            raise StylisticBiasError(
                f"{where}.variation: {pair[0]}/{pair[1]} is not a variation value; valid: {valid}"
            )
        contrast = VariationContrast(
            *pair, str(v.get("base_label", "original")), str(v.get("label", "variation"))
        )
    halo = str(node.get("halo_tag") or "")
    if halo and halo not in tags:
        raise StylisticBiasError(
            f"{where}.halo_tag: no scenario is tagged {halo!r}; tags in use: "
            + (", ".join(sorted(set(tags))) or "none")
        )
    axes_node = node.get("axes") or {}
    if not isinstance(axes_node, Mapping):
        raise StylisticBiasError(f"{where}.axes: expected a mapping display name -> axis")
    axes = tuple(
        (str(k), _choice(col, tuple(demographics), f"{where}.axes.{k}"))
        for k, col in axes_node.items()
    )
    tests_node = node.get("group_tests") or []
    if not isinstance(tests_node, list):
        raise StylisticBiasError(f"{where}.group_tests: expected a list of axes")
    group_tests = tuple(
        _choice(t, tuple(n for n, _ in axes), f"{where}.group_tests") for t in tests_node
    )
    if suite == "paired_variation" and contrast is None:
        raise StylisticBiasError(f"{where}: suite paired_variation needs 'variation'")
    return StatisticsSpec(suite, float(alpha), contrast, halo, axes, group_tests)


def parse_licence(node: Any, where: str) -> LicenceSpec:
    """The ``licence`` section; absent: API models allowed."""
    if node is None:
        return LicenceSpec()
    node = check_keys(node, where, _LICENCE_KEYS, ("api_models",))
    return LicenceSpec(
        _choice(node["api_models"], API_POLICIES, f"{where}.api_models"),
        str(node.get("note") or ""),
    )


def parse_seeds(node: Any, where: str) -> tuple[int, ...]:
    """The ``seeds`` the paper judged with (a list of integers; may be absent)."""
    if node is None:
        return ()
    if (
        not isinstance(node, list)
        or not node
        or any(isinstance(s, bool) or not isinstance(s, int) for s in node)
    ):
        raise StylisticBiasError(f"{where}: expected a non-empty list of integers, got {node!r}")
    return tuple(node)


def parse_option_case(node: Any, where: str) -> str:
    """``option_case``: how poles are written into the forced-choice prompt."""
    return "as_written" if node is None else _choice(node, OPTION_CASES, where)


def apply_case(text: str, case: str) -> str:
    """A pole's text as the prompt writes it."""
    return text.lower() if case == "lower" else text


def parse_counterfactual(
    node: Any, demographics: Mapping[str, Sequence[str]], where: str
) -> tuple[str, ...]:
    """The ``counterfactual`` section: ``axes``, the demographic axes edited within each source
    photo (each with two or more values in the protocol); absent: no counterfactual sets."""
    if node is None:
        return ()
    w = f"{where}: counterfactual"
    node = check_keys(node, w, ("axes",), ("axes",))
    axes = tuple(str(a) for a in non_empty_list(node["axes"], f"{w}.axes"))
    for a in axes:
        if a not in demographics:
            raise StylisticBiasError(
                f"{w}.axes: unknown axis {a!r}; valid: {', '.join(demographics)}"
            )
        if len(demographics[a]) < 2:
            raise StylisticBiasError(
                f"{w}.axes: {a} has one value in demographics.{a}; an edited axis needs two or more"
            )
    if len(set(axes)) != len(axes):
        raise StylisticBiasError(f"{w}.axes: duplicate axes {list(axes)}")
    return axes
