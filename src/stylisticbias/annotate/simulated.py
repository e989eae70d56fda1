"""A simulated annotator with planted failures and planted invalid replies (offline, exact).

Every decision is a hash of ``(seed, tag, image id[, question])`` mapped to ``[0, 1)``, so the
truth is known to the tests: :func:`planted_failure` says which edits the annotator sees as not
showing their value (``attribute``) or as another person (``identity``), and :func:`planted_invalid`
which replies are refusals, malformed JSON or outside the schema. Its categorical and yes/no
answers come with an exact distribution: ``confidence`` on its answer, the rest spread evenly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from stylisticbias.annotate.base import Annotator, record
from stylisticbias.annotate.items import AnnotationItem
from stylisticbias.annotate.questions import Question
from stylisticbias.spec.annotate import SimulatedAnnotatorSpec


def unit(seed: int, *parts: str) -> float:
    """A uniform number in [0, 1) from ``seed`` and ``parts`` (sha256)."""
    h = hashlib.sha256("\x1f".join([str(seed), *parts]).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64


def planted_failure(
    spec: SimulatedAnnotatorSpec, check: str, image_id: str, attribute: str = "", value: str = ""
) -> bool:
    """Whether the annotator sees the edit ``image_id`` as failing ``check``.

    ``attribute`` uses ``fail_by_value["Attribute=Value"]`` when set, else
    ``attribute_fail_rate``; ``identity`` uses ``identity_fail_rate``.
    """
    if check == "identity":
        rate = float(spec.identity_fail_rate)
    else:
        rate = float(dict(spec.fail_by_value).get(f"{attribute}={value}", spec.attribute_fail_rate))
    return (
        unit(spec.seed, f"fail:{'identity' if check == 'identity' else 'attribute'}", image_id)
        < rate
    )


def planted_invalid(spec: SimulatedAnnotatorSpec, image_id: str, question_id: str) -> str | None:
    """``"refusal"``, ``"malformed_json"``, ``"outside_schema"`` or None (a valid reply)."""
    u = unit(spec.seed, "invalid", image_id, question_id)
    edges = (
        ("refusal", spec.refusal_rate),
        ("malformed_json", spec.malformed_rate),
        ("outside_schema", spec.outside_rate),
    )
    acc = 0.0
    for kind, rate in edges:
        acc += float(rate)
        if u < acc:
            return kind
    return None


class SimulatedAnnotator(Annotator):
    """Truthful answers about an item's ``truth`` except the planted failures and replies."""

    engine = "simulated"

    def __init__(self, spec: SimulatedAnnotatorSpec) -> None:
        super().__init__(spec)
        self.spec: SimulatedAnnotatorSpec = spec

    def _answer(self, item: AnnotationItem, q: Question) -> Any:
        t = item.truth
        attribute, value = str(t.get("attribute", "")), str(t.get("value", ""))
        if q.kind == "yes_no":
            check = "identity" if q.id == "identity" else "attribute"
            failed = planted_failure(self.spec, check, item.image_id, attribute, value)
            return "no" if failed else "yes"
        if q.kind == "categorical":
            options = list(q.options)
            truth = str(t.get(q.id, value))
            if truth not in options:
                truth = options[0]
            if q.id == "attribute_value" and planted_failure(
                self.spec, "attribute", item.image_id, attribute, value
            ):
                return options[(options.index(truth) + 1) % len(options)]
            return truth
        if q.kind == "multi_label":
            return sorted(x for x in t.get(q.id, []) if x in q.options)
        return list(t.get(q.id, [{"attribute": "colour", "values": ["red", "blue"]}]))

    def _probs(self, q: Question, answer: Any) -> dict[str, float] | None:
        choices = q.choices
        if not choices:
            return None
        conf = float(self.spec.confidence)
        rest = (1.0 - conf) / (len(choices) - 1)
        return {c: conf if c == answer else rest for c in choices}

    def annotate(self, items: Sequence[AnnotationItem]) -> list[dict[str, Any]]:
        """One record per (item, question)."""
        out = []
        for item in items:
            for q in item.questions:
                bad = planted_invalid(self.spec, item.image_id, q.id)
                if bad == "refusal":
                    out.append(
                        record(self.name, self.engine, item, q, None, refusal="simulated refusal")
                    )
                    continue
                if bad == "malformed_json":
                    out.append(record(self.name, self.engine, item, q, '{"answer": "ye'))
                    continue
                if bad == "outside_schema":
                    content = json.dumps({"answer": "not one of the options", "note": 1})
                    out.append(record(self.name, self.engine, item, q, content))
                    continue
                answer = self._answer(item, q)
                content = json.dumps({"answer": answer})
                out.append(
                    record(self.name, self.engine, item, q, content, probs=self._probs(q, answer))
                )
        return out
