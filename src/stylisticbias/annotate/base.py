"""The annotator interface and the record every engine writes per (image, question)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from stylisticbias.annotate.items import AnnotationItem
from stylisticbias.annotate.questions import (
    Question,
    canonical,
    probabilities_json,
    validate_reply,
)


def record(
    annotator: str,
    engine: str,
    item: AnnotationItem,
    question: Question,
    content: str | None,
    refusal: str | None = None,
    probs: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """One ANNOTATIONS row: the raw reply, validated (invalid answers keep their reason).

    ``probs``: the engine's distribution over the answers, if it gives one."""
    answer, valid, reason = validate_reply(question, content, refusal)
    return {
        "image_id": item.image_id,
        "annotator": annotator,
        "engine": engine,
        "question_id": question.id,
        "kind": question.kind,
        "response": content,
        "answer": canonical(answer) if valid else None,
        "valid": bool(valid),
        "reason": reason,
        # an exact distribution is kept whatever the modal reply was (its invalid mass too)
        "probs": probabilities_json(probs),
    }


class Annotator(ABC):
    """Answers the questions of batches of images; ``spec`` is its typed annotator spec."""

    #: engine name written into the records
    engine: str = "annotator"

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.name = str(spec.name)

    @abstractmethod
    def annotate(self, items: Sequence[AnnotationItem]) -> list[dict[str, Any]]:
        """One record per (item, question), in item then question order."""

    def fingerprint(self) -> dict[str, Any]:
        """What decides the answers (the spec; a changed spec re-asks every question)."""
        return asdict(self.spec)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients and caches."""
