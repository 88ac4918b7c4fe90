"""Only the papers' claims count, and every quoted number is the paper's: each claim cites where the paper states it
with a quote found in the paper's text, or says why it is our own check; every number of a paper claim's ``paper``
cell occurs in the paper's text (in the paper's own formats); stand-ins follow from the experiments' declarations."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from pflnb.experiments import citations as T
from pflnb.experiments.paper import Compare, Experiment, setting_stand_in

PAPERS = ("lgmix", "fedco2", "fedpg", "pmixfed", "fedfac")
HAVE_TEXTS = all((T.papers_dir() / f"{p}.txt").exists() for p in PAPERS)
needs_texts = pytest.mark.skipif(
    not HAVE_TEXTS,
    reason=f"the papers' texts are not redistributed: set {T.PAPERS_ENV} to a folder with <paper>.txt (CI has ../shared/papers)",
)


def _paper(name: str):
    return importlib.import_module(f"pflnb.papers.{name}.paper").PAPER


def test_number_formats_are_the_papers_own():
    text = T.normalise("FedFac reaches .8307 against 80.33 % (Table 2); 1,000 rounds; gap −2.5; CIFAR-10 and ResNet18")
    found = T.text_numbers(text)
    for token in (".8307", "83.07", "0.8033", "1000", "-2.5", "10"):
        assert T.number_found(token, found), token
    for token in ("83.1", "2.74", "18"):  # rounded, derived, glued to letters: not the paper's
        assert not T.number_found(token, found), token
    assert T.unfound_numbers("CIFAR-10 π=0.1: .8307 vs .8034", text) == [".8034"]  # 0.1 is 10 %: found
    assert T.quote_found("against  80.33\n%", text) and not T.quote_found("against 80.3 %", text)


@pytest.mark.parametrize("name", PAPERS)
def test_every_claim_cites_the_paper_or_is_our_check(name):
    for spec in _paper(name).claims:
        assert (spec.cite is None) != (spec.ours == ""), f"{name}: {spec.claim!r} must cite the paper xor say why it is ours"


@needs_texts
@pytest.mark.parametrize("name", PAPERS)
def test_every_quote_occurs_in_the_papers_text(name):
    text = T.paper_text(name)
    cited = [s for s in _paper(name).claims if s.cite is not None]
    missing = [(s.claim, s.cite.quote) for s in cited if not T.quote_found(s.cite.quote, text)]
    assert not missing, f"{name}: quotes not in the paper's text: {missing}"


@needs_texts
@pytest.mark.parametrize("name", PAPERS)
def test_every_quoted_number_is_in_the_papers_text(name):
    text = T.paper_text(name)
    wrong = {s.claim: T.unfound_numbers(s.paper, text) for s in _paper(name).claims if s.cite is not None}
    assert not {k: v for k, v in wrong.items() if v}, f"{name}: numbers of the paper column not in the paper's text"


@pytest.mark.parametrize("name", PAPERS)
def test_a_claim_on_another_setting_than_the_papers_is_a_stand_in(name):
    paper = _paper(name)
    for spec in paper.claims:
        if isinstance(spec, Compare):
            experiment: Experiment = paper.experiment(spec.experiment)
            reason = setting_stand_in(experiment, "cpu")
            declared = dataclasses.replace(experiment, fallback=False)  # as declared, whatever data this machine has
            ours, theirs = (declared.base(p) for p in ("cpu", "paper"))
            fields = ("dataset", "model", "num_clients", "local_epochs", "rounds")
            differs = any(getattr(ours, f) != getattr(theirs, f) for f in fields)
            assert bool(reason) >= differs, f"{name}: {spec.claim!r} runs another setting but is no stand-in"
            assert setting_stand_in(experiment, "paper") == ""


def test_a_stand_in_quotes_the_paper_not_our_paper_profile_where_they_differ():
    """A field the paper does not state is not quoted as the paper's, a field the paper states otherwise than our paper
    profile is quoted in the paper's words (even where the cpu profile agrees with the paper profile), and None reads
    as the data as it is."""
    shock = _paper("pmixfed").experiment("shock")  # Fig. 4: FMNIST at cpu, CIFAR-10 at the paper profile, native size
    quoted = setting_stand_in(dataclasses.replace(shock, paper_setting={}), "cpu")
    assert "dataset fmnist (paper: cifar10)" in quoted
    assert "image_size 14 (paper: native)" in quoted and "max_samples 3000 (paper: all)" in quoted
    assert "None" not in quoted and "num_clients" not in quoted  # 10 at both profiles
    said = {"dataset": None, "rounds": None, "num_clients": "12 (E.1)"}
    unstated = setting_stand_in(dataclasses.replace(shock, paper_setting=said), "cpu")
    assert "dataset fmnist (paper: not stated; our paper profile: cifar10)" in unstated
    assert "rounds 10 (paper: not stated; our paper profile: 100)" in unstated
    assert "num_clients 10 (paper: 12 (E.1))" in unstated  # the paper's words, though both profiles run 10
    assert "image_size 14 (paper: native)" in unstated  # a field not named stays the paper profile's
    with pytest.raises(ValueError, match="paper_setting of"):
        dataclasses.replace(shock, paper_setting={"lr": None})
    with pytest.raises(ValueError, match="None means not stated"):
        dataclasses.replace(shock, paper_setting={"model": " "})


def test_a_stand_in_names_participation_and_the_swept_values_in_numeric_order():
    """Fed-CO2's label skew samples 5 % of 100 clients a round in the paper (§ Concrete Implementation) and every client
    at cpu; its client-count sweep lists N by value (5 before 10), the paper's as well; a swept field (Fig. 3's α, Fig.
    6's γ) is compared like a setting field, in the paper's words where they are declared."""
    co2 = _paper("fedco2")
    label = setting_stand_in(co2.experiment("label"), "cpu")
    assert "participation 1.0 (paper: 0.05)" in label
    clients = setting_stand_in(co2.experiment("clients"), "cpu")
    assert "num_clients 5/10/20/40 (paper: 50/100/150/300/500)" in clients
    alphas = setting_stand_in(co2.experiment("label-feature-alpha"), "cpu")
    assert alphas.endswith("alpha 0.3/1.0/2.0 (paper: 0.3/0.7/1.0/1.5/2.0)")
    ratios = setting_stand_in(co2.experiment("train-ratio"), "cpu")
    assert ratios.endswith("train_ratio 0.25/0.5/0.75/1.0 (paper: γ ∈ {0.2, 0.4, 0.6, 1.0, 2.0})")
    # a sweep the cpu profile runs in full at the paper's values is no reason
    full = dataclasses.replace(co2.experiment("label-feature-alpha"), grid={"alpha": {"cpu": (0.3, 0.7), "paper": (0.3, 0.7)}})
    assert "alpha 0.3" not in setting_stand_in(full, "cpu")
    assert "participation" not in setting_stand_in(co2.experiment("feature"), "cpu")  # every client at both profiles


def test_an_analogue_without_paper_profile_runs_is_compared_with_the_papers_words():
    """pMixFed's 15-block Table 2 analogue has no run at the paper profile (table2 is its paper-profile experiment):
    its stand-in lists each field the paper's words are declared for, beside ours; with none declared it says so."""
    mlp15 = _paper("pmixfed").experiment("table2_mlp15")
    reason = setting_stand_in(mlp15, "cpu")
    assert reason.startswith("table2_mlp15 at cpu: dataset fmnist (paper: CIFAR-10/CIFAR-100), model pmixfed-mlp15 (paper:")
    assert "rounds 10 (paper: 100)" in reason and "partition" not in reason  # only the fields declared
    unstated = setting_stand_in(dataclasses.replace(mlp15, paper_setting={"dataset": "CIFAR-10", "rounds": None}), "cpu")
    assert unstated == "table2_mlp15 at cpu: dataset fmnist (paper: CIFAR-10), rounds 10 (paper: not stated)"
    bare = setting_stand_in(dataclasses.replace(mlp15, paper_setting={}), "cpu")
    assert bare == "table2_mlp15 at cpu: the paper's setting is not declared (no run at the paper profile)"


def test_a_stand_in_names_the_arms_run_at_the_paper_profile_only():
    """Table 4's 'best' at cpu ranks Fed-CO2 against five of the paper's eight methods: the stand-in says which are
    left out; an experiment that runs every arm says nothing of arms."""
    table4 = _paper("fedco2").experiment("label-feature")
    assert "arms run at the paper profile only: FedProx/FedPer/MOON" in setting_stand_in(table4, "cpu")
    assert "arms" not in setting_stand_in(dataclasses.replace(table4, only={}), "cpu")
    assert setting_stand_in(table4, "paper") == ""


def test_a_view_of_an_experiment_is_a_stand_in_wherever_the_experiment_is():
    from pflnb.experiments import claims as C
    from pflnb.experiments.paper import Derived, Paper, View, decide

    fedfac = _paper("fedfac")
    table2 = fedfac.experiment("table2")
    rule = lambda r: (C.check(bool(len(r["curves"])), "ok", criterion="x"), None)  # noqa: E731
    paper = Paper("toy", "Toy", (table2,), (Derived("curves fall", "yes", rule, ours="a test"),), side={"curves": View("table2")})
    (cpu,) = decide(paper, {"profile": "cpu", "curves": [1]})
    assert cpu.stand_in == setting_stand_in(table2, "cpu") != ""
    assert "local_epochs 1 (paper: tuned over {1, 5, 20}" in cpu.stand_in  # FedFac's cpu profile trains one local epoch
    (full,) = decide(paper, {"profile": "paper", "curves": [1]})
    assert full.stand_in == ""  # the paper's own setting there
    with pytest.raises(ValueError, match="neither an experiment nor declared"):
        decide(Paper("toy", "Toy", (table2,), paper.claims), {"profile": "cpu", "curves": [1]})


@pytest.mark.parametrize("name", PAPERS)
def test_quotes_hold_no_tex_commands(name):
    """A quote shows as text in the claims tables (notebooks, site): TeX commands there would show raw."""
    tex = [s.cite.quote for s in _paper(name).claims if s.cite is not None and "\\" in s.cite.quote]
    assert not tex, f"{name}: quote a sentence part without TeX commands: {tex}"
