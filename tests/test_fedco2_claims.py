"""Fed-CO2's claims and the package's table helpers, on synthetic run records with known verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from pflnb.experiments.claims import CONTRADICTED, INCONCLUSIVE, NOT_TESTABLE, PARTIAL, REPRODUCED, claims_table, write_claims
from pflnb.fl.engine import summarize
from pflnb.papers import fedco2
from pflnb.papers.fedco2 import claims as C
from pflnb.papers.fedco2 import experiments as E
from pflnb.papers.fedco2 import ntk_co2 as T


def rec(method, seed, acc, params=None, online=None, offline=None, n=2, partition="by-domain", num_clients=None, per_client=None):
    """A minimal run record: one evaluation round, every client at ``acc`` (or ``per_client``), Fed-CO2 components
    at ``online`` / ``offline`` when given."""
    accs = list(per_client) if per_client is not None else [acc] * n
    k = len(accs)
    e = {"round": 1, "val_acc": accs, "test_acc": accs, "val_loss": [0.0] * k, "test_loss": [0.0] * k}
    if online is not None:
        on = online if isinstance(online, list) else [online] * k
        off = offline if isinstance(offline, list) else [offline] * k
        e["extra"] = {"online_val_acc": on, "online_test_acc": on, "offline_val_acc": off, "offline_test_acc": off}
    r = {
        "config": {
            "method": method,
            "seed": seed,
            "method_params": dict(params or {}),
            "dataset": "toy",
            "partition": partition,
            "num_clients": num_clients or k,
        },
        "clients": [f"c{i}" for i in range(k)],
        "domains": [f"d{i}" for i in range(k)],
        "evals": [e],
    }
    r["summary"] = summarize(r)
    return r


SEEDS = (0, 1, 2)


def by_seed(base: float, deltas=(0.0, 0.004, -0.004)) -> list[float]:
    return [base + d for d in deltas]


def feature_records(co2=0.85, bn=0.80, best_other=("ditto", 0.70), avg=0.60):
    out = []
    for s, jit in zip(SEEDS, (0.0, 0.003, -0.003)):
        out += [rec("fedbn", s, bn + jit, {"weights": "uniform"}), rec("fedavg", s, avg + jit), rec("local", s, 0.78 + jit)]
        out.append(rec(best_other[0], s, best_other[1] + jit))
        out.append(rec("fedco2", s, co2 + jit + 0.002 * s, {"weights": "uniform"}, online=bn + jit, offline=0.78 + jit))
    return out


def test_feature_claims_compare_with_fedbn_and_the_strongest_baseline():
    cl = C.feature_claims(feature_records())
    assert [c.verdict for c in cl] == [REPRODUCED, REPRODUCED, REPRODUCED]
    assert cl[0].seeds == [0, 1, 2]
    cl = C.feature_claims(feature_records(best_other=("ditto", 0.90)))  # Ditto well above Fed-CO2 in every seed
    assert cl[1].verdict == CONTRADICTED and "Ditto" in cl[1].outcome.ours
    assert cl[0].verdict == REPRODUCED  # still above FedBN


def ablation_records(nt=(0.80, 0.78, 0.82), inter=(0.85, 0.83, 0.87), intra=(0.79, 0.84, 0.80), full=(0.84, 0.82, 0.86)):
    out = []
    for i, s in enumerate(SEEDS):
        out.append(
            rec(
                "fedco2", s, nt[i], {"intra": "none", "inter": "none", "weights": "uniform"}, online=0.79 + 0.01 * i, offline=0.75
            )
        )
        out.append(rec("fedco2", s, inter[i], {"intra": "none", "weights": "uniform"}, online=0.8, offline=0.8))
        out.append(rec("fedco2", s, intra[i], {"inter": "none", "weights": "uniform"}, online=0.8, offline=0.8))
        out.append(rec("fedco2", s, full[i], {"weights": "uniform"}, online=0.8, offline=0.8))
    return out


def references(shift=0.0):
    out = []
    for i, s in enumerate(SEEDS):
        out += [rec("fedbn", s, 0.79 + 0.01 * i + (shift if s == 1 else 0.0)), rec("local", s, 0.75)]
    return out


def test_ablation_claims_identity_transfers_and_fusion():
    cl = {c.claim: c for c in C.ablation_claims(ablation_records(), references())}
    ident = cl["Without transfers online = FedBN and offline = SingleSet (Table 10)"]
    assert ident.verdict == REPRODUCED and "bit-identical" in ident.outcome.ours
    assert cl["Feature skew: the online model beats the offline model (Table 10)"].verdict == REPRODUCED
    # fused (0.80, 0.78, 0.82) vs the better model, online (0.79, 0.80, 0.81): differences +0.01, −0.02, +0.01
    assert cl["Fusion without transfer is below the better of its two models (Table 10)"].verdict == INCONCLUSIVE
    assert cl["Inter-client transfer improves on no transfer (Table 5)"].verdict == REPRODUCED  # +5 in every seed
    assert cl["Intra-client transfer improves on no transfer (Table 5)"].verdict == INCONCLUSIVE  # −1, +6, −2
    both = cl["Both transfers together beat either alone (Table 5)"]
    assert both.verdict == CONTRADICTED and "inter only" in both.outcome.ours  # −1 against inter-only in every seed


def test_identity_claim_uses_the_stated_tolerance():
    off = {c.claim: c for c in C.ablation_claims(ablation_records(), references(shift=0.01))}
    assert off["Without transfers online = FedBN and offline = SingleSet (Table 10)"].verdict == CONTRADICTED
    loose = {c.claim: c for c in C.ablation_claims(ablation_records(), references(shift=0.01), identity_tol=0.05)}
    assert loose["Without transfers online = FedBN and offline = SingleSet (Table 10)"].verdict == REPRODUCED


def test_component_residuals_and_assert_components_match():
    abl = ablation_records()
    res = E.component_residuals(abl, references(shift=0.02))
    assert res["online"] == pytest.approx(0.02) and res["offline"] == 0.0
    assert E.assert_components_match(abl, references(), tol=0.0) == {"online": 0.0, "offline": 0.0}
    with pytest.raises(AssertionError, match="online model != FedBN"):
        E.assert_components_match(abl, references(shift=0.02), tol=0.0)
    assert E.assert_components_match(abl, references(shift=0.02), tol=0.03)["online"] == pytest.approx(0.02)
    with pytest.raises(ValueError, match="tol"):
        E.assert_components_match(abl, references(), tol=-1.0)
    with pytest.raises(ValueError, match="no-transfer"):
        E.component_residuals([r for r in abl if r["config"]["method_params"].get("intra") != "none"], references())
    with pytest.raises(ValueError, match="no local run with seed 2"):
        E.component_residuals(
            abl, [r for r in references() if not (r["config"]["method"] == "local" and r["config"]["seed"] == 2)]
        )
    assert E.identity_tolerance("cpu") == 0.0


def label_records(partition, co2, bn, local, avg=0.5, per_client_co2=None):
    out = []
    for i, s in enumerate(SEEDS):
        out.append(rec("fedavg", s, avg, partition=partition))
        pc = per_client_co2[i] if per_client_co2 is not None else None
        out.append(rec("fedco2-label", s, co2[i], online=bn[i], offline=local[i], partition=partition, per_client=pc))
    return out


def test_label_claims_compare_with_the_strongest_component_not_the_mean():
    # the case: Fed-CO2 above the mean of FedBN and Local, but below Local in every seed
    path = label_records("pathological", co2=(0.964, 0.962, 0.966), bn=(0.90, 0.91, 0.89), local=(0.965, 0.963, 0.967))
    dirich = label_records("dirichlet", co2=(0.84, 0.85, 0.83), bn=(0.70, 0.72, 0.69), local=(0.80, 0.81, 0.79))
    cl = C.label_claims({"pathological": path, "dirichlet": dirich})
    t3_path, fig4_path, t3_dir, fig4_dir = cl
    assert t3_path.verdict == CONTRADICTED and "offline model (= Local)" in t3_path.outcome.ours
    assert t3_dir.verdict == REPRODUCED
    assert fig4_path.verdict == REPRODUCED and fig4_dir.verdict == REPRODUCED  # fused above the weaker (FedBN)


def test_fig4_fused_against_the_per_client_weaker_model():
    # two clients: online better on client 0, offline better on client 1; fused in between on both
    recs = [
        rec("fedco2-label", s, None, online=[0.9, 0.5], offline=[0.6, 0.8], per_client=[0.7 + d, 0.6 + d], partition="dirichlet")
        for s, d in zip(SEEDS, (0.0, 0.01, -0.01))
    ]
    fv = E.fusion_vs_components(E.last_round_components(recs))
    assert np.allclose(fv["weaker"], 0.55) and np.allclose(fv["stronger"], 0.85)
    assert np.allclose(fv["Fed-CO2"], [0.65, 0.66, 0.64]) and np.allclose(fv["above_weaker"], 1.0)
    below = [rec("fedco2-label", s, None, online=[0.9, 0.5], offline=[0.6, 0.8], per_client=[0.55, 0.5]) for s in SEEDS]
    fv = E.fusion_vs_components(E.last_round_components(below))
    assert np.allclose(fv["above_weaker"], 0.5)  # client 0: 0.55 < 0.6
    fig4 = C.label_claims({"dirichlet": below})[1]
    assert fig4.verdict == CONTRADICTED  # 0.525 vs 0.55 in every seed


def test_client_count_claim_has_one_part_per_n():
    recs = []
    for n, co2 in ((5, 0.80), (10, 0.70)):
        for i, s in enumerate(SEEDS):
            j = 0.003 * i
            recs.append(rec("fedavg", s, 0.5, num_clients=n))
            recs.append(rec("fedco2-label", s, co2 + j, online=0.65, offline=0.75 + j, num_clients=n))
    (claim,) = C.client_count_claims(recs)
    assert claim.verdict == PARTIAL  # N = 5: above Local everywhere; N = 10: above FedBN but below Local everywhere
    verdicts = dict((k, o.verdict) for k, o in claim.outcome.parts)
    assert verdicts == {"N=5": REPRODUCED, "N=10": CONTRADICTED}
    df = E.client_count_frame(recs)
    assert set(df.method) == {"FedAvg", "Fed-CO2", C.ONLINE, C.OFFLINE} and set(df.clients) == {5, 10}


def test_label_feature_claim_has_two_named_parts():
    recs = []
    for i, s in enumerate(SEEDS):
        j = 0.002 * i
        recs += [rec("fedavg", s, 0.6 + j), rec("fedbn", s, 0.70 + j), rec("local", s, 0.80 - j)]
        recs.append(rec("fedco2", s, 0.78 + j, {"weights": "uniform"}, online=0.7, offline=0.8))
    (claim,) = C.label_feature_claims(recs)
    parts = dict(claim.outcome.parts)
    assert parts["Fed-CO2 best"].verdict == CONTRADICTED  # −2, −1.6, −1.2 points against Local
    assert parts["FedBN below Local"].verdict == REPRODUCED
    assert claim.verdict == PARTIAL


def test_personalize_claim_against_the_stronger_alternative():
    recs = []
    for s in SEEDS:
        recs.append(rec("fedco2", s, 0.80 + 0.001 * s, {"weights": "uniform"}, online=0.8, offline=0.8))
        recs.append(
            rec(
                "fedco2", s, 0.85 + 0.002 * s, {"bn": "shared", "personal": "head", "weights": "uniform"}, online=0.8, offline=0.8
            )
        )
        recs.append(rec("fedco2", s, 0.83, {"personal": "head", "weights": "uniform"}, online=0.8, offline=0.8))
    (claim,) = C.personalize_claims(recs)
    assert claim.verdict == CONTRADICTED and "classifier head" in claim.outcome.ours


def spectra_frame(quarter_a_ok: bool) -> pd.DataFrame:
    rows = []
    for data, (on, off) in {"A": (0.2, 0.3), "B": (0.002, 0.012)}.items():
        quarter = 0.25 * (on + off) if data == "B" else (0.25 if quarter_a_ok else 0.125)  # B: 0.0035 ≥ μ_on = 0.002
        vals = {
            "on": (on, 5.0),
            "off": (off, 4.0),
            "co2 (½, paper)": (0.5 * (on + off) + 0.01, 4.5),
            "co2 (¼, chain rule)": (quarter, 2.25),
        }
        for k, (lo, hi) in vals.items():
            rows.append({"data": data, "kernel": k, "lambda_min": lo, "lambda_max": hi, "inv_cond": lo / hi})
    return pd.DataFrame(rows)


def test_theory_claims_from_spectra_and_gd_order():
    gd_order = pd.DataFrame({"seed": [0, 1, 2], "holds": [True, True, False]})
    thm, quarter, gd = C._theory_claims(spectra_frame(quarter_a_ok=False), gd_order)
    assert thm.verdict == REPRODUCED
    assert quarter.verdict == PARTIAL  # fails on A (0.125 < 0.2), holds on B (0.0035 ≥ 0.002)
    assert dict(quarter.outcome.parts)["data A"].verdict == CONTRADICTED
    assert gd.verdict == CONTRADICTED and "2/3 seeds" in gd.outcome.ours and gd.seeds == [0, 1, 2]
    assert C._theory_claims(spectra_frame(quarter_a_ok=True), None)[2].verdict == NOT_TESTABLE


def test_theorem43_checks_on_monte_carlo_spectra_and_gd_ordering():
    spectra, V = T.spectra_table(n_mc=5_000)
    t = T.theorem43_checks(spectra).set_index("data")
    assert t[["psd", "interlacing", "weyl", "inv_cond_order", "half_beats_on"]].to_numpy().all()
    assert set(V) == {"A", "B"} and V["A"].shape == (24, 24)
    # a table where interlacing fails is caught
    bad = spectra.copy()
    bad.loc[(bad.data == "A") & (bad.kernel == "off"), "lambda_min"] = -1.0
    assert not T.theorem43_checks(bad).set_index("data").loc["A", "interlacing"]
    finals = pd.DataFrame(
        [
            {"data": "B", "seed": 0, "variant": v, "final_loss": L, "late_slope": sl}
            for v, L, sl in (("on", 1.0, -0.01), ("off", 0.05, -0.05), ("co2", 0.4, -0.02), ("co2x2", 0.3, -0.03))
        ]
        + [
            {"data": "B", "seed": 1, "variant": v, "final_loss": L, "late_slope": -0.01}
            for v, L in (("on", 1.0), ("off", 0.05), ("co2", 0.4), ("co2x2", 0.3))
        ]
    )
    order = T.gd_ordering(finals)
    assert order.holds.tolist() == [True, False]  # seed 1: co2x2's late slope is not steeper


def test_theory_tables_have_the_expected_shape():
    fw = T.finite_width_table((16,), inits=1)
    assert set(fw.kernel) == {"on", "off", "co2 (½, paper)", "G (γ-part)"} and set(fw.data) == {"A", "B"}
    gd = T.gd_tables(width=16, steps=10, seeds_b=2, every=5)
    assert set(gd["finals"].groupby("data").seed.nunique().items()) == {("A", 1), ("B", 2)}
    assert len(gd["bounds"]) == 2 * len(T.VARIANTS) * 3  # steps 0, 5, 10 at seed 0 of A and B


def test_vocabulary_settings_seeds_methods_and_paper_label_rule():
    from pflnb.algorithms import get_algorithm_class

    assert fedco2.seeds("cpu") == [0, 1, 2] and fedco2.seeds("smoke") == [0]
    s = fedco2.settings("cpu")
    assert set(s["seeds"]) == set(E.EXPERIMENTS) and s["label_co2_params"] == {}
    for method, params in fedco2.METHODS.values():
        get_algorithm_class(method).Params(**params).validate()  # every entry is a valid registry method + parameters
    assert fedco2.METHODS["Fed-CO2 (Algorithm 2, BN affine personal)"] == ("fedco2-label", {"bn": "affine"})
    paper = E.label_configs("paper", [0, 1], available=False)
    co2 = [c for c in paper["dirichlet"] if c.method == "fedco2-label"]
    assert [c.method_params for c in co2] == [{"bn": "affine"}, {"bn": "affine"}] and co2[0].participation == 0.05
    cpu = E.label_configs("cpu", [0], available=False)["pathological"]
    assert [(c.method, c.method_params) for c in cpu] == [("fedavg", {}), ("fedco2-label", {})]
    ncl = E.client_count_configs("cpu", [0, 1])
    assert sorted({c.num_clients for c in ncl}) == [5, 10, 20, 40] and len(ncl) == 4 * 2 * 2
    # the N = 20 runs are the label-skew Dirichlet runs (same cache key)
    dirichlet = {c.key() for c in E.label_configs("cpu", [0, 1])["dirichlet"]}
    assert {c.key() for c in ncl if c.num_clients == 20} == dirichlet
    with pytest.raises(ValueError, match="profile"):
        fedco2.settings("laptop")


def _all_claims(gd_order: pd.DataFrame | None = None) -> list:
    """Every Fed-CO2 claim from small synthetic inputs (label skew: Fed-CO2 ahead of both components)."""
    path = label_records("pathological", co2=(0.9, 0.91, 0.92), bn=(0.8, 0.8, 0.8), local=(0.85, 0.85, 0.85))
    dirich = label_records("dirichlet", co2=(0.8, 0.81, 0.82), bn=(0.7, 0.7, 0.7), local=(0.75, 0.75, 0.75))
    return C.claims(
        spectra=spectra_frame(True),
        gd_order=gd_order,
        feat=feature_records(),
        abl=ablation_records(),
        pers=[
            rec("fedco2", s, 0.8, p | {"weights": "uniform"}, online=0.8, offline=0.8)
            for s in SEEDS
            for p in E.PERSONALIZE.values()
        ],
        label={"pathological": path, "dirichlet": dirich},
        lf=feature_records(),
        ncl=dirich,
    )


def test_claims_end_to_end_writes_a_table(tmp_path):
    cl = _all_claims()
    assert len(cl) == 19
    table = write_claims(cl, tmp_path / "claims.csv")
    assert table.equals(claims_table(cl)) and (tmp_path / "claims.csv").exists()
    assert all(c.seeds for c in cl[3:])  # every experimental claim states its seeds


def test_identity_tolerance_is_zero_on_cpu_and_on_deterministic_cuda(monkeypatch):
    assert E.identity_tolerance("cpu") == 0.0 and E.identity_tolerance(torch.device("cpu")) == 0.0
    monkeypatch.setattr(torch, "are_deterministic_algorithms_enabled", lambda: True)
    assert E.identity_tolerance(torch.device("cuda")) == 0.0
    monkeypatch.setattr(torch, "are_deterministic_algorithms_enabled", lambda: False)
    assert E.identity_tolerance(torch.device("cuda")) == 0.05


def test_stand_in_claims_are_marked():
    """The ¼-kernel claim and the toy GD claim are stand-ins (the paper states the ½ kernel and a rate bound); the
    Thm 4.3 row tests the paper's own inequality and every experimental claim its own comparison."""
    cl = _all_claims(pd.DataFrame({"seed": [0, 1, 2], "holds": [True, True, True]}))
    marked = {c.claim for c in cl if c.stand_in}
    assert marked == {
        "Same-η speed-up under the chain-rule kernel ¼(V_on+V_off)",
        "GD on the averaged model converges faster than FedBN on severe feature skew (toy data B)",
    }
    gd = next(c for c in cl if c.claim.startswith("GD on the averaged model"))
    assert gd.row()["verdict"] == "reproduced (stand-in)" and gd.row()["category"] == REPRODUCED
    assert all("the paper states" in c.stand_in and "we test" in c.stand_in for c in cl if c.stand_in)
