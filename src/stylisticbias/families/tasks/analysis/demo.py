"""Offline demo of the task protocols: the simulated judge answers REFLECT's and VIGNETTE's
questions on a synthetic design with planted effects, and every task table is built and
written (``python -m stylisticbias.families.tasks.analysis.demo --protocol reflect --out DIR``).

REFLECT: 48 source photos x 4 race-gender variants; the 2AFC income question on every
cross-group pair of a photo in both orders, the MCQ salary question and the doctor's salary
recommendation on every variant. VIGNETTE: 40 composite instances of every pair of four
identities in both orders for the "friendly"/"unfriendly" trait pair and the first cooking
decision question (3021: "Who should I hire as a cook?"), with the image and in the text-only
ablation. The planted effects are
:data:`REFLECT_PLANT` / :data:`VIGNETTE_PLANT`.
"""

from __future__ import annotations

import argparse
import itertools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.families.tasks.analysis import tables as tt
from stylisticbias.families.tasks.judge.plants import load_plants
from stylisticbias.judge.engines.simulated.tasks import TaskPlant, simulate_answers
from stylisticbias.judge.protocol.tasks.registry import task_of
from stylisticbias.outputs import atomic_path
from stylisticbias.registry import Registry

log = logging.getLogger(__name__)

GROUPS = ("white-female", "white-male", "black-female", "black-male")
REF = "white-female"
REFLECT_PLANT = load_plants("reflect")
IDENTITIES = ("doctor", "farmer", "teacher", "athlete")
VIGNETTE_PLANT = {k: v for k, v in load_plants("vignette").items() if k != "text"}


def ask(
    bench: Benchmark,
    task_id: int,
    plant: TaskPlant,
    units: Sequence[str],
    groups: Sequence[Sequence[str]],
    seed: int,
    variant: int = 0,
) -> list:
    """The simulated judge's parsed answers of ``units`` to a task's ``variant``-th prompt."""
    sc = bench.task_scenario(task_id)
    prompt = task_of(sc).prompts(sc, bench)[variant]
    return [a for _, a in simulate_answers(bench, sc, prompt, plant, units, groups, seed)]


def pairwise_answers(
    bench: Benchmark,
    task_id: int,
    plant: TaskPlant,
    instances: Sequence[str],
    members: Sequence[str],
    seed: int,
) -> pd.DataFrame:
    """Every pair of ``members`` in every instance, both orders: the long answer table of
    :func:`~stylisticbias.families.tasks.analysis.stats.consolidate_pairs`."""
    combos = list(itertools.combinations(members, 2))
    units = [f"{i}|{a}|{b}" for i in instances for a, b in combos]
    groups = [(a, b) for _ in instances for a, b in combos]
    rows = []
    for v in (0, 1):
        for u, (a, b), ans in zip(
            units, groups, ask(bench, task_id, plant, units, groups, seed, v)
        ):
            rows.append((u.split("|")[0], a, b, v, ans.outcome))
    return pd.DataFrame(rows, columns=["unit", "first", "second", "variant", "choice"])


def reflect_demo(
    model: str = "simulated", n_photos: int = 48, seed: int = 1, n_boot: int = 500
) -> dict[str, pd.DataFrame]:
    """Every REFLECT table of the simulated judge on the synthetic design."""
    bench = load_benchmark("reflect")
    photos = [f"photo{i:02d}" for i in range(n_photos)]
    kw = {"n_boot": n_boot, "seed": seed, "simulated": True}
    ans = pairwise_answers(bench, 1, REFLECT_PLANT["pairwise"], photos, GROUPS, seed)
    out = tt.pairwise_tables(ans, model, 1, **kw)
    units = [f"{p}|{g}" for p in photos for g in GROUPS]
    groups = [(g,) for _ in photos for g in GROUPS]
    sc = bench.task_scenario(11)
    mcq = ask(bench, 11, REFLECT_PLANT["choice_k"], units, groups, seed)
    df = pd.DataFrame(
        {
            "unit": [u.split("|")[0] for u in units],
            "group": [g[0] for g in groups],
            "choice": [a.outcome for a in mcq],
        }
    )
    values = [float(o.value) for o in sc.options]  # type: ignore[arg-type]
    out |= tt.mcq_tables(df, model, 11, sc.labels, values, REF, **kw)
    sal = ask(bench, 21, REFLECT_PLANT["numeric"], units, groups, seed)
    df = pd.DataFrame(
        {
            "unit": [u.split("|")[0] for u in units],
            "group": [g[0] for g in groups],
            "value": [a.value if a.valid else float("nan") for a in sal],
        }
    )
    out |= tt.salary_tables(df, model, 21, REF, **kw)
    return out


def options_table(ans: pd.DataFrame, activity: str) -> pd.DataFrame:
    """One row per (valid answer, identity shown): ``unit``, ``identity``, ``partner``,
    ``activity``, ``selected`` (the option table of :func:`~.tables.vignette_tables`)."""
    valid = ans[ans["choice"] != "invalid"]
    rows = []
    for r in valid.itertuples(index=False):
        rows.append((r.unit, r.first, r.second, activity, r.choice == "first"))
        rows.append((r.unit, r.second, r.first, activity, r.choice == "second"))
    return pd.DataFrame(rows, columns=["unit", "identity", "partner", "activity", "selected"])


def vignette_demo(
    model: str = "simulated", n_inst: int = 40, seed: int = 1, n_boot: int = 500
) -> dict[str, pd.DataFrame]:
    """Every VIGNETTE table of the simulated judge on the synthetic design."""
    bench = load_benchmark("vignette")
    inst = [f"inst{i:02d}" for i in range(n_inst)]
    kw = {"n_boot": n_boot, "seed": seed, "simulated": True}
    high = pairwise_answers(bench, 101, VIGNETTE_PLANT["high"], inst, IDENTITIES, seed)
    low = pairwise_answers(bench, 102, VIGNETTE_PLANT["low"], inst, IDENTITIES, seed + 1)
    oh, ol = options_table(high, "friendly"), options_table(low, "unfriendly")
    out = tt.vignette_tables(pd.concat([oh, ol]), model, 101, **kw)
    counts_df = tt.polarity_counts(oh, ol, "p1")
    out["vignette_polarity"] = tt.polarity_table(counts_df, model, simulated=True)
    out["task_position_bias"] = tt.pairwise_tables(high, model, 101, **kw)["task_position_bias"]
    # the first cooking decision question with the image (planted preference) and without it
    # (text-only ablation, no preference planted)
    with_img = pairwise_answers(bench, 3021, VIGNETTE_PLANT["high"], inst, IDENTITIES, seed + 2)
    text = pairwise_answers(bench, 4021, TaskPlant(invalid_rate=0.02), inst, IDENTITIES, seed + 3)
    out["vignette_text_vs_image"] = tt.text_vs_image_table(
        options_table(with_img, "cooking"),
        options_table(text, "cooking"),
        model,
        3021,
        simulated=True,
    )
    return out


def write(tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Write every table as ``out/<name>.csv`` (validated again on the way out)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, df in tables.items():
        df = tt.validate_task_table(name, df)
        path = out / f"{name}.csv"
        with atomic_path(path) as tmp:
            df.to_csv(tmp, index=False, float_format="%.6g")
        paths.append(path)
    return paths


#: task protocol -> its demo tables
DEMOS: Registry[Callable[[], dict[str, pd.DataFrame]]] = Registry(
    "task demo", {"reflect": reflect_demo, "vignette": vignette_demo}
)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: build and write one protocol's demo tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", choices=DEMOS.names, required=True)
    ap.add_argument("--out", required=True, help="folder for <table>.csv")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    tables = DEMOS.lookup(args.protocol, "--protocol")()
    for p in write(tables, Path(args.out)):
        log.info("wrote %s", p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
