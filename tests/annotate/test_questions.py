"""Questions: JSON schema per kind, and every way a reply is kept invalid with its reason."""

from __future__ import annotations

import json

import pytest

from stylisticbias.annotate.questions import Question, canonical, extract_json, validate_reply

YN = Question("attribute", "yes_no", "Is it blonde?")
CAT = Question("colour", "categorical", "Which colour?", ("red", "blue", "green"))
MULTI = Question("parts", "multi_label", "Which parts?", ("wheel", "door", "roof"))
FREE = Question("discover", "free", "Which attributes distinguish these?")


@pytest.mark.parametrize(
    ("q", "reply", "answer"),
    [
        (YN, '{"answer": "yes"}', "yes"),
        (YN, 'Sure!\n```json\n{"answer": "no"}\n```', "no"),
        (CAT, '{"answer": "blue"}', "blue"),
        (MULTI, '{"answer": ["roof", "door"]}', ["roof", "door"]),
        (MULTI, '{"answer": []}', []),
        (
            FREE,
            '{"answer": [{"attribute": "body", "values": ["sedan", "suv"]}]}',
            [{"attribute": "body", "values": ["sedan", "suv"]}],
        ),
    ],
)
def test_valid_replies(q: Question, reply: str, answer: object) -> None:
    assert validate_reply(q, reply) == (answer, True, None)


@pytest.mark.parametrize(
    ("q", "reply", "refusal", "reason"),
    [
        (YN, '{"answer": "ye', None, "malformed_json"),
        (YN, "yes", None, "malformed_json"),
        (YN, '{"answer": "maybe"}', None, "outside_schema"),
        (YN, '{"answer": "yes", "why": "x"}', None, "outside_schema"),
        (CAT, '{"answer": "purple"}', None, "outside_schema"),
        (CAT, '{"colour": "red"}', None, "outside_schema"),
        (MULTI, '{"answer": ["roof", "roof"]}', None, "outside_schema"),
        (MULTI, '{"answer": "roof"}', None, "outside_schema"),
        (FREE, '{"answer": [{"attribute": "body", "values": ["sedan"]}]}', None, "outside_schema"),
        (YN, None, "I cannot help with that", "refusal"),
        (YN, '{"answer": "yes"}', "content policy", "refusal"),
        (YN, "I'm sorry, but I can't identify people.", None, "refusal"),
        (YN, "", None, "refusal"),
    ],
)
def test_invalid_replies_keep_their_reason(
    q: Question, reply: str | None, refusal: str | None, reason: str
) -> None:
    answer, valid, why = validate_reply(q, reply, refusal)
    assert answer is None and valid is False
    assert why is not None and why.split(":")[0] == reason


def test_schema_and_prompt() -> None:
    schema = CAT.schema()
    assert schema["properties"]["answer"]["enum"] == ["red", "blue", "green"]
    assert schema["additionalProperties"] is False
    assert '["red", "blue", "green"]' in CAT.prompt() and CAT.prompt().startswith("Which colour?")
    assert YN.choices == ("yes", "no") and CAT.choices == CAT.options and MULTI.choices == ()
    with pytest.raises(ValueError, match="kind"):
        Question("x", "ranking", "?")
    with pytest.raises(ValueError, match="options"):
        Question("x", "categorical", "?", ("only",))


def test_extract_and_canonical() -> None:
    assert extract_json('noise {"answer": {"a": 1}} trailing') == {"answer": {"a": 1}}
    with pytest.raises(ValueError):
        extract_json("no json here")
    assert canonical(["b", "a"]) == '["a", "b"]'
    assert json.loads(canonical({"b": 1, "a": 2})) == {"a": 2, "b": 1}
    assert canonical(None) is None
