"""Questions about an image, the JSON schema of each answer, and how a reply is validated.

Every question asks for a JSON object ``{"answer": ...}``:

* ``categorical``: one of ``options``;
* ``multi_label``: a list of distinct ``options`` (possibly empty);
* ``yes_no``: ``"yes"`` or ``"no"``;
* ``free``: attribute discovery (SODA's phase 1) -- a list of
  ``{"attribute": str, "values": [str, ...]}`` (at least two values each).

:func:`validate_reply` turns a raw reply into ``(answer, valid, reason)``: a refusal (flagged by
the server, or a reply that opens with a refusal phrase and holds no JSON), malformed JSON, and an
answer outside the schema are each kept as invalid with their reason, never dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema

from stylisticbias.schemas import ANNOTATION_INVALID_REASONS, ANNOTATION_KINDS

#: question kinds
KINDS = ANNOTATION_KINDS
#: reasons an answer is invalid
INVALID_REASONS = ANNOTATION_INVALID_REASONS
YES_NO = ("yes", "no")

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
_REFUSAL = re.compile(
    r"^\s*(i'?m sorry|i am sorry|sorry|i can(no|')t|i cannot|i won'?t|i am unable|i'm unable|"
    r"as an ai)\b",
    re.I,
)


@dataclass(frozen=True)
class Question:
    """One question asked of an image: ``id`` is unique within an image's questions.

    ``images``: how many images the request shows (2 for the identity check: base face first).
    """

    id: str
    kind: str
    text: str
    options: tuple[str, ...] = ()
    images: int = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"question {self.id}: kind {self.kind!r}; valid: {', '.join(KINDS)}")
        if self.kind in ("categorical", "multi_label") and len(self.options) < 2:
            raise ValueError(f"question {self.id}: a {self.kind} question needs >= 2 options")
        if self.images not in (1, 2):
            raise ValueError(f"question {self.id}: images must be 1 or 2")

    @property
    def choices(self) -> tuple[str, ...]:
        """The answers a distribution is given over (categorical and yes/no), else ()."""
        if self.kind == "yes_no":
            return YES_NO
        return self.options if self.kind == "categorical" else ()

    def schema(self) -> dict[str, Any]:
        """The JSON schema of a valid reply to this question."""
        if self.kind == "categorical":
            answer: dict[str, Any] = {"type": "string", "enum": list(self.options)}
        elif self.kind == "yes_no":
            answer = {"type": "string", "enum": list(YES_NO)}
        elif self.kind == "multi_label":
            answer = {
                "type": "array",
                "items": {"type": "string", "enum": list(self.options)},
                "uniqueItems": True,
            }
        else:
            answer = {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "attribute": {"type": "string", "minLength": 1},
                        "values": {
                            "type": "array",
                            "minItems": 2,
                            "items": {"type": "string", "minLength": 1},
                        },
                    },
                    "required": ["attribute", "values"],
                    "additionalProperties": False,
                },
            }
        return {
            "type": "object",
            "properties": {"answer": answer},
            "required": ["answer"],
            "additionalProperties": False,
        }

    def prompt(self) -> str:
        """The question text followed by the exact JSON the reply must be."""
        if self.kind == "yes_no":
            form = '{"answer": "yes"} or {"answer": "no"}'
        elif self.kind == "categorical":
            form = '{"answer": <one of ' + json.dumps(list(self.options)) + ">}"
        elif self.kind == "multi_label":
            form = '{"answer": [<any of ' + json.dumps(list(self.options)) + ">]}"
        else:
            form = '{"answer": [{"attribute": "<name>", "values": ["<value>", "<value>", ...]}]}'
        return f"{self.text}\nReply with JSON only, exactly in this form: {form}"


def extract_json(text: str) -> Any:
    """The JSON object of a reply (a fenced block, else the outermost ``{...}``); raises
    ``ValueError`` when there is none."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the reply")
    return json.loads(body[start : end + 1])


def validate_reply(
    question: Question, content: str | None, refusal: str | None = None
) -> tuple[Any, bool, str | None]:
    """``(answer, valid, reason)`` of a raw reply; ``reason`` names why an answer is invalid.

    ``reason`` is ``"refusal: ..."``, ``"malformed_json: ..."`` or ``"outside_schema: ..."``.
    """
    if refusal:
        return None, False, f"refusal: {refusal}"[:300]
    if content is None or not content.strip():
        return None, False, "refusal: empty reply"
    try:
        obj = extract_json(content)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        if _REFUSAL.match(content):
            return None, False, f"refusal: {content.strip()[:200]}"
        return None, False, f"malformed_json: {exc}"[:300]
    exc = jsonschema.exceptions.best_match(_validator(question).iter_errors(obj))
    if exc is not None:  # the error jsonschema.validate raises
        where = "/".join(str(p) for p in exc.absolute_path) or "reply"
        return None, False, f"outside_schema: {where}: {exc.message}"[:300]
    return obj["answer"], True, None


@lru_cache(maxsize=256)
def _validator(question: Question) -> Any:
    """A validator of ``question``'s reply schema, the schema checked once: what
    ``jsonschema.validate`` builds and checks against the meta-schema on every call (most of the
    time of validating a reply)."""
    schema = question.schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def canonical(answer: Any) -> str | None:
    """An answer as canonical JSON text (sorted keys; a multi-label answer sorted), or None."""
    if answer is None:
        return None
    if isinstance(answer, list) and all(isinstance(a, str) for a in answer):
        answer = sorted(answer)
    return json.dumps(answer, sort_keys=True, ensure_ascii=False)


def probabilities_json(probs: Mapping[str, float] | None) -> str | None:
    """A distribution over a question's choices as JSON text (None when the engine has none)."""
    if probs is None:
        return None
    return json.dumps({k: round(float(v), 12) for k, v in probs.items()}, sort_keys=True)
