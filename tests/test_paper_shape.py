"""A paper declared in the one shape, as the guide "Adding a paper or a method" writes it: a toy paper with two arms
and one claim, run at the smoke profile, gets its verdict from the rule."""

from __future__ import annotations

import pytest

from pflnb.experiments import claims as R
from pflnb.experiments import profile_config, run
from pflnb.experiments.paper import (
    Arm,
    Best,
    Compare,
    Derived,
    Experiment,
    Item,
    Paper,
    Setting,
    decide,
    run_experiment,
    write_coverage,
)

TOY = Paper(
    name="toy",
    title="A toy paper: federating beats training alone",
    experiments=(
        Experiment(
            name="main",
            doc="FedAvg against Local on digits5-lite",
            dataset="digits5-lite",
            fields={"smoke": {"rounds": 2, "model": "tiny-bn-cnn"}},
            arms=(Arm("FedAvg", "fedavg"), Arm("Local", "local", fields={"lr": 0.1})),
            seeds={"smoke": [0, 1]},
        ),
    ),
    claims=(Compare("FedAvg beats Local", "+3.0 points", experiment="main", arm="FedAvg", other="Local"),),
)


def test_run_experiment_of_some_arms_runs_the_same_runs_as_the_whole_experiment(tmp_path, monkeypatch):
    """``arms`` keeps the named arms only, each with the runs (configs, keys, seeds) it has in the whole experiment."""
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    part = run_experiment(TOY, "main", "smoke", progress=False, arms=["Local"])
    assert list(part.table["label"]) == ["Local", "Local"]
    base = profile_config("smoke", "digits5-lite", rounds=2, model="tiny-bn-cnn")
    assert [r["key"] for r in part.records] == [base.replace(method="local", lr=0.1, seed=s).key() for s in (0, 1)]
    with pytest.raises(ValueError, match="no arm"):
        run_experiment(TOY, "main", "smoke", progress=False, arms=["FedProx"])
    with pytest.raises(TypeError, match="sequence"):
        run_experiment(TOY, "main", "smoke", progress=False, arms="Local")


def test_some_arms_of_an_experiment_whose_tuning_names_other_arms():
    """An arm taking another's tuned choice (FedPG's paired ablation arms) is left out with the arms it names."""
    from pflnb.experiments.paper import _with_arms
    from pflnb.papers.fedpg.paper import PAPER as FEDPG

    exp = FEDPG.experiment("ablations_cnn")
    assert exp.tune.shared  # the case: a shared choice naming an arm that is left out
    part = _with_arms(exp, ["FedPG"])
    assert [a.label for a in part.arms] == ["FedPG"] and part.tune.shared == {}
    assert {lab["label"] for lab, _ in part.runs("smoke")} == {"FedPG"}


def test_a_toy_paper_runs_and_gets_its_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    res = run_experiment(TOY, "main", "smoke", progress=False)
    assert list(res.table[["label", "seed"]].itertuples(index=False, name=None)) == [
        ("FedAvg", 0),
        ("FedAvg", 1),
        ("Local", 0),
        ("Local", 1),
    ]
    # the two config layers: the profile table, then the experiment's fields and the arm's own
    base = profile_config("smoke", "digits5-lite", rounds=2, model="tiny-bn-cnn")
    local = base.replace(method="local", lr=0.1, seed=1)
    assert res.records[3]["key"] == local.key()
    want_local = run(local, progress=False)["summary"]["test_acc"]  # loaded from the cache the experiment wrote
    assert res.values("Local") == {0: res.records[2]["summary"]["test_acc"], 1: want_local}

    (claim,) = decide(TOY, {"main": res})
    a = {s: run(base.replace(method="fedavg", seed=s), progress=False)["summary"]["test_acc"] for s in (0, 1)}
    b = {s: run(base.replace(method="local", lr=0.1, seed=s), progress=False)["summary"]["test_acc"] for s in (0, 1)}
    expected = R.compare(a, b, names=("FedAvg", "Local"))
    assert (claim.outcome.verdict, claim.outcome.interval) == (expected.verdict, expected.interval) and claim.seeds == [0, 1]
    assert claim.outcome.ours.startswith(expected.ours)  # and then any verdict seed that collapsed, named
    assert claim.verdict in R.VERDICTS and claim.claim == "FedAvg beats Local" and claim.paper == "+3.0 points"
    assert [c.claim for c in decide(TOY, {"main": res}, only=["FedAvg beats"])] == ["FedAvg beats Local"]
    with pytest.raises(ValueError, match="no claim starting with"):
        decide(TOY, {"main": res}, only=["Local beats"])


def test_declarations_are_checked():
    exp = TOY.experiments[0]
    with pytest.raises(ValueError, match="distinct labels"):
        Experiment("x", "", "digits5-lite", arms=(Arm("A", "fedavg"), Arm("A", "local")), seeds={"smoke": [0]})
    with pytest.raises(ValueError, match="unknown profile"):
        Experiment("x", "", "digits5-lite", arms=(Arm("A", "fedavg"),), seeds={"laptop": [0]})
    with pytest.raises(KeyError, match="no arm 'FedProx'"):
        Paper("toy", "", (exp,), (Compare("c", "p", experiment="main", arm="FedAvg", other="FedProx"),))
    with pytest.raises(KeyError, match="no experiment 'table9'"):
        Paper("toy", "", (exp,), (Best("c", "p", experiment="table9", arm="FedAvg", others=("Local",)),))
    with pytest.raises(ValueError, match="no seeds for profile 'cpu'"):
        exp.runs("cpu")


def test_grid_and_derived_claims():
    exp = Experiment(
        "bs",
        "",
        "digits5-lite",
        arms=(Arm("FedAvg", "fedavg"),),
        seeds={"smoke": [0]},
        grid={"batch_size": {"smoke": (8, 16)}},
    )
    runs = exp.runs("smoke")
    assert [(lab["batch_size"], cfg.batch_size, cfg.method) for lab, cfg in runs] == [(8, 8, "fedavg"), (16, 16, "fedavg")]
    spec = Derived("a check", "holds", decide=lambda res: (R.check(res["x"] > 0, f"x = {res['x']}", criterion="x > 0"), None))
    paper = Paper("toy", "", (exp,), (spec,), side={"x": ""})  # a side result in the paper's own setting
    (claim,) = decide(paper, {"x": 2})
    assert claim.verdict == R.REPRODUCED and claim.outcome.ours.startswith("x = 2")
    assert list(claim.reads) == []  # a side value, not an experiment's runs: no records to verify
    (claim,) = decide(paper, {"x": -1})
    assert claim.verdict == R.CONTRADICTED


def test_coverage_names_declared_claims_and_shows_their_verdicts(tmp_path):
    exp = TOY.experiments[0]
    with pytest.raises(ValueError, match="names claims that toy does not declare"):
        Paper("toy", "", (exp,), TOY.claims, (Item("Table 1", "accuracy", ("FedProx beats",)),))
    with pytest.raises(ValueError, match="names the claims that test it"):
        Item("Table 1", "accuracy")
    with pytest.raises(ValueError, match="says why"):
        Item("Table 2", "accuracy", status="missing")
    with pytest.raises(ValueError, match="status must be one of"):
        Item("Table 2", "accuracy", status="done", reason="x")
    paper = Paper(
        "toy",
        "",
        (exp,),
        TOY.claims,
        (
            Item("Table 1", "accuracy", ("FedAvg beats",)),
            Item("Fig. 1", "a diagram", status="not testable", reason="an illustration"),
            Item("Table 9", "a new baseline", status="missing", reason="needs FedEM, not registered"),
        ),
    )
    claim = R.Claim("FedAvg beats Local", "+3.0 points", R.compare({0: 0.9, 1: 0.8}, {0: 0.5, 1: 0.4}))
    table = write_coverage(paper, [claim], tmp_path / "coverage.csv")
    assert list(table["status"]) == ["covered", "not testable", "missing"]
    assert table["ledger"][0] == f"FedAvg beats: {claim.label}" and table["ledger"][1] == "—"
    assert list(table["reason"])[1:] == ["an illustration", "needs FedEM, not registered"]
    assert (tmp_path / "coverage.csv").read_text().splitlines()[0] == "item,shows,status,ledger,reason"


def test_datasets_per_profile_borrow_the_declared_row_only_where_the_table_has_none():
    exp = Experiment(
        "x",
        "",
        "fmnist",
        (Arm("A", "fedavg"),),
        {"paper": [0]},
        fields={"paper": {"rounds": 7}, ("paper", "cifar10"): {"rounds": 9, "model": "cifar-cnn"}},
        datasets={"paper": "cifar10"},
    )
    cifar = exp.base("paper")  # the profile's dataset: no row of its own, so the declared fmnist row, then its fields
    assert cifar == profile_config("paper", "fmnist", rounds=9, model="cifar-cnn").replace(dataset="cifar10")
    assert exp.base("paper", "digits5") == profile_config("paper", "digits5", rounds=7)  # a row of its own
    with pytest.raises(ValueError, match="declares no fields for 'cifar100'"):
        exp.base("paper", "cifar100")


def test_only_limits_an_arm_to_its_profiles_and_settings_name_their_runs():
    exp = Experiment(
        "x",
        "",
        "digits5-lite",
        (Arm("A", "fedavg"), Arm("B", "local")),
        {"smoke": [0, 1], "paper": [0]},
        only={"B": ("paper",)},
        settings={
            "smoke": (Setting("all"), Setting("wide", {"num_clients": 10}, arms=("A",))),
            "paper": (Setting("all"),),
        },
    )
    smoke = [(lab["setting"], lab["label"], lab["seed"], cfg.num_clients) for lab, cfg in exp.runs("smoke")]
    assert smoke == [("all", "A", 0, 5), ("all", "A", 1, 5), ("wide", "A", 0, 10), ("wide", "A", 1, 10)]
    assert [lab["label"] for lab, _ in exp.runs("paper")] == ["A", "B"]
    with pytest.raises(ValueError, match="no grid"):
        Experiment("x", "", "digits5-lite", exp.arms, {"smoke": [0]}, grid={"lr": {"smoke": (0.1,)}}, settings=exp.settings)


def test_a_setting_with_a_dataset_is_a_cell_on_that_datasets_config():
    """A Setting with a dataset (a cell of a dataset × setting grid) starts from that dataset's profile row (not the
    declared dataset's), is labelled with it, takes the arm's (profile, dataset) parameters, and runs(dataset=...)
    keeps its cells on that dataset; the cell's fields go over the experiment's."""
    exp = Experiment(
        "x",
        "",
        "fmnist",
        (Arm("P", "fedprox", {"mu": 0.01}, at={("smoke", "digits5-lite"): {"mu": 0.5}}),),
        {"smoke": [0]},
        fields={"smoke": {"rounds": 3, "num_clients": 4}},
        settings={"smoke": (Setting("a", {"num_clients": 6}, dataset="digits5-lite"), Setting("b", dataset="fmnist"))},
    )
    (lab_a, a), (lab_b, b) = exp.runs("smoke")
    assert lab_a == {"dataset": "digits5-lite", "setting": "a", "label": "P", "seed": 0} and lab_b["dataset"] == "fmnist"
    digits, fmnist = profile_config("smoke", "digits5-lite"), profile_config("smoke", "fmnist")
    assert (a.dataset, a.image_size, a.model) == ("digits5-lite", digits.image_size, digits.model)
    assert (b.dataset, b.image_size, b.model) == ("fmnist", fmnist.image_size, fmnist.model)
    assert (a.num_clients, b.num_clients, a.rounds, b.rounds) == (6, 4, 3, 3)
    assert (a.method_params["mu"], b.method_params["mu"]) == (0.5, 0.01)
    assert [lab["setting"] for lab, _ in exp.runs("smoke", dataset="fmnist")] == ["b"]
    with pytest.raises(ValueError, match="runs no setting on 'mnist'"):
        exp.runs("smoke", dataset="mnist")


def test_the_main_scope_reports_claims_on_extended_results_as_not_run():
    """decide(..., extended=False): a claim reading one of Paper.extended's results, absent from the results, is 'not
    run' (placeholders shown as '…'); a claim on the main results is decided as always; a missing main result, or a
    missing extended one in the full scope, is an error, never a silent 'not run'."""
    positive = lambda name: lambda res: (R.check(res[name] > 0, f"{name} = {res[name]}", criterion=">0"), None)  # noqa: E731
    paper = Paper(
        "toy",
        "",
        TOY.experiments,
        (
            Derived("main result positive", "holds", decide=positive("x")),
            Derived("sweep positive at {level}", "holds", decide=lambda res: (*positive("sweep")(res), {"level": 3})),
            Compare("FedAvg beats Local", "+3", experiment="main", arm="FedAvg", other="Local"),
        ),
        extended=("sweep", "main"),
        side={"x": "", "sweep": ""},
    )
    main, sweep, compare = decide(paper, {"x": 2}, extended=False)
    assert main.verdict == R.REPRODUCED
    for claim in (sweep, compare):
        assert claim.verdict == R.NOT_RUN and claim.outcome.ours == "—" and claim.seeds is None
        assert claim.label == f"{R.NOT_RUN} (extended experiment: make reproduce-all, or the notebook with extended=True)"
    assert sweep.claim == "sweep positive at …"
    # ran anyway: decided on it
    assert decide(paper, {"x": 2, "sweep": -1}, extended=False)[1].verdict == R.CONTRADICTED
    with pytest.raises(KeyError, match="x"):
        decide(paper, {"sweep": 1}, extended=False)
    with pytest.raises(KeyError, match="sweep"):
        decide(paper, {"x": 2})
    with pytest.raises(ValueError, match="extended result twice"):
        Paper("toy", "", TOY.experiments, extended=("a", "a"))


def test_ledger_counts_show_not_run_only_where_a_ledger_has_it():
    import pandas as pd

    table = pd.DataFrame({"paper": ["LG-Mix"] * 3, "category": [R.REPRODUCED, R.NOT_RUN, R.NOT_RUN], "stand_in": ["", "", ""]})
    counts = R.ledger_counts(table).set_index("paper").loc["LG-Mix"]
    assert counts[R.REPRODUCED] == 1 and counts[R.NOT_RUN] == 2 and counts["total"] == 3
    assert R.NOT_RUN not in R.ledger_counts(table.iloc[:1]).columns  # the full ledger's table keeps its columns


def test_one_registry_names_every_paper_package_and_every_command_reads_it():
    """A paper package missing from the one registry (``pflnb.experiments.registry``) would be skipped by the commands
    that read it: every package under ``pflnb/papers/`` with a ``paper.py`` is registered, and the lists the commands
    read are the registry itself."""
    from pathlib import Path

    import pflnb.papers
    from pflnb.experiments import claims as C
    from pflnb.experiments.registry import PAPERS

    packages = {p.parent.name for p in Path(pflnb.papers.__file__).parent.glob("*/paper.py")}
    assert packages == set(PAPERS), f"register {sorted(packages - set(PAPERS))} in pflnb/experiments/registry.py"
    assert C.PAPERS is PAPERS and pflnb.papers.PAPERS == tuple(PAPERS)


def test_a_side_result_may_declare_its_stand_in_per_profile():
    """Paper.side maps a result to '' / a reason / a View, or to a reason per profile (a simulation run at the paper's
    sizes at the paper profile): the claim's stand-in is the reason of the results' profile, and a profile without one
    is an error, never a silent ''."""
    positive = lambda res: (R.check(res["x"] > 0, f"x = {res['x']}", criterion=">0"), None)  # noqa: E731
    paper = Paper(
        "toy",
        "",
        TOY.experiments,
        (Derived("x positive", "holds", decide=positive),),
        side={"x": {"cpu": "small x", "paper": ""}},
    )
    assert decide(paper, {"x": 1, "profile": "cpu"})[0].stand_in == "small x"
    assert decide(paper, {"x": 1, "profile": "paper"})[0].stand_in == ""
    with pytest.raises(ValueError, match="not at profile 'smoke'"):
        decide(paper, {"x": 1, "profile": "smoke"})


def test_some_settings_of_an_experiment_run_the_runs_they_have_in_the_whole_experiment():
    """``settings`` keeps the named settings only, at the profile asked, each with the runs (configs, keys) it has in
    the whole experiment (FedPG's App. B.1 scenarios: Pat-2 alone); an unknown name is refused before any run."""
    from pflnb.experiments.tuning import _with_settings
    from pflnb.papers.fedpg.paper import PAPER as FEDPG

    exp = FEDPG.experiment("table1_scenarios")
    whole = [(lab, cfg.key()) for lab, cfg in exp.runs("smoke") if lab["setting"] == "Pat-2"]
    part = _with_settings(exp, "smoke", ["Pat-2"])
    kept = [(lab, cfg.key()) for lab, cfg in part.runs("smoke")]
    assert kept == whole and {lab["label"] for lab, _ in kept} == {"FedAvg-FT", "FedPG"}
    assert [s.name for s in part.settings["cpu"]] == [s.name for s in exp.settings["cpu"]]  # other profiles untouched
    with pytest.raises(ValueError, match="no setting"):
        run_experiment(FEDPG, "table1_scenarios", "smoke", progress=False, settings=["Pat-3"])
    with pytest.raises(TypeError, match="sequence"):
        run_experiment(FEDPG, "table1_scenarios", "smoke", progress=False, settings="Pat-2")
