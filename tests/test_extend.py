"""A new method against a paper's baselines (``pflnb.experiments.extend``): the new arm is tuned and seeded like the
declared arms, the baselines' cached records are loaded unchanged, and only the new arm's runs are computed."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import types
from pathlib import Path

import pytest

from pflnb.algorithms.partial import PartialFedAvg
from pflnb.algorithms.registry import REGISTRY, variant
from pflnb.experiments import Serial, profile_config
from pflnb.experiments import claims as R
from pflnb.experiments.cache import RUN_LOG_ENV
from pflnb.experiments.extend import compare_new_arm, with_arm
from pflnb.experiments.jobs import load_record
from pflnb.experiments.paper import EDGE_STEPS, Arm, Experiment, Paper, Setting, Tune, run_experiment
from pflnb.experiments.records import digest
from pflnb.experiments.run import cache_path

LRS = (0.003, 0.3)
TUNE = Tune(grid={"lr": {"smoke": LRS}}, seeds={"smoke": [7, 8]})
BASE = {"rounds": 2, "model": "tiny-bn-cnn"}
BASELINES = ("FedAvg", "FedBN")
TOY = Paper(
    "toy",
    "FedAvg and FedBN, tuned",
    (
        Experiment(
            "main",
            "FedAvg against FedBN on digits5-lite",
            "digits5-lite",
            (Arm("FedAvg", "fedavg"), Arm("FedBN", "fedbn")),
            {"smoke": [0]},
            {"smoke": BASE},
            tune=TUNE,
        ),
    ),
)
NEW = Arm("FedBN+prox", "fedbn-prox")


@pytest.fixture
def fedbn_prox():
    """A new method, as a registry row: FedBN with FedProx's proximal term (removed again after the test)."""
    cls = variant(
        "fedbn-prox",
        PartialFedAvg,
        "FedBNProx: FedBN plus FedProx's proximal term (mu/2)·‖w − w_g‖² on the shared entries.",
        bn="local",
        mu=0.1,
    )
    yield cls
    REGISTRY.pop("fedbn-prox", None)


def _files(root):
    return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _expected_choice(method: str) -> tuple[float, list[float]]:
    """The tuned lr of ``method`` and every lr tried, from its cached tuning records alone (each must exist): the
    candidate of the highest mean best validation accuracy over the tuning seeds (first on ties; a run below the
    floor, chance + 5 points, at its best or last evaluation rules its lr out), with the grid-edge rule played out by
    hand (while the choice is the smallest (largest) lr tried, one step beyond, at most EDGE_STEPS per side)."""
    base = profile_config("smoke", "digits5-lite", **BASE)

    def one(lr: float, seed: int) -> float:
        path = cache_path(base.replace(method=method, lr=lr, seed=seed))
        assert path.exists(), f"no tuning record of {method} at lr={lr}, seed {seed}"
        record = load_record(path)
        vals = record["evals"][-1]["val_acc"]
        last, best = sum(vals) / len(vals), record["summary"]["best_val_acc"]
        return float("-inf") if min(last, best) < R.Floor(0.1).points / 100 else best

    scores = {lr: sum(one(lr, s) for s in (7, 8)) / 2 for lr in LRS}
    taken = {"below": 0, "above": 0}
    while True:
        tried = list(scores)
        best = max(tried, key=lambda lr: (scores[lr], -tried.index(lr)))
        lrs = sorted(tried)
        side = "below" if best == lrs[0] else "above" if best == lrs[-1] else None
        if side is None or taken[side] == EDGE_STEPS or scores[best] == float("-inf"):
            return best, tried
        taken[side] += 1
        nxt = float(f"{(lrs[0] ** 2 / lrs[1] if side == 'below' else lrs[-1] ** 2 / lrs[-2]):.3g}")
        scores[nxt] = sum(one(nxt, s) for s in (7, 8)) / 2


def test_a_new_arm_computes_only_its_own_runs_tuned_and_seeded_like_the_others(tmp_path, monkeypatch, fedbn_prox):
    results = tmp_path / "results"
    monkeypatch.setenv("PFLNB_RESULTS", str(results))
    outer_log = tmp_path / "outer.jsonl"
    monkeypatch.setenv(RUN_LOG_ENV, str(outer_log))  # a run log set before (pflnb reproduce's): it misses nothing
    before = run_experiment(TOY, "main", "smoke", executor=Serial(), progress=False)  # the baselines, cached
    cached = _files(results)
    outer_log.write_text("")

    new = compare_new_arm(TOY, "main", NEW, "smoke", executor=Serial(), progress=False)

    # the baselines: every tuning and verdict run loaded, records and choices unchanged
    assert new.loaded == len(before.tuning) + len(before.records)
    assert set(new.runs[new.runs.event == "loaded"].method) == {"fedavg", "fedbn"}
    for label in BASELINES:
        assert [digest(r) for r in new.result.labelled(label)] == [digest(r) for r in before.labelled(label)]
        assert new.result.tuned(label) == before.tuned(label)
    old_tuning = new.result.tuning[new.result.tuning.label.isin(BASELINES)].reset_index(drop=True)
    assert old_tuning.drop(columns="chosen").equals(before.tuning.drop(columns="chosen"))
    after = _files(results)
    assert {p: after[p] for p in cached} == cached  # no cached file rewritten

    # the new arm: tuned on the experiment's grid and tuning seeds, then run on its verdict seed with its own choice
    want, tried = _expected_choice("fedbn-prox")
    base = profile_config("smoke", "digits5-lite", **BASE).replace(method="fedbn-prox")
    tuning_keys = {base.replace(lr=lr, seed=s).key() for lr in tried for s in (7, 8)}
    verdict_key = base.replace(lr=want, seed=0).key()
    assert new.computed == len(tried) * 2 + 1 == new.own_runs  # candidates × tuning seeds + verdict seeds
    computed = new.runs[new.runs.event == "computed"]
    assert set(computed[computed.kind == "tuning"].key) == tuning_keys
    assert list(computed[computed.kind == "verdict"].key) == [verdict_key]
    assert {p.name for p in set(after) - set(cached)} == {f"fedbn-prox-{k}.json" for k in (*tuning_keys, verdict_key)}
    (record,) = new.result.labelled(NEW.label)
    assert (record["config"]["lr"], record["config"]["seed"], record["key"]) == (want, 0, verdict_key)
    assert new.computed_s > 0 and new.wall_s >= new.computed_s

    summary = new.summary.set_index("label")
    assert list(summary.index) == [*BASELINES, NEW.label] and list(summary.new) == [False, False, True]
    assert summary.loc[NEW.label, "tuned"] == f"lr={want}" and summary.loc[NEW.label, "method"] == "fedbn-prox"
    assert summary.loc[NEW.label, "test_acc_mean"] == pytest.approx(100 * record["summary"]["test_acc"])
    assert (summary.seeds == 1).all()

    # the block's own log reached the outer one, and the environment is as it was
    assert [json.loads(line)["key"] for line in outer_log.read_text().splitlines()] == list(new.runs.key)
    assert os.environ[RUN_LOG_ENV] == str(outer_log)

    again = compare_new_arm(TOY, "main", NEW, "smoke", executor=Serial(), progress=False)  # now all cached
    assert again.computed == 0 and again.loaded == new.loaded + new.computed


def test_with_arm_keeps_the_declared_runs_and_refuses_bad_arms(fedbn_prox):
    extended = with_arm(TOY, "main", NEW)
    old, exp = TOY.experiment("main"), extended.experiment("main")
    assert [a.label for a in exp.arms] == [*BASELINES, NEW.label] and exp.tune == old.tune and exp.seeds == old.seeds
    keys = lambda runs: [(lab, cfg.key()) for lab, cfg in runs if lab["label"] in BASELINES]  # noqa: E731
    assert keys(exp.tuning_runs("smoke")) == keys(old.tuning_runs("smoke"))
    assert {lab["label"] for lab, _ in exp.tuning_runs("smoke")} == {*BASELINES, NEW.label}
    assert TOY.experiment("main").arms == old.arms  # the paper itself is unchanged
    keyed = with_arm(TOY, "main", NEW, keys={"mu": {"smoke": (0.01, 1.0)}}).experiment("main")
    assert keyed.tune.candidates(NEW.label, "smoke", NEW.method)[1] == ({"lr": LRS[0]}, {"mu": 1.0})

    with pytest.raises(KeyError, match="no experiment 'table9'"):
        with_arm(TOY, "table9", NEW)
    with pytest.raises(ValueError, match="already has an arm 'FedBN'"):
        with_arm(TOY, "main", Arm("FedBN", "fedbn-prox"))
    with pytest.raises(ValueError, match="unknown method 'fedbn-prox2'.*Register it first"):
        with_arm(TOY, "main", Arm("X", "fedbn-prox2"))
    with pytest.raises(ValueError, match="unknown parameter"):
        with_arm(TOY, "main", Arm("X", "fedbn-prox", {"nu": 1.0}))
    with pytest.raises(ValueError, match="mu must be >= 0"):
        with_arm(TOY, "main", Arm("X", "fedbn-prox", at={"smoke": {"mu": -1.0}}))
    plain = Paper("p", "", (Experiment("e", "", "digits5-lite", (Arm("A", "fedavg"),), {"smoke": [0]}),))
    with pytest.raises(ValueError, match="not tuned"):
        with_arm(plain, "e", NEW, keys={"mu": {"smoke": (0.1,)}})


def test_the_new_arm_runs_in_every_setting():
    settings = {"smoke": (Setting("a", arms=("A",)), Setting("b"))}
    paper = Paper(
        "p",
        "",
        (Experiment("e", "", "digits5-lite", (Arm("A", "fedavg"), Arm("B", "fedbn")), {"smoke": [0]}, settings=settings),),
    )
    runs = with_arm(paper, "e", Arm("C", "fedprox")).experiment("e").runs("smoke")
    assert [(lab["setting"], lab["label"]) for lab, _ in runs] == [("a", "A"), ("a", "C"), ("b", "A"), ("b", "B"), ("b", "C")]


def test_baselines_missing_from_the_cache_are_computed_too_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    paper = Paper("p", "", (Experiment("e", "", "digits5-lite", (Arm("FedAvg", "fedavg"),), {"smoke": [0]}, {"smoke": BASE}),))
    with pytest.warns(UserWarning, match="2 jobs were computed, more than the 1 runs of 'FedProx'.*records import"):
        new = compare_new_arm(paper, "e", Arm("FedProx", "fedprox"), "smoke", executor=Serial(), progress=False)
    assert (new.computed, new.loaded, new.own_runs) == (2, 0, 1)
    assert new.summary.tuned.tolist() == ["as declared", "as declared"]  # an untuned experiment runs arms as declared


def test_the_guides_worked_example_runs_at_the_smoke_profile(tmp_path, monkeypatch):
    """The FedPG Table 1 example of docs/guides/extending.md, run as written but at the smoke profile (a fresh cache:
    the baselines are computed too, with the warning)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "extending.md").read_text()
    code = re.findall(r"```python\n(.*?)```", text.split("## A new method against the shipped baselines", 1)[1], re.S)[0]
    assert code.count('profile = "cpu"') == 1
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    module = types.ModuleType("guide_new_method")  # as a notebook's __main__: the row's module must be importable
    monkeypatch.setitem(sys.modules, module.__name__, module)
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out, pytest.warns(UserWarning, match="records of the other arms"):
            exec(compile(code.replace('profile = "cpu"', 'profile = "smoke"'), "extending.md", "exec"), module.__dict__)
        new = module.new
        assert new.summary.label.tolist()[-1] == "FedRep+prox" and new.summary.new.sum() == 1
        assert (new.computed, new.loaded) == (len(new.result.records), 0)
        assert "FedRep+prox" in module.table.method.tolist() and "runs computed" in out.getvalue()
    finally:
        REGISTRY.pop("fedrep-prox", None)
