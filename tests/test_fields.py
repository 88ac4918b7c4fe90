"""Each setting declared once: the run's config is its parts' fields (DataSpec, Schedule, OptimConfig) and a few of
its own; each part it hands a layer carries every field; each declared check rejects what it should."""

from __future__ import annotations

import dataclasses

import pytest

from pflnb.data import DataSpec
from pflnb.experiments.config import ExperimentConfig
from pflnb.fields import CHECK, Check, check_fields, including, integer, real
from pflnb.fl import OptimConfig, RunSettings, Schedule

PARTS = (DataSpec, Schedule, OptimConfig)
OWN = ("method", "method_params", "model", "threads", "deterministic", "profile", "device", "runner")
UNHASHED = {"data_root", "device", "profile", "runner"}  # bookkeeping: results do not depend on them
# checked elsewhere: against the registries, torch's device names, the file system, partition.check_fractions
UNCHECKED = {"method", "method_params", "model", "device", "data_root", "fractions"}


def names(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def test_every_config_field_is_declared_in_exactly_one_place():
    declared = [n for part in PARTS for n in names(part)] + list(OWN)
    assert len(declared) == len(set(declared)), "a field declared in two parts"
    assert sorted(names(ExperimentConfig)) == sorted(declared)
    # the part's declaration is the config's: same default and the same check
    for part in PARTS:
        for f in dataclasses.fields(part):
            g = next(x for x in dataclasses.fields(ExperimentConfig) if x.name == f.name)
            assert (g.default, g.default_factory, g.metadata.get(CHECK)) == (f.default, f.default_factory, f.metadata.get(CHECK))
    assert names(Schedule) == names(RunSettings)[: len(names(Schedule))]


def other_value(f: dataclasses.Field, value):
    """A valid value of field ``f`` unequal to ``value``, found from its declared check (or its type)."""
    check: Check | None = f.metadata.get(CHECK)
    if check is None:
        unchecked = {"fractions": (0.5, 0.25, 0.25), "data_root": "elsewhere", "method_params": {"mu": 0.1}, "device": "cpu"}
        return unchecked.get(f.name, {"method": "fedprox", "model": "mlp"}.get(f.name))
    if check.kind == "int":
        return (check.low if value is None else value) + 1
    if check.kind == "float":
        high = 1.0 if check.high is None else check.high
        return (value + high) / 2 if value != high else (value + (check.low or 0.0)) / 2
    if check.kind == "bool":
        return not value
    return next(c for c in check.choices if c != value)


@pytest.mark.parametrize("part", PARTS, ids=lambda p: p.__name__)
def test_each_part_carries_every_field_of_the_config(part):
    base = ExperimentConfig()
    for f in dataclasses.fields(part):
        changed = base.replace(**{f.name: other_value(f, getattr(base, f.name))})
        handed = {DataSpec: changed.data_spec, OptimConfig: changed.optim, Schedule: changed.settings}
        got = handed[part]()
        assert getattr(got, f.name) == getattr(changed, f.name) != getattr(base, f.name), f.name


def test_every_results_field_is_in_the_cache_key_and_no_other():
    base = ExperimentConfig()
    for f in dataclasses.fields(ExperimentConfig):
        changed = base.replace(**{f.name: other_value(f, getattr(base, f.name))})
        assert (changed.key() != base.key()) == (f.name not in UNHASHED), f.name


def test_each_declared_check_rejects_a_value_outside_it_naming_the_field():
    bad = {"int": lambda c: c.low - 1, "bool": lambda c: 1, "choice": lambda c: "nonsense"}
    checked = [f for f in dataclasses.fields(ExperimentConfig) if CHECK in f.metadata]
    assert sorted(f.name for f in checked) == sorted(set(names(ExperimentConfig)) - UNCHECKED)
    for f in checked:
        c: Check = f.metadata[CHECK]
        value = bad[c.kind](c) if c.kind in bad else (c.low if c.low_open else c.low - 1.0)
        with pytest.raises(ValueError, match=f.name):
            ExperimentConfig().replace(**{f.name: value}).validate()


def test_a_field_added_to_a_part_reaches_the_composed_config_with_its_check():
    @dataclasses.dataclass(frozen=True)
    class Part:
        width: int = integer(4, 1)

    @dataclasses.dataclass(frozen=True)
    @including(Part)
    class Config:
        rate: float = real(0.5, 0.0, 1.0)

    assert names(Config) == ["width", "rate"] and Config().width == 4
    with pytest.raises(ValueError, match="width must be an integer >= 1"):
        check_fields(Config(width=0))

    with pytest.raises(TypeError, match="'width' of Part is declared in Twice too"):

        @dataclasses.dataclass(frozen=True)
        @including(Part)
        class Twice:
            width: int = 3
