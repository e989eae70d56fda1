"""Typed settings of ``generator: import`` (``conf/generator/import.yaml``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from stylisticbias.dataset.regular_files import DEFAULT_MAX_IMAGE_BYTES
from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.generators import ImportSpec

LAYOUTS = ("release", "table", "pairs", "counterfactual")
MATERIALIZE = ("reference", "copy", "hardlink")
POLICIES = ("stop", "skip")
ALIAS_FIELDS = ("attribute", "value", "age", "gender", "ethnicity", "body_type")
WHERE = "conf/generator/import.yaml"


@dataclass(frozen=True)
class Alias:
    """One spelling of the source mapped to the benchmark's vocabulary.

    ``field`` is ``attribute`` (a source attribute name or feature key -> a benchmark attribute),
    ``value`` (a variation value, optionally only for one ``attribute``), or a demographic axis.
    ``to`` = None excludes the source value on purpose (its rows are listed as skipped).
    """

    field: str
    source: str
    to: str | None
    attribute: str | None = None


@dataclass(frozen=True)
class ImportSettings:
    """Where an existing image set is and how it enters ``data/faces`` and ``data/variations``.

    :param layout: ``release`` (the paper's folder-per-face layout with ``_metadata.json``
        files) or ``table`` (a CSV/Parquet manifest)
    :param source: the folder (release) or the table file, relative to the project root
    :param materialize: ``reference`` (manifests point at the source files in place; the source
        must lie inside the data root), ``copy`` or ``hardlink`` into ``data/``
    :param on_error: ``stop`` (first bad row ends the import, nothing written) or ``skip``
        (bad rows are left out and listed with their reason)
    :param aliases: source spellings -> benchmark vocabulary
    :param watch_dir: the folder the faces/variations DVC stages depend on (``dvc.yaml``)
    :param pattern: layout ``counterfactual`` without a manifest: how an edit's file stem
        spells its demographics (``{ethnicity}_{gender}``; :mod:`.edit_sets`)
    :param max_image_bytes: the largest image file the import reads; a larger one is a
        ``too_large`` problem, decided by ``stat`` before the file is opened
        (:mod:`stylisticbias.dataset.regular_files`)
    """

    layout: str
    source: str
    materialize: str = "copy"
    on_error: str = "stop"
    aliases: tuple[Alias, ...] = ()
    watch_dir: str = "data/import"
    pattern: str | None = None
    max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES

    @classmethod
    def from_spec(cls, spec: ImportSpec) -> ImportSettings:
        """Build from the typed ``generator`` section (``Config.generator``)."""
        if not isinstance(spec, ImportSpec):
            raise StylisticBiasError(
                f"{WHERE}: the generator section is {type(spec).__name__}, not generator=import"
            )
        return cls.from_config(asdict(spec))

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> ImportSettings:
        """Build from the ``generator`` section; a bad key or value is one clear error."""
        known = {
            "_target_",
            "name",
            "layout",
            "source",
            "materialize",
            "on_error",
            "aliases",
            "watch_dir",
            "pattern",
            "max_image_bytes",
            "workers",
            "license",  # read by the release (stylisticbias.release), not by the import
        }
        extra = sorted(set(cfg) - known)
        if extra:
            raise StylisticBiasError(
                f"{WHERE}: unknown key(s) {', '.join(extra)}; valid: {', '.join(sorted(known))}"
            )
        for key, valid in (
            ("layout", LAYOUTS),
            ("materialize", MATERIALIZE),
            ("on_error", POLICIES),
        ):
            val = cfg.get(key, valid[0] if key != "materialize" else "copy")
            if val not in valid:
                raise StylisticBiasError(
                    f"{WHERE}: generator.{key} {val!r}; valid: {', '.join(valid)}"
                )
        max_bytes = cfg.get("max_image_bytes")
        if max_bytes is None:
            max_bytes = DEFAULT_MAX_IMAGE_BYTES
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise StylisticBiasError(
                f"{WHERE}: generator.max_image_bytes {max_bytes!r}; must be a whole number of "
                f"bytes >= 1 (default {DEFAULT_MAX_IMAGE_BYTES:,} = 64 MiB)"
            )
        source = cfg.get("source")
        if not source:
            raise StylisticBiasError(
                f"{WHERE}: generator.source is empty; set it to the image folder (layout "
                "release) or the CSV/Parquet manifest (layout table), e.g. "
                "`generator.source=data/import/release`"
            )
        return cls(
            layout=str(cfg.get("layout", "release")),
            source=str(source),
            materialize=str(cfg.get("materialize", "copy")),
            on_error=str(cfg.get("on_error", "stop")),
            aliases=parse_aliases(cfg.get("aliases") or ()),
            watch_dir=str(cfg.get("watch_dir", "data/import")),
            pattern=str(cfg["pattern"]) if cfg.get("pattern") else None,
            max_image_bytes=max_bytes,
        )


def parse_aliases(items: Sequence[Any]) -> tuple[Alias, ...]:
    """``[{field, from, to, attribute?}, ...]`` -> :class:`Alias` tuples (checked)."""
    out = []
    for i, item in enumerate(items):
        where = f"{WHERE}: generator.aliases[{i}]"
        if not isinstance(item, Mapping) or "from" not in item or "to" not in item:
            raise StylisticBiasError(
                f"{where}: expected a mapping with keys field, from, to (and attribute for a "
                f"value alias); got {item!r}"
            )
        fld = str(item.get("field", "value"))
        if fld not in ALIAS_FIELDS:
            raise StylisticBiasError(f"{where}: field {fld!r}; valid: {', '.join(ALIAS_FIELDS)}")
        extra = sorted(set(item) - {"field", "from", "to", "attribute"})
        if extra:
            raise StylisticBiasError(
                f"{where}: unknown key(s) {', '.join(extra)}; valid: field, from, to, attribute"
            )
        to = item["to"]
        attr = item.get("attribute")
        out.append(
            Alias(
                fld,
                str(item["from"]),
                None if to is None else str(to),
                None if attr is None else str(attr),
            )
        )
    return tuple(out)


def is_import(generator: Any) -> bool:
    """Whether the ``generator`` section (its spec, or the mapping of a plug-in generator or of
    compose time) selects ``generator: import``."""
    if isinstance(generator, ImportSpec):
        return True
    target = generator.get("_target_", "") if isinstance(generator, Mapping) else ""
    return str(target).endswith("importer.ImportSettings")
