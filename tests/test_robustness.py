"""`make robustness`: the verdicts of a perturbed run compared with the pinned ones, fragile claims marked, carried into
the claims CSVs and counted in the ledger; the perturbed run's notebooks get the generic kernels and the held seeds."""

from __future__ import annotations

import json

import pytest

from pflnb import kernels
from pflnb.experiments import claims as C
from pflnb.experiments import robustness as Rb
from pflnb.experiments.paper import Paper, decide, fragility


def _notebook(path, parameters: str):
    tags = {"tags": ["parameters"]}
    cell = {"id": "p", "cell_type": "code", "metadata": tags, "source": parameters, "outputs": [], "execution_count": None}
    nb = {"cells": [cell], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}}
    path.write_text(json.dumps({**nb, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _write(folder, paper, claims):
    C.write_claims(claims, folder / paper / "claims.csv", code="pflnb 0.1.0 @ 0123456789ab")


def _cmp(shift: float):
    a, b = {0: 0.80, 1: 0.82, 2: 0.81}, {0: 0.70 + shift, 1: 0.72 + shift, 2: 0.71 + shift}
    return C.compare(a, b)


def test_verdicts_that_change_under_the_perturbed_kernels_are_fragile(tmp_path):
    pinned, perturbed = tmp_path / "pinned", tmp_path / "perturbed"
    _write(
        pinned,
        "lgmix",
        [C.Claim("A beats B", "+5", _cmp(0.0)), C.Claim("C beats D", "+1", _cmp(0.0)), C.Claim("X", "y", _cmp(0))],
    )
    _write(pinned, "fedfac", [C.Claim("E beats F", "+2", _cmp(0.0))])
    moved = C.Claim("C beats D", "+1", _cmp(0.2))  # the other kernels: now contradicted
    skipped = C.Claim("X", "y", C.not_run("make reproduce-all"))  # extended: not decided by the main scope
    _write(perturbed, "lgmix", [C.Claim("A beats B", "+5", _cmp(0.001)), moved, skipped])
    _write(perturbed, "fedfac", [C.Claim("E beats F", "+2", _cmp(0.0))])
    table = Rb.compare_verdicts(pinned, perturbed)
    assert table[["paper", "claim", "pinned", "perturbed", "fragile"]].values.tolist() == [
        ["lgmix", "A beats B", C.REPRODUCED, C.REPRODUCED, "stable"],
        ["lgmix", "C beats D", C.REPRODUCED, C.CONTRADICTED, C.FRAGILE],
        ["fedfac", "E beats F", C.REPRODUCED, C.REPRODUCED, "stable"],
    ]
    assert Rb.summary(table).values.tolist() == [["lgmix", 2, 1, 1], ["fedfac", 1, 0, 1]]


def test_decide_marks_fragile_claims_and_the_ledger_counts_them(tmp_path, monkeypatch):
    from pflnb.experiments import paper as P

    (tmp_path / "robustness.csv").write_text(
        "paper,claim,pinned,perturbed,fragile,pinned verdict,perturbed verdict\n"
        "toy,always true,reproduced,inconclusive,fragile,ok [criterion: x],b\n"
        "toy,decided anew,reproduced,reproduced,stable,ok [criterion: y],b\n"  # checked under another criterion
        "toy,once fragile,contradicted,inconclusive,fragile,ok [criterion: x],b\n"  # checked when it was contradicted
        'toy,timed,inconclusive,reproduced,fragile,"1.1× [0.9, 1.3]",b\n'  # wall-clock: its numbers differ every run
    )
    monkeypatch.setattr(C, "figures_root", lambda: tmp_path)
    assert fragility("toy")["always true"] == (C.FRAGILE, C.REPRODUCED, "ok [criterion: x]")
    spec = P.Derived("always true", "yes", lambda r: (C.check(True, "ok", criterion="x"), None), ours="a test claim")
    other = P.Derived("also true", "yes", lambda r: (C.check(True, "ok", criterion="x"), None), ours="a test claim")
    anew = P.Derived("decided anew", "yes", lambda r: (C.check(True, "ok", criterion="x"), None), ours="a test claim")
    once = P.Derived("once fragile", "yes", lambda r: (C.check(True, "ok", criterion="x"), None), ours="a test claim")
    timed = P.Derived("timed", "yes", lambda r: (C.compare({0: 1.2, 1: 1.0}, {0: 1.0, 1: 1.0}), None), ours="x", wall_clock=True)
    (claim, plain, new, now, clock) = decide(Paper("toy", "Toy", (), (spec, other, anew, once, timed)), {})
    assert claim.fragile == C.FRAGILE and claim.label == "reproduced (fragile)" and plain.fragile == ""
    # a row made on an earlier decision checks nothing now: its claim reads not checked, until make robustness reruns
    assert new.fragile == "" and now.fragile == ""
    assert clock.verdict == C.INCONCLUSIVE and clock.fragile == C.FRAGILE  # same verdict; times are never equal
    _write(tmp_path / "figs", "lgmix", [claim, plain])
    counts = C.ledger_counts(C.ledger(tmp_path / "figs"))
    assert C.FRAGILE not in counts.columns and counts.loc[0, C.OUR_CHECKS] == 2  # ours: not in the paper counts
    paper_claim = C.Claim("p", "q", C.identity(0, 1), fragile=C.FRAGILE)
    _write(tmp_path / "figs", "lgmix", [paper_claim, claim])
    counts = C.ledger_counts(C.ledger(tmp_path / "figs"))
    assert counts.loc[0, C.FRAGILE] == 1 and counts.loc[0, "total"] == 1
    _write(tmp_path / "figs", "fedpg", [C.Claim("r", "s", C.identity(0, 1))])  # a paper the table does not cover
    counts = C.ledger_counts(C.ledger(tmp_path / "figs")).set_index("paper")
    assert counts.loc["LG-Mix", C.FRAGILE] == 1 and counts.loc["FedPG", C.FRAGILE] == C.NOT_CHECKED  # not 0: unchecked


def test_the_perturbed_run_gives_its_notebooks_the_generic_kernels_and_held_seeds(tmp_path, monkeypatch):
    for var in ("PFLNB_FIGURES", kernels.HOLD_ENV):
        monkeypatch.delenv(var, raising=False)
    nb = _notebook(tmp_path / "toy.ipynb", 'profile = "cpu"\nextended = True\n')
    cell = {"id": "w", "cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    cell["source"] = (
        "import json, os, pflnb\n"
        "open(os.path.join(os.environ['PFLNB_FIGURES'], 'seen.json'), 'w').write(json.dumps("
        "[pflnb.kernels.describe(), os.environ.get('PFLNB_KERNELS_HOLD_SEEDS'), extended]))\n"
    )
    data = json.loads(nb.read_text())
    data["cells"].append(cell)
    nb.write_text(json.dumps(data))
    (tmp_path / "out" / "figures").mkdir(parents=True)
    (result,) = Rb.run("cpu", tmp_path / "out", [nb], [100], progress_bar=False)
    assert result.ok, result.error
    seen, held, extended = json.loads((tmp_path / "out" / "figures" / "seen.json").read_text())
    assert seen["mode"] == "generic" and held == "100" and extended is False
    if seen["honoured"]:
        assert seen["capability"] == "DEFAULT" and seen["ATEN_CPU_CAPABILITY"] == "default"
    assert kernels.mode() == kernels.DEFAULT and "PFLNB_FIGURES" not in __import__("os").environ  # this process is unchanged


def test_compare_verdicts_needs_every_perturbed_claim_in_the_pinned_ledger(tmp_path):
    _write(tmp_path / "pinned", "lgmix", [C.Claim("A beats B", "+5", _cmp(0.0))])
    _write(tmp_path / "perturbed", "lgmix", [C.Claim("renamed", "+5", _cmp(0.0))])
    with pytest.raises(ValueError, match="renamed"):
        Rb.compare_verdicts(tmp_path / "pinned", tmp_path / "perturbed")
