"""``family:``, a checked field of every protocol file (stylisticbias.family).

Every shipped ``conf/benchmark/*.yaml`` names its family; a missing family is inferred from the
file's shape with a warning (older user files), an unknown one fails in one line naming the
valid families, and a family that contradicts the file's sections fails too.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from stylisticbias.benchmark import benchmark_from_config, load_benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import FAMILY_NAMES, check_family
from stylisticbias.soda.protocol import load_soda

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "conf" / "benchmark").glob("*.yaml"))
EXPECTED = {
    "stylisticbias": "variation_shift",
    "beauty-and-the-bias": "paired_variation",
    "reflect": "tasks",
    "vignette": "tasks",
    "soda": "soda",
}
VALID = "valid: variation_shift, paired_variation, tasks, soda"


def _raw(name: str) -> dict:
    return yaml.safe_load((ROOT / "conf" / "benchmark" / f"{name}.yaml").read_text("utf-8"))


def test_the_families() -> None:
    assert FAMILY_NAMES == ("variation_shift", "paired_variation", "tasks", "soda")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_protocol_names_its_family(path: Path) -> None:
    raw = yaml.safe_load(path.read_text("utf-8"))
    assert raw.get("family") == EXPECTED[path.stem], path.name
    if raw["family"] == "soda":
        assert load_soda(path.stem).objects
    else:
        assert load_benchmark(path.stem).family == raw["family"]


def test_every_shipped_protocol_is_listed_here() -> None:
    assert {p.stem for p in SHIPPED} == set(EXPECTED)


@pytest.mark.parametrize("bad", ["tasksx", "", None, 3, ["tasks"]])
def test_an_unknown_family_fails_in_one_line_naming_the_valid_ones(bad: object) -> None:
    cfg = {**_raw("stylisticbias"), "family": bad}
    with pytest.raises(StylisticBiasError) as exc:
        benchmark_from_config(cfg, "conf/benchmark/x.yaml")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("conf/benchmark/x.yaml: family: unknown family")
    assert msg.endswith(VALID)
    with pytest.raises(StylisticBiasError, match=VALID):
        check_family(bad, "w")


@pytest.mark.parametrize("name", ["stylisticbias", "beauty-and-the-bias", "reflect", "vignette"])
def test_an_older_file_without_family_is_inferred_with_a_warning(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = {k: v for k, v in _raw(name).items() if k != "family"}
    with caplog.at_level(logging.WARNING):
        bench = benchmark_from_config(cfg, "old.yaml")
    assert bench.family == EXPECTED[name]
    assert f"old.yaml: no `family:`; inferred {EXPECTED[name]}" in caplog.text
    assert VALID in caplog.text


def test_a_family_that_contradicts_the_sections_fails() -> None:
    with pytest.raises(StylisticBiasError, match=r"family tasks: list the questions under"):
        benchmark_from_config({**_raw("stylisticbias"), "family": "tasks"}, "x.yaml")
    with pytest.raises(StylisticBiasError, match=r"family variation_shift: needs `scenarios:`"):
        benchmark_from_config({**_raw("reflect"), "family": "variation_shift"}, "x.yaml")
    with pytest.raises(StylisticBiasError, match=r"statistics.suite is 'variation_shift'"):
        benchmark_from_config({**_raw("stylisticbias"), "family": "paired_variation"}, "x.yaml")
    with pytest.raises(StylisticBiasError, match=r"statistics.suite is 'paired_variation'"):
        benchmark_from_config(
            {**_raw("beauty-and-the-bias"), "family": "variation_shift"}, "x.yaml"
        )
    with pytest.raises(StylisticBiasError, match=r"family soda is the generator audit's"):
        benchmark_from_config({**_raw("stylisticbias"), "family": "soda"}, "x.yaml")
    with pytest.raises(StylisticBiasError, match=r"family soda is the generator audit's"):
        load_benchmark("soda")


def _soda_file(tmp_path: Path, **change: object) -> str:
    cfg = {k: v for k, v in _raw("soda").items() if k != "family"}
    cfg.update(change)
    path = tmp_path / "mysoda.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return str(path)


def test_soda_reads_family_and_an_older_kind_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        old = load_soda(_soda_file(tmp_path, kind="soda"))
    assert old.objects == load_soda().objects
    assert "`kind: soda` is now `family: soda`" in caplog.text
    with pytest.raises(StylisticBiasError, match=r"family: missing; .*" + VALID):
        load_soda(_soda_file(tmp_path))
    with pytest.raises(StylisticBiasError, match=r"family: unknown family 'sodaa'; " + VALID):
        load_soda(_soda_file(tmp_path, family="sodaa"))
    with pytest.raises(StylisticBiasError, match=r"family tasks: not a SODA protocol"):
        load_soda(_soda_file(tmp_path, family="tasks"))
