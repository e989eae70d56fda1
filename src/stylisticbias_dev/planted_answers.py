"""Planted answer trees for served exact-mode checks: realistic forced-choice answer
distributions as next-token tables the loopback server answers from
(:mod:`stylisticbias_dev.openai_loopback`, ``planted_logprobs``), with their true verdict
distribution by brute-force enumeration.

A tree is drawn per seed. At the judge's temperature its answers are: well-formed letters
(``A``, ``B``, ``(A)``, ``**B**``, ``A.`` ... with a few trailing remarks) with total mass
``well_formed`` (0.95-0.99 by default), refusals (``I cannot ...``, ``Sorry, ...``,
``As an AI ...``) and chatter that runs to the token limit, some of it naming a letter
(``Based on the image, (B) ...``), plus a sprinkle of rare first tokens below the engine's prune
threshold. The tables hold *raw* (untempered) log-probabilities, vLLM's default: a node's
tempered probabilities ``q`` are stored as ``log(q^T / sum q^T)``, so tempering at ``T`` gives
``q`` back. Every node lists its whole distribution (at most 20 tokens), so the unseen tail is 0
and the truth below is exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

EOS = "</s>"
FILLER = [
    " the",
    " person",
    " in",
    " image",
    " appears",
    " to",
    " be",
    " calm",
    ",",
    " and",
    " their",
    " expression",
    " looks",
    " neutral",
    " overall",
    ".",
]

#: a node: (token, tempered probability, child); child None ends the answer (the token is EOS)
Node = list[tuple[str, float, "Node | None"]]


@dataclass(frozen=True)
class PlantedTree:
    """A planted answer tree: the loopback table and what built it."""

    table: dict[str, list[list[float | str]]]
    temperature: float
    max_new_tokens: int
    seed: int


def _chain(depth_left: int, words: list[str]) -> Node | None:
    """Filler words until the token limit (a chatter answer with no letter)."""
    if depth_left <= 0:
        return None
    return [(words[depth_left % len(words)], 1.0, _chain(depth_left - 1, words))]


def _end(p_eos: float, remark: Node | None = None) -> Node:
    out: Node = [(EOS, p_eos, None)]
    if remark is not None:
        out.append(remark[0])
    return out


def draw_tree(seed: int, temperature: float = 0.2, max_new_tokens: int = 16) -> PlantedTree:
    """A realistic answer tree drawn from ``seed`` (see the module docstring)."""
    rs = np.random.RandomState(seed)
    n = max_new_tokens
    wf = float(rs.uniform(0.95, 0.99))
    rare = 1e-4
    rest = 1.0 - wf - rare
    refuse = float(rs.uniform(0.3, 0.7)) * rest
    chat = rest - refuse
    a = float(rs.uniform(0.1, 0.9))

    def letter(x: str, depth: int) -> Node:
        # "A" then EOS, "A." then EOS (or a short remark), "A)" then EOS
        remark = [(".\n", 0.01, _chain(n - depth - 2, FILLER))]
        dot: Node = [(EOS, 0.99, None), *remark]
        return [(EOS, 0.965, None), (".", 0.025, dot), (")", 0.01, _end(1.0))]

    def paren(depth: int) -> Node:
        b = float(rs.uniform(0.1, 0.9))
        close: Node = [(")", 1.0, _end(1.0))]
        return [("A", b, close), ("B", 1.0 - b, close)]

    def stars(depth: int) -> Node:
        close: Node = [("**", 1.0, _end(1.0))]
        return [("A", a, close), ("B", 1.0 - a, close)]

    refusal: Node = [
        (" cannot", 0.7, [(" determine", 1.0, _chain(n - 3, FILLER))]),
        (" can't", 0.2, [(" tell", 1.0, _chain(n - 3, FILLER))]),
        ("'m", 0.1, [(" sorry", 1.0, [(",", 1.0, _chain(n - 4, FILLER))])]),
    ]
    based: Node = [
        (
            " on",
            1.0,
            [
                (
                    " the",
                    1.0,
                    [
                        (
                            " image",
                            1.0,
                            [
                                (
                                    ",",
                                    1.0,
                                    [
                                        (
                                            " (",
                                            1.0,
                                            [
                                                ("B", 1.0 - a, [(")", 1.0, _end(1.0))]),
                                                ("A", a, [(")", 1.0, _end(1.0))]),
                                            ],
                                        )
                                    ],
                                )
                            ],
                        )
                    ],
                )
            ],
        )
    ]
    root: Node = [
        ("A", wf * a * 0.9, letter("A", 1)),
        ("B", wf * (1 - a) * 0.9, letter("B", 1)),
        ("(", wf * 0.08, paren(1)),
        ("**", wf * 0.02, stars(1)),
        ("I", refuse * 0.6, refusal),
        ("Sorry", refuse * 0.3, [(",", 1.0, _chain(n - 2, FILLER))]),
        ("As", refuse * 0.1, [(" an", 1.0, [(" AI", 1.0, _chain(n - 3, FILLER))])]),
        ("The", chat * 0.6, _chain(n - 1, FILLER)),
        ("Based", chat * 0.4, based),
    ]
    for i in range(8):  # rare first tokens, below the prune threshold
        root.append((f" x{i}", rare / 8, _chain(n - 1, FILLER)))
    table: dict[str, list[list[float | str]]] = {}

    def plant(prefix: str, node: Node) -> None:
        total = sum(q for _, q, _ in node)
        weights = [(q / total) ** temperature for _, q, _ in node]
        z = sum(weights)
        table[prefix] = [[tok, math.log(w / z)] for (tok, _, _), w in zip(node, weights)]
        for tok, _, child in node:
            if tok == EOS:
                continue
            plant(prefix + tok, child if child is not None else [(EOS, 1.0, None)])

    plant("", root)
    return PlantedTree(table, temperature, max_new_tokens, seed)


def truth(
    tree: PlantedTree, parse: Callable[[str], str | None], letters: tuple[str, str] = ("a", "b")
) -> dict[str, float]:
    """The tree's verdict distribution at its temperature: every answer enumerated, read
    with ``parse`` (a letter or None: invalid), to the token limit."""
    out = {letters[0]: 0.0, letters[1]: 0.0, "invalid": 0.0}
    t = tree.temperature

    def walk(prefix: str, p: float, depth: int) -> None:
        entries = tree.table[prefix]
        lps = np.array([float(lp) for _, lp in entries]) / t
        qs = np.exp(lps - np.logaddexp.reduce(lps))
        for (tok, _), q in zip(entries, qs):
            tok = str(tok)
            if tok == EOS or depth + 1 >= tree.max_new_tokens:
                final = prefix if tok == EOS else prefix + tok
                out[parse(final) or "invalid"] += p * q
            else:
                walk(prefix + tok, p * q, depth + 1)

    walk("", 1.0, 0)
    return out
