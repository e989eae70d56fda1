"""One registry class for every name-keyed registry of the library (engines, generators, task
types, table and figure registries, protocol families ...).

A :class:`Registry` maps names to entries. An entry is either the object itself or a reference
``"package.module:attr"`` (a string), imported on first use and kept: a registry of plug-ins
(the protocol families) names their packages without importing them, so a module that looks one
up imports only the one it uses. Every lookup of an unknown name fails in one line::

    unknown <what> 'x'; valid: a, b, c

(prefixed with ``where: `` when the caller says where the name came from). The error is a
:class:`~stylisticbias.errors.StylisticBiasError` and a :class:`KeyError`, so ``in``, ``get``
and ``try: ... except KeyError`` work as on a dict. The registry is a mutable mapping (tests
register a stand-in with ``monkeypatch.setitem``).

:data:`REFERENCE` matches a reference string: tools that follow imports statically (the stage
inputs' code closure, the architecture test) read references from the source with it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, Generic, TypeVar

from stylisticbias.errors import StylisticBiasError

T = TypeVar("T")

#: a reference to a module attribute: ``"stylisticbias.x.y:attr"`` (attr may be dotted)
REFERENCE = re.compile(r"^(stylisticbias(?:\.\w+)+):(\w+(?:\.\w+)*)$")


class UnknownName(StylisticBiasError, KeyError):
    """A name a registry does not hold (one line naming the valid names)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def resolve(reference: str) -> Any:
    """The object ``"package.module:attr"`` names (the module imported if it is not yet)."""
    match = REFERENCE.match(reference)
    if match is None:
        raise StylisticBiasError(
            f"registry reference {reference!r}: expected 'stylisticbias.<module>:<attribute>'"
        )
    obj: Any = importlib.import_module(match.group(1))
    for part in match.group(2).split("."):
        obj = getattr(obj, part)
    return obj


class Registry(MutableMapping[str, T], Generic[T]):
    """Names -> entries (objects, or ``"module:attr"`` references resolved on first use).

    ``what`` names an entry in messages (``engine``, ``task type``, ``family`` ...).
    """

    def __init__(self, what: str, entries: Mapping[str, T | str] | None = None) -> None:
        self.what = what
        self._entries: dict[str, T | str] = dict(entries or {})
        self._resolved: dict[str, T] = {}

    # ---- the one lookup --------------------------------------------------------------------
    def unknown(self, name: object, where: str = "") -> UnknownName:
        """The error for a name this registry does not hold."""
        head = f"{where}: " if where else ""
        valid = ", ".join(self._entries) or "none"
        return UnknownName(f"{head}unknown {self.what} {name!r}; valid: {valid}")

    def lookup(self, name: object, where: str = "") -> T:
        """The entry ``name`` (a reference imported now); unknown: one line naming the valid."""
        if not isinstance(name, str) or name not in self._entries:
            raise self.unknown(name, where)
        if name not in self._resolved:
            entry = self._entries[name]
            self._resolved[name] = resolve(entry) if isinstance(entry, str) else entry
        return self._resolved[name]

    @property
    def names(self) -> tuple[str, ...]:
        """Every name, in registration order."""
        return tuple(self._entries)

    def reference(self, name: str) -> str | None:
        """The ``module:attr`` reference of a lazy entry (None for an object registered as
        itself); the registry is not imported from."""
        entry = self._entries.get(name)
        return entry if isinstance(entry, str) else None

    # ---- the mapping ---------------------------------------------------------------------
    def __getitem__(self, name: str) -> T:
        return self.lookup(name)

    def __setitem__(self, name: str, entry: T | str) -> None:
        self._entries[name] = entry
        self._resolved.pop(name, None)

    def __delitem__(self, name: str) -> None:
        if name not in self._entries:
            raise self.unknown(name)
        del self._entries[name]
        self._resolved.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self._entries)})"
