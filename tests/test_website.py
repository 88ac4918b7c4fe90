"""The site's building blocks (pflnb.website): cleaning executed notebooks, figure ↔ claim matching, the generated
claims pages and ledger, staging and the choice of executed notebooks. The built site itself: tests/test_site.py."""

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from pflnb import website as W
from pflnb.experiments import claims as C

ROOT = Path(__file__).resolve().parents[1]


def _cell(*outputs):
    return {"cell_type": "code", "metadata": {}, "source": "x", "outputs": list(outputs), "execution_count": 1}


def _stream(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


def test_clean_notebook_removes_progress_residue_and_machine_paths():
    root = Path("/some/checkout")
    widget = {"output_type": "display_data", "data": {"text/plain": "HBox(children=(FloatProgress(value=0.0),))"}}
    widget_mime = {
        "output_type": "display_data",
        "data": {W._WIDGET: {"model_id": "ab"}, "text/plain": "HBox(children=(...))"},
    }
    table = {"output_type": "execute_result", "data": {"text/html": "<p>/some/checkout/figures/x.png</p>", "text/plain": "t"}}
    error = {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["File /some/checkout/pflnb/x.py"]}
    warning = (
        "/venv/lib/python3.11/site-packages/tqdm/auto.py:21: TqdmWarning: IProgress not found. Please update jupyter\n"
        "  from .autonotebook import tqdm as notebook_tqdm\n"
    )
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": "# t", "metadata": {}},
            _cell(
                _stream("runs:  10%|█         | 1/10\rruns: 100%|██████████| 10/10\nfigures -> /some/checkout/figures/q\n"),
                _stream(warning, "stderr"),
                _stream("a real warning\n", "stderr"),
                widget,
                widget_mime,
                table,
                error,
            ),
        ]
    }
    out = W.clean_notebook(nb, root)["cells"][1]["outputs"]
    assert out[0]["text"] == "runs: 100%|██████████| 10/10\nfigures -> figures/q\n"  # last redraw only, relative path
    assert out[1] == _stream("a real warning\n", "stderr")  # the tqdm warning is gone, other stderr stays
    assert out[2]["data"]["text/html"] == "<p>figures/x.png</p>"
    assert out[3]["output_type"] == "error" and out[3]["traceback"] == ["File pflnb/x.py"]  # errors are never hidden
    assert len(out) == 4  # both widget outputs dropped
    assert nb["cells"][1]["outputs"][3] is widget, "the input notebook is not modified"


def test_collapse_redraws_keeps_plain_text():
    assert W.collapse_redraws("a\nb\n") == "a\nb\n"
    assert W.collapse_redraws("x 1\rx 2\rx 3\ndone") == "x 3\ndone"
    assert W.collapse_redraws("bar\r\n") == "bar\n"


def test_banner_goes_after_the_title_and_links_the_paper_page():
    nb = {"cells": [{"cell_type": "markdown", "source": "# 01 · LG-Mix", "metadata": {}}, _cell()]}
    banner = W.notebook_banner("smoke", "01_lgmix", "lgmix")
    out = W.add_banner(nb, banner)
    assert [c["cell_type"] for c in out["cells"]] == ["markdown", "markdown", "code"]
    assert out["cells"][1]["source"] == banner and len(nb["cells"]) == 2
    assert "**smoke** profile" in banner and "not results" in banner and "(/papers/lgmix)" in banner
    assert "papers/" not in W.notebook_banner("cpu", "00_quickstart")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("λ starts high and decreases (Fig. 2a)", {("fig", "2", "a")}),
        ("+4.18 / +5.01 Dice (Tables 1–3)", {("table", "1", ""), ("table", "2", ""), ("table", "3", "")}),
        ("oscillates; FedPG′ is stable (Fig. 5(a))", {("fig", "5", "a")}),
        ("Thm 1/4: the mixing degree", {("thm", "1", ""), ("thm", "4", "")}),
        ("Thm 4.3: λ_min of the cooperative Gram matrix", {("thm", "43", "")}),
        ("Lemma 1 (descent over r local steps)", {("lemma", "1", "")}),
        ("Masking hurts more (Table 8A)", {("table", "8", "a")}),
        ("no reference here, 3 seeds", set()),
    ],
)
def test_text_refs(text, expected):
    assert W.text_refs(text) == expected


@pytest.mark.parametrize(
    "stem, expected",
    [
        ("fig2a_lambda_trajectories", {("fig", "2", "a")}),
        ("fig4_table3_label_skew", {("fig", "4", ""), ("table", "3", "")}),
        ("tables5_10_11_12_ablation", {("table", n, "") for n in ("5", "10", "11", "12")}),
        ("fig1_fig2_motivation", {("fig", "1", ""), ("fig", "2", "")}),
        ("thm43_gram_spectra", {("thm", "43", "")}),
        ("lemma1_theorem3", {("lemma", "1", ""), ("thm", "3", "")}),
        ("F5_lambda_feat_vs_ntk", set()),  # the notebook's own check numbers, not the paper's figures
        ("t3_gd_convergence", set()),
        ("convex_convergence", set()),
    ],
)
def test_file_refs(stem, expected):
    assert W.file_refs(stem) == expected


def test_refs_match_letters():
    assert W.refs_match({("fig", "2", "a")}, {("fig", "2", "")})  # 'Fig. 2' covers 2a
    assert not W.refs_match({("fig", "2", "a")}, {("fig", "2", "b")})
    assert not W.refs_match({("fig", "2", "")}, {("table", "2", "")})


def _claims(root, paper="lgmix", code=None):
    a = {0: 0.80, 1: 0.81, 2: 0.82}
    b = {0: 0.70, 1: 0.70, 2: 0.71}
    claims = [
        C.Claim("A beats B (Fig. 2a)", "+10 <points>", C.compare(a, b, names=("A", "B")), seeds=[0, 1, 2]),
        C.Claim("A is exact (Table 1)", "identity", C.identity(0.0, 1e-9)),
        C.Claim("needs a GPU", "Table 9", C.not_testable("no GPU")),
    ]
    C.write_claims(claims, root / paper / "claims.csv", code=code)
    for name in ("fig2a_curves.png", "fig2b_other.png", "table1_acc.png", "F1_theory.png"):
        (root / paper / name).write_bytes(b"png")


def test_figures_for_claims_pairs_each_figure_with_the_claims_naming_it(tmp_path):
    _claims(tmp_path)
    table, _ = C.read_claims(tmp_path / "lgmix" / "claims.csv")
    figs = W.figures_for_claims(table, (tmp_path / "lgmix").glob("*.png"))
    assert [(f.path.name, f.claims) for f in figs] == [
        ("fig2a_curves.png", (1,)),
        ("table1_acc.png", (2,)),
        ("F1_theory.png", ()),
        ("fig2b_other.png", ()),
    ]


def test_claims_table_colours_verdicts_marks_intervals_and_escapes(tmp_path):
    _claims(tmp_path)
    table, _ = C.read_claims(tmp_path / "lgmix" / "claims.csv")
    out = W.claims_html(table, "lgmix")
    assert out.count("<tr id=") == 3 and 'id="claim-lgmix-3"' in out
    assert out.count("pflnb-v-reproduced") == 2 and out.count("pflnb-v-not-testable") == 1
    assert "+10 &lt;points&gt;" in out and "<points>" not in out
    assert '<span class="pflnb-ci">[' in out  # the comparison's 90 % interval stands out
    assert '<td class="pflnb-seeds">0 1 2</td>' in out and '<td class="pflnb-seeds">—</td>' in out


def test_paper_page_shows_code_version_and_figures(tmp_path):
    _claims(tmp_path, code="pflnb 0.1.0 @ 0123456789ab")
    page = W.paper_claims_markdown("lgmix", tmp_path, notebook="01_lgmix")
    assert "`pflnb 0.1.0 @ 0123456789ab`" in page
    assert "3 claims:" in page and "2 reproduced" in page and "1 not testable at this scale" in page
    assert page.index("### fig2a curves") < page.index("/figures/lgmix/fig2a_curves.png") < page.index("### table1 acc")
    assert '<a href="#claim-lgmix-1">claim 1</a>' in page.split("### fig2a curves")[1].split("###")[0]
    assert "(/notebooks/01_lgmix)" in page
    _claims(tmp_path, code="")
    assert "not recorded" in W.paper_claims_markdown("lgmix", tmp_path)
    assert "No `figures/fedpg/claims.csv` yet" in W.paper_claims_markdown("fedpg", tmp_path)


def test_ledger_page_counts_equal_the_ledger(tmp_path):
    _claims(tmp_path, "lgmix")
    _claims(tmp_path, "fedfac")
    page = W.ledger_markdown(tmp_path)
    counts = C.ledger_counts(C.ledger(tmp_path))
    assert list(counts.paper) == ["LG-Mix", "FedSplit/FedFac"]
    assert page.count('<table class="pflnb-claims">') == 2 and "## FedSplit/FedFac" in page
    total_row = page.split('class="pflnb-total"')[1].split("</tr>")[0]
    assert "<b>6</b>" in total_row  # 2 papers × 3 claims
    assert '<a href="papers/lgmix.html">LG-Mix</a>' in page


def test_ledger_page_lists_the_claims_decided_at_the_papers_own_settings_apart_from_the_counts(tmp_path):
    """claims-paper.csv rows get their own section (anchors apart from the cpu rows, stand-in reasons listed, our
    checks in their own table); the counts stay the claims.csv's."""
    _claims(tmp_path, "fedpg")
    assert "own settings" not in W.ledger_markdown(tmp_path)  # none decided there yet
    a = {0: 0.89, 1: 0.895, 2: 0.9}
    own = C.Claim("Absolute numbers", ".895", C.value(a, 89.5, 1.0), seeds=[0, 1, 2])
    partial = C.Claim("Best of all", ".779", C.value(a, 99.0, 1.0), stand_in="only FedProx ran <here>")
    check = C.Claim("L-acc below", "", C.value(a, 89.5, 1.0), source=C.OURS_SOURCE, cite="our check")
    C.write_claims([own, partial, check], tmp_path / "fedpg" / C.PAPER_SETTING_FILE)
    page = W.ledger_markdown(tmp_path)
    section = page.split("## At the papers' own settings")[1].split("\n## ")[0]
    assert "### FedPG at its own setting" in section and "LG-Mix" not in section
    assert '<tr id="claim-fedpg-paper-1"' in section and '<tr id="claim-fedpg-paper-2"' in section
    assert section.count('<table class="pflnb-claims">') == 1 and 'pflnb-ours">' in section
    assert "<li>Best of all: only FedProx ran &lt;here&gt;</li>" in section and "Absolute numbers:" not in section
    total_row = page.split('class="pflnb-total"')[1].split("</tr>")[0]
    assert "<b>3</b>" in total_row  # the cpu profile's three claims alone


def test_committed_claims_render_on_every_paper_page():
    """The real figures/: every paper page has one row per claim of its CSV, and figures matched to claims."""
    for key in C.PAPERS:
        table, _ = C.read_claims(ROOT / "figures" / key / "claims.csv")
        page = W.paper_claims_markdown(key, ROOT / "figures")
        assert page.count(f'<tr id="claim-{key}-') == len(table)
        assert "claims they support" in page and '<ul class="pflnb-supports">' in page
    lgmix, _ = C.read_claims(ROOT / "figures" / "lgmix" / "claims.csv")
    figs = {f.path.stem: f.claims for f in W.figures_for_claims(lgmix, (ROOT / "figures" / "lgmix").glob("*.png"))}
    lam = [i for i, c in enumerate(lgmix.claim, start=1) if c.startswith("λ starts high")]
    assert lam and set(lam) <= set(figs["fig2a_lambda_trajectories"]) and not set(lam) & set(figs["fig2b_feature_values"])


def _fake_repo(tmp_path, names=("00_quickstart", "01_lgmix")):
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    title = {"cell_type": "markdown", "source": "# t", "metadata": {}}
    nb = {"cells": [title], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    for n in names:
        (root / "notebooks" / f"{n}.ipynb").write_text(json.dumps(nb))
    return root, nb


def test_choose_executed_falls_back_to_smoke(tmp_path, capsys):
    root, nb = _fake_repo(tmp_path)
    cpu, smoke = root / "executed" / "cpu", root / "executed" / "smoke"
    with pytest.raises(FileNotFoundError, match="not allowed"):
        W.choose_executed("cpu", root=root, run=False)  # nothing executed, and executing is not allowed here
    smoke.mkdir(parents=True)
    for n in ("00_quickstart", "01_lgmix"):
        (smoke / f"{n}.ipynb").write_text(json.dumps(nb))
    assert W.choose_executed("cpu", root=root, run=False) == ("smoke", smoke)
    assert "using the smoke profile" in capsys.readouterr().out
    cpu.mkdir(parents=True)
    (cpu / "00_quickstart.ipynb").write_text(json.dumps(nb))
    assert W.choose_executed("cpu", root=root, run=False) == ("smoke", smoke)  # incomplete: still smoke
    (cpu / "01_lgmix.ipynb").write_text(json.dumps(nb))
    assert W.choose_executed("cpu", root=root, run=False) == ("cpu", cpu)
    with pytest.raises(FileNotFoundError, match="01_lgmix"):
        W.choose_executed("cpu", executed=root / "elsewhere", root=root)
    # after `make reproduce` (the main scope, executed later), the site shows what that command executed
    main = root / "executed" / "cpu-main"
    main.mkdir()
    (main / "00_quickstart.ipynb").write_text(json.dumps(nb))
    assert W.choose_executed("cpu", root=root, run=False) == ("cpu", cpu)  # incomplete main scope: the full run
    (main / "01_lgmix.ipynb").write_text(json.dumps(nb))
    os.utime(main / "01_lgmix.ipynb", (2e9, 2e9))
    assert W.choose_executed("cpu", root=root, run=False) == ("cpu", main)
    os.utime(cpu / "00_quickstart.ipynb", (3e9, 3e9))  # then `make reproduce-all`: the full run again
    assert W.choose_executed("cpu", root=root, run=False) == ("cpu", cpu)


def test_stage_assembles_notebooks_pages_and_figures(tmp_path):
    root, nb = _fake_repo(tmp_path)
    executed = root / "executed" / "smoke"
    executed.mkdir(parents=True)
    run = dict(nb, cells=nb["cells"] + [_cell(_stream(f"saved {root}/figures/x.png\n"))])
    for n in ("00_quickstart", "01_lgmix"):
        (executed / f"{n}.ipynb").write_text(json.dumps(run))
    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "index.md").write_text("# home\n")
    (docs / "guides" / "a.md").write_text("# a\n")
    figures = tmp_path / "figures"
    _claims(figures)
    src = W.stage(tmp_path / "site" / "src", executed, "smoke", figures=figures, docs=docs, root=root)
    assert (src / "index.md").exists() and (src / "guides" / "a.md").exists()
    staged = json.loads((src / "notebooks" / "01_lgmix.ipynb").read_text())
    assert staged["cells"][1]["source"].startswith("```{admonition} Executed notebook")
    assert "(/papers/lgmix)" in staged["cells"][1]["source"]
    assert staged["cells"][2]["outputs"][0]["text"] == "saved figures/x.png\n"
    assert "(/papers/" not in json.loads((src / "notebooks" / "00_quickstart.ipynb").read_text())["cells"][1]["source"]
    gen = src / W.GENERATED
    assert {p.name for p in gen.iterdir()} == {"lgmix.md", "ledger.md", "counts.md", "methods.md", "build.md"}
    assert "`executed/smoke/`" in (gen / "build.md").read_text()
    assert (src / "figures" / "lgmix" / "fig2a_curves.png").read_bytes() == b"png"
    assert "<code>fedavg</code>" in (gen / "methods.md").read_text()
    (executed / "01_lgmix.ipynb").unlink()
    with pytest.raises(FileNotFoundError, match="01_lgmix"):
        W.stage(tmp_path / "site" / "src", executed, "smoke", figures=figures, docs=docs, root=root)


@pytest.mark.parametrize(
    "line, expected",
    [
        ("stops when max |Δψ| < ``tol``", "stops when max \\|Δψ\\| < ``tol``"),
        ("names in capitals ('F5_...') number checks", "names in capitals ('F5\\_...') number checks"),
        ("A generator seeded from (seed, round, *key)", "A generator seeded from (seed, round, \\*key)"),
        ("the *training* label, ``|x|`` and :func:`a_b`", "the *training* label, ``|x|`` and :func:`a_b`"),
        ("state_dict and __init__ stay", "state_dict and __init_\\_ stay"),
    ],
)
def test_rst_safe_escapes_what_rst_would_misread(line, expected):
    assert W.rst_safe(line) == expected


def test_rst_safe_keeps_list_bullets():
    assert W.rst_safe("* :mod:`.plots` — its figures, f(*x)") == "* :mod:`.plots` — its figures, f(\\*x)"
    assert W.rst_safe("  - item |a|") == "  - item \\|a\\|"


def test_coverage_section_lists_every_item_escaped_with_a_tally(tmp_path):
    assert W.coverage_markdown(tmp_path / "x" / "coverage.csv") == []  # no file, no section
    path = tmp_path / "toy" / "coverage.csv"
    path.parent.mkdir()
    path.write_text(
        "item,shows,status,ledger,reason\n"
        'Table 1,accuracy,covered,"A beats B: reproduced",\n'
        "Fig. 2,<a diagram>,not testable,—,an illustration\n"
        "Table 3,a baseline,missing,—,needs FedEM\n"
    )
    text = "\n".join(W.coverage_markdown(path))
    assert "(1 covered, 1 missing, 1 not testable)" in text and "figures/toy/coverage.csv" in text
    assert text.count("<tr>") == 4 and "&lt;a diagram&gt;" in text and "<a diagram>" not in text
    assert "<td>Table 3</td><td>a baseline</td><td>missing</td><td>—</td><td>needs FedEM</td>" in text


def test_our_checks_are_shown_apart_and_not_counted(tmp_path):
    a, b = {0: 0.80, 1: 0.81, 2: 0.82}, {0: 0.70, 1: 0.70, 2: 0.71}
    claims = [
        C.Claim(
            "A beats B",
            "80.3 vs 70.3",
            C.compare(a, b),
            seeds=[0, 1, 2],
            cite="§5, Table 2: “A is better”",
            paper_effect="+10.00",
            effect_vs_ours="inside",
        ),
        C.Claim("BN stats stay finite", "—", C.identity(0.0, 1e-9), source=C.OURS_SOURCE, cite="a sanity check of ours"),
    ]
    C.write_claims(claims, tmp_path / "lgmix" / "claims.csv")
    page = W.paper_claims_markdown("lgmix", tmp_path)
    assert "1 claims:" in page and "## Our checks (not counted)" in page
    main, ours = page.split("## Our checks (not counted)")
    assert 'id="claim-lgmix-1"' in main and 'id="claim-lgmix-2"' not in main and 'id="claim-lgmix-2"' in ours
    assert "§5, Table 2: “A is better”" in main and '+10.00<br/><small class="pflnb-effect">inside</small>' in main
    assert "a sanity check of ours" in ours
    ledger = W.ledger_markdown(tmp_path)
    total_row = ledger.split('class="pflnb-total"')[1].split("</tr>")[0]
    assert "<b>1</b>" in total_row and "### LG-Mix: our checks (not counted)" in ledger


def test_the_ledger_page_shows_fragile_verdicts_and_how_the_ledger_moved(tmp_path):
    _claims(tmp_path)
    old = C.ledger(tmp_path)
    a, b = {0: 0.80, 1: 0.81, 2: 0.82}, {0: 0.70, 1: 0.70, 2: 0.71}
    moved = [
        C.Claim("A beats B (Fig. 2a)", "+10", C.compare(b, a), seeds=[0, 1, 2]),  # now contradicted
        C.Claim("A is exact (Table 1)", "identity", C.identity(0.0, 1e-9), source=C.OURS_SOURCE, cite="ours"),
        C.Claim("brand new", "x", C.identity(0.0, 1e-9)),
    ]
    C.write_claims(moved, tmp_path / "lgmix" / "claims.csv")
    moves = C.ledger_moves(old, C.ledger(tmp_path))
    assert moves[["claim", "before", "now"]].values.tolist() == [
        ["A beats B (Fig. 2a)", C.REPRODUCED, C.CONTRADICTED],
        ["A is exact (Table 1)", C.REPRODUCED, f"{C.REPRODUCED} (our check)"],
        ["brand new", "—", C.REPRODUCED],
        ["needs a GPU", C.NOT_TESTABLE, "—"],
    ]
    assert moves.why.tolist()[1:] == ["not stated by the paper: moved to our checks (#32 item 5)", "new claim", "claim withdrawn"]
    renames = pd.DataFrame([["lgmix", "brand new", "needs a GPU"]], columns=C.RENAMES_COLUMNS)  # restated, not new
    assert C.ledger_moves(old, C.ledger(tmp_path), renames=renames)[["claim", "before", "now"]].values.tolist()[2:] == [
        ["brand new", C.NOT_TESTABLE, C.REPRODUCED]
    ]
    by_hand = moves.assign(why=["read by hand", *moves.why[1:]])
    assert C.ledger_moves(old, C.ledger(tmp_path), by_hand).why[0] == "read by hand"  # kept on regeneration
    by_hand.to_csv(tmp_path / C.MOVES_FILE, index=False)
    unchecked = W.ledger_markdown(tmp_path).split("## Fragile verdicts")[1]  # no robustness table yet: said so
    assert "Not checked yet" in unchecked and "not robust" in unchecked and "<table" not in unchecked.split("##")[0]
    exact = C.identity(0.0, 1e-9).ours  # "brand new" as decided now
    (tmp_path / "robustness.csv").write_text(
        "paper,claim,pinned,perturbed,fragile,pinned verdict,perturbed verdict\n"
        f'lgmix,brand new,reproduced,inconclusive,fragile,"{exact}","+1 [-0.1, +2]"\n'
        "lgmix,other,reproduced,reproduced,stable,a,b\n"  # a claim the ledger no longer has
        'lgmix,A beats B (Fig. 2a),reproduced,inconclusive,fragile,"+10 [+9, +11]",b\n'  # now contradicted
    )
    page = W.ledger_markdown(tmp_path)
    assert "## How the ledger moved" in page and "read by hand" in page and page.count("<tr><td>LG-Mix</td>") >= 4
    fragile = page.split("## Fragile verdicts")[1].split("## How")[0]
    assert "1 of the 1 verdicts" in fragile and "brand new" in fragile and "A beats B" not in fragile
    assert "2 more rows of the table checked an earlier decision of their claims" in fragile
    assert "Papers checked: LG-Mix; not yet Fed-CO2, FedPG, pMixFed, FedSplit/FedFac, whose verdicts are unchecked" in page
    assert "{warning}" not in page  # every claims CSV decided under the current rules
    (tmp_path / "fedco2").mkdir()
    (tmp_path / "fedco2" / "claims.csv").write_text(  # a CSV of the earlier rule: no source, cite, paper_effect
        'claim,paper,ours,verdict,category,seeds,note,stand_in,code\nX beats Y,+1,"+2 [+1, +3]",reproduced,reproduced,0 1,,,v\n'
    )
    warned = W.ledger_markdown(tmp_path).split("{warning}")[1].split("```")[0]
    assert "Fed-CO2" in warned and "LG-Mix" not in warned and "earlier rule" in warned


def test_the_counts_say_not_checked_for_a_paper_make_robustness_did_not_cover(tmp_path):
    C.write_claims([C.Claim("a", "b", C.identity(0.0, 1e-9), fragile=C.FRAGILE)], tmp_path / "lgmix" / "claims.csv")
    C.write_claims([C.Claim("c", "d", C.identity(0.0, 1e-9), fragile="stable")], tmp_path / "fedco2" / "claims.csv")
    C.write_claims([C.Claim("e", "f", C.identity(0.0, 1e-9))], tmp_path / "fedpg" / "claims.csv")
    rows = W.counts_html(C.ledger(tmp_path)).split("<tr")
    names = ("LG-Mix", "Fed-CO2", "FedPG", "all papers")
    lgmix, fedco2, fedpg, total = (next(r for r in rows if f">{n}<" in r) for n in names)
    assert ">not checked</td>" in fedpg and "not checked" not in lgmix + fedco2 + total  # unchecked, not 0 fragile
    assert '<td class="pflnb-num">1</td>' in lgmix and '<td class="pflnb-num pflnb-zero">0</td>' in fedco2


def test_warning_lines_finds_warning_text_in_any_output():
    tqdm_warning = "/venv/lib/python3.11/site-packages/tqdm/auto.py:21: TqdmWarning: IProgress not found.\n"
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": "a Warning in prose is not an output", "metadata": {}},
            _cell(_stream("fine\n"), _stream(tqdm_warning, "stderr")),
            _cell({"output_type": "execute_result", "data": {"text/plain": "UserWarning: x"}}),
            _cell(_stream("2026-11-26 WARNING ray: something\n", "stderr")),
            _cell(_stream("warnings are discussed here, none raised\n")),
        ]
    }
    found = W.warning_lines(nb)
    assert [f.split(":")[0] for f in found] == ["cell 1", "cell 2", "cell 3"]
    assert "TqdmWarning: IProgress not found." in found[0]
    assert W.warning_lines({"cells": [_cell(_stream("no warning here\n"))]}) == []


def test_tuning_edges_section_counts_and_lists_the_arms_still_at_an_edge(tmp_path):
    assert W.tuning_edges_markdown(tmp_path / "x" / "tuning_edges.csv") == []  # no file, no section
    path = tmp_path / "toy" / "tuning_edges.csv"
    path.parent.mkdir()
    path.write_text(
        "experiment,cell,chosen,at edge on the grid,at edge after the rule\n"
        "table1,FedAvg,lr=1.6,True,True\n"
        "table1,FedProx,lr=0.2,True,False\n"
        "table1,Local <b>,lr=0.05,False,False\n"
    )
    text = "\n".join(W.tuning_edges_markdown(path))
    assert "Of the 3 tuned cells" in text and "2 chose a value at an edge" in text and "**1** still sit" in text
    assert "<td>FedAvg</td><td>lr=1.6</td>" in text and "FedProx" not in text.split("<table")[1]
    assert "No value trained" not in text  # an older file without the column: no such table
    path.write_text(
        "experiment,cell,chosen,at edge on the grid,at edge after the rule,no value trained\n"
        "table1,FedAvg,lr=0.0003,False,False,True\n"
        "table1,FedProx,lr=0.2,True,False,False\n"
    )
    text = "\n".join(W.tuning_edges_markdown(path))
    assert "in **1** no value trained" in text and "**0** still sit" in text
    untuned = text.split("No value trained (untuned")[1]
    assert "<td>FedAvg</td><td>lr=0.0003</td>" in untuned and "FedProx" not in untuned
    path.write_text("experiment,cell,chosen,at edge on the grid,at edge after the rule\n")
    assert W.tuning_edges_markdown(path) == []  # nothing tuned (the smoke profile): no section
