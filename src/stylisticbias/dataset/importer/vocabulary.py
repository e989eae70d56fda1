"""Map a source's spellings (attributes, values, demographics) to the benchmark's vocabulary.

Order of lookup: the alias table (``generator.aliases``), then the benchmark's own spelling,
then a case-insensitive match of the benchmark's value, its Table 12 label or its prompt
spelling (so the paper's release values such as ``Unnatural color`` or ``Neutral lipstick``,
which are the prompt spellings, need no alias). Anything else is *unmapped*: the import stops
with one line listing every unmapped spelling and the valid ones -- never a silent drop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark, VariationValue
from stylisticbias.dataset.importer.settings import WHERE, Alias
from stylisticbias.errors import StylisticBiasError

#: Marker of a spelling the alias table excludes on purpose (``to: null``).
EXCLUDED = object()


def _fold(text: str) -> str:
    return " ".join(str(text).split()).casefold()


@dataclass
class Vocabulary:
    """The benchmark's attributes, values and demographic grid plus the alias table."""

    benchmark: Benchmark
    aliases: tuple[Alias, ...] = ()
    unmapped: dict[tuple[str, str, str], str] = field(default_factory=dict)

    def attribute(self, raw: str, where: str) -> str | object | None:
        """Benchmark attribute for a source attribute name or feature key (None: unmapped)."""
        raw = str(raw).strip()
        for a in self.aliases:
            if a.field == "attribute" and a.source == raw:
                return EXCLUDED if a.to is None else self._known_attribute(a.to)
        by_exact = {v.attribute: v.attribute for v in self.benchmark.variations}
        by_exact.update({v.key: v.attribute for v in self.benchmark.variations})
        if raw in by_exact:
            return by_exact[raw]
        folded = {}
        for v in self.benchmark.variations:
            for s in (v.attribute, v.key, v.table12_category):
                folded.setdefault(_fold(s), v.attribute)
        if _fold(raw) in folded:
            return folded[_fold(raw)]
        self.unmapped.setdefault(("attribute", "", raw), where)
        return None

    def value(self, attribute: str, raw: str, where: str) -> VariationValue | object | None:
        """The benchmark's variation value of ``attribute`` for a source spelling."""
        raw = str(raw).strip()
        values = [v for v in self.benchmark.variations if v.attribute == attribute]
        keys = {attribute, values[0].key} if values else {attribute}
        for a in self.aliases:
            if (
                a.field == "value"
                and a.source == raw
                and (a.attribute is None or a.attribute in keys)
            ):
                if a.to is None:
                    return EXCLUDED
                for v in values:
                    if v.value == a.to:
                        return v
                raise StylisticBiasError(
                    f"{WHERE}: alias {raw!r} -> {a.to!r} names no value of {attribute!r}; "
                    f"valid: {', '.join(v.value for v in values)}"
                )
        for v in values:
            if v.value == raw:
                return v
        for v in values:
            if _fold(raw) in {_fold(v.value), _fold(v.label), _fold(v.prompt)}:
                return v
        self.unmapped.setdefault(("value", attribute, raw), where)
        return None

    def demographic(self, axis: str, raw: str) -> str | object:
        """The grid value of ``axis`` for a source spelling (unknown spellings come back as is,
        for the grid check to report)."""
        raw = str(raw).strip()
        for a in self.aliases:
            if a.field == axis and a.source == raw:
                return EXCLUDED if a.to is None else a.to
        grid = self.benchmark.demographics[axis]
        if raw in grid:
            return raw
        for g in grid:
            if _fold(g) == _fold(raw):
                return g
        return raw

    def _known_attribute(self, name: str) -> str:
        attrs = self.benchmark.attributes
        if name not in attrs:
            raise StylisticBiasError(
                f"{WHERE}: alias target attribute {name!r} is not a benchmark attribute; "
                f"valid: {', '.join(attrs)}"
            )
        return name

    def raise_unmapped(self) -> None:
        """One error listing every unmapped spelling (with the first file it occurs in)."""
        if not self.unmapped:
            return
        parts = []
        attrs = sorted({raw for (kind, _, raw) in self.unmapped if kind == "attribute"})
        if attrs:
            first = self.unmapped[("attribute", "", attrs[0])]
            valid = ", ".join(self.benchmark.attributes)
            keys = ", ".join(dict.fromkeys(v.key for v in self.benchmark.variations))
            parts.append(
                f"attribute(s) {', '.join(map(repr, attrs))} (first in {first}); valid: {valid} "
                f"(or feature keys {keys})"
            )
        by_attr: dict[str, list[str]] = {}
        for kind, attr, raw in sorted(self.unmapped):
            if kind == "value":
                by_attr.setdefault(attr, []).append(raw)
        for attr, raws in by_attr.items():
            first = self.unmapped[("value", attr, raws[0])]
            valid = ", ".join(v.value for v in self.benchmark.variations if v.attribute == attr)
            parts.append(
                f"{attr} value(s) {', '.join(map(repr, raws))} (first in {first}); valid: {valid}"
            )
        raise StylisticBiasError(
            f"import: unmapped spelling(s) -- {'; '.join(parts)}. Add them to the alias table "
            f"({WHERE}: generator.aliases, `to: null` excludes a value on purpose)"
        )


__all__ = ["DEMOGRAPHIC_AXES", "EXCLUDED", "Vocabulary"]
