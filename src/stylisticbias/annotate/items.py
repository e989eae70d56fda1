"""The images an annotator is asked about and the questions asked of each.

For QA of our own edits (:func:`qa_items`), every rendered variation is one item:

* ``attribute`` (yes/no): does the image show the requested value?
* ``identity`` (yes/no, two images, the base face first): is it the same person?
* ``attribute_value`` (categorical over the attribute's values for that gender): which value
  is shown? (engines that give probabilities give the exact distribution)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.annotate.questions import Question
from stylisticbias.benchmark import Benchmark
from stylisticbias.output_paths import safe_member


@dataclass(frozen=True)
class AnnotationItem:
    """One image and its questions; ``base_path`` is shown first by two-image questions.

    ``truth`` holds what the image is meant to show (for the simulated annotator and QA):
    ``attribute``, ``value``, ``options`` of the categorical question, ...
    """

    image_id: str
    path: str
    questions: tuple[Question, ...]
    base_path: str | None = None
    sha256: str = ""  # of the image file: a changed image is asked again
    truth: Mapping[str, Any] = field(default_factory=dict)


def attribute_question(attribute: str, prompt: str) -> Question:
    """Does the image show ``attribute``: ``prompt``? (yes/no)."""
    return Question(
        "attribute",
        "yes_no",
        f'Look at the person in this image. Is their {attribute.lower()} "{prompt}"?',
    )


def identity_question(attribute: str) -> Question:
    """Is the second image the same person as the first, apart from one attribute? (yes/no)."""
    return Question(
        "identity",
        "yes_no",
        "The first image shows a person; the second image is an edited picture. Apart from "
        f"their {attribute.lower()}, is the second image the same person as the first "
        "(same face, age, gender and ethnicity)?",
        images=2,
    )


def attribute_value_question(attribute: str, options: Sequence[str]) -> Question:
    """Which value of ``attribute`` does the image show? (categorical over ``options``)."""
    return Question(
        "attribute_value",
        "categorical",
        f"Look at the person in this image. Which of these best describes their "
        f"{attribute.lower()}?",
        tuple(options),
    )


def qa_items(
    faces: pd.DataFrame,
    variations: pd.DataFrame,
    faces_dir: Path,
    variations_dir: Path,
    benchmark: Benchmark,
    questions: Sequence[str],
    data: Path | None = None,
) -> list[AnnotationItem]:
    """One item per rendered variation (sorted by image id) with the chosen QA questions."""
    base = {
        str(r["face_id"]): str(safe_member(faces_dir, str(r["path"]), f"face {r['face_id']}", data))
        for r in faces.to_dict("records")
        if r["status"] == "ok"
    }
    items = []
    for v in variations.sort_values("image_id").to_dict("records"):
        if v["status"] != "ok" or str(v["face_id"]) not in base:
            continue
        var = benchmark.variation(str(v["attribute"]), str(v["value"]))
        options = [
            o.value
            for o in benchmark.variations_for(str(v["gender"]))
            if o.attribute == var.attribute
        ]
        asked = []
        for q in questions:
            if q == "attribute":
                asked.append(attribute_question(var.attribute, var.prompt))
            elif q == "identity":
                asked.append(identity_question(var.attribute))
            elif len(options) >= 2:  # attribute_value needs a choice
                asked.append(attribute_value_question(var.attribute, options))
        path = safe_member(variations_dir, str(v["path"]), f"variation {v['image_id']}", data)
        items.append(
            AnnotationItem(
                image_id=str(v["image_id"]),
                path=str(path),
                questions=tuple(asked),
                base_path=base[str(v["face_id"])],
                sha256=str(v["sha256"]),
                truth={"attribute": var.attribute, "value": var.value, "options": options},
            )
        )
    return items


def items_digest(items: Sequence[AnnotationItem]) -> str:
    """A hash of what is asked (ids, questions, truth; not the file paths)."""
    h = hashlib.sha256()
    for it in items:
        qs = [[q.id, q.kind, q.text, list(q.options), q.images] for q in it.questions]
        h.update(json.dumps([it.image_id, it.sha256, qs, dict(it.truth)], sort_keys=True).encode())
    return h.hexdigest()
