"""The benchmark protocol: one typed, frozen spec loaded from ``conf/benchmark/<name>.yaml``.

A *protocol* is everything that defines a measurement and that the code must not repeat: the
demographic grid and its observed marginals, the scenarios and their poles, the prompts, the
option letters, the order/label variants (App. C.2's ordering table), the attribute grid and the
parser rules that depend on the letters. ``params.yaml`` holds only the protocol's name
(``protocol: stylisticbias``); the YAML file is a DVC dependency of every stage that reads it.

:func:`load_benchmark` parses a file once (cached by path and content) and checks every key:
an unknown, misspelt or missing key fails in one line naming the file, the key and the valid
keys. :func:`benchmark_from_params` is what stages call. To add a protocol, copy
``conf/benchmark/stylisticbias.yaml`` (or ``tests/data/protocols/mini.yaml``, a small one)
and set ``protocol: <name>`` (docs/protocol.md, "Adding a protocol").
"""

from stylisticbias.benchmark.load import (
    PAPER_PROTOCOL,
    benchmark_from_params,
    benchmark_name,
    check_names,
    default_parser_rules,
    load_benchmark,
    load_protocol,
    protocol_path,
)
from stylisticbias.benchmark.parse import PROMPT_FIELDS, benchmark_from_config
from stylisticbias.benchmark.spec import (
    DEFAULT_TASK,
    DEMOGRAPHIC_AXES,
    POLES,
    Benchmark,
    ChoiceOption,
    Letter,
    NumericRange,
    Ordering,
    ParserRules,
    Pole,
    Protocol,
    Scenario,
    TaskScenario,
    VariationValue,
    select_ids,
    slug,
)
from stylisticbias.benchmark.task_scenarios import LAYOUTS, RANGE_RULES, TASK_PROMPT_FIELDS

__all__ = [
    "DEFAULT_TASK",
    "DEMOGRAPHIC_AXES",
    "LAYOUTS",
    "PAPER_PROTOCOL",
    "POLES",
    "PROMPT_FIELDS",
    "RANGE_RULES",
    "TASK_PROMPT_FIELDS",
    "Benchmark",
    "ChoiceOption",
    "Letter",
    "NumericRange",
    "Ordering",
    "ParserRules",
    "Pole",
    "Protocol",
    "Scenario",
    "TaskScenario",
    "VariationValue",
    "benchmark_from_config",
    "benchmark_from_params",
    "benchmark_name",
    "check_names",
    "default_parser_rules",
    "load_benchmark",
    "load_protocol",
    "protocol_path",
    "select_ids",
    "slug",
]
