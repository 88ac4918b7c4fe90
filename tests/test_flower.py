"""The Flower apps (pflnb.flower): Flower's records carry every state exactly, the apps keep personal state on the
client, and Flower's simulation engine gives `pflnb run`'s numbers, bit for bit, for the issue's seven methods.

The records of `pflnb run` (the engine, :func:`pflnb.experiments.run.run`) and of the Flower apps are computed
independently, in different processes for Flower's clients, and compared by :func:`pflnb.flower.same_numbers`: the
clients sampled and their train metrics in every round, every client's val/test accuracy and loss on every evaluation
round, and the summary.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from pflnb import flower as F
from pflnb.experiments.config import ExperimentConfig, profile_config
from pflnb.experiments.run import run
from pflnb.fl import state as S

# the seven methods: the FedAvg family (FedAvg, FedBN, FedRep's two phases), Ditto's personal model, APFL's
# mixed pair, LG-Mix's after-aggregation mixing and Fed-CO2's two models with a fused evaluation
SEVEN = ("fedavg", "fedbn", "ditto", "fedrep", "apfl", "lgmix", "fedco2")
# more code paths, in this process (no Flower runtime): server states with int-keyed dicts and numpy arrays (COPA,
# FedPG), a server step that reads the clients' data (FedPG, pMixFed: server_data), a stateful E-step (FedEM), L2SGD's
# after-aggregation step, with partial participation
MORE = ("copa", "fedpg", "pmixfed", "fedem", "l2sgd")


def _smoke(method: str, **fields) -> ExperimentConfig:
    return profile_config("smoke", "digits5-lite", method=method, **fields)


# ---- records ----------------------------------------------------------------------------------------------------


def test_pack_and_unpack_carry_a_state_exactly():
    state = {
        "model": {"w": torch.randn(3, 4, dtype=torch.float64), "bn.num_batches_tracked": torch.tensor(7)},
        "heads": {0: {"b": torch.randn(2)}, 3: {"b": torch.randn(2)}},
        "hist": [0.1, float("nan"), 1e-300],
        "pair": (1, "x", None, True),
        "gram": np.arange(6.0).reshape(2, 3),
        "scalar": np.float32(0.5),
        "empty": {},
    }
    back = F.unpack(F.pack(state, "s"), "s")
    assert set(back) == set(state)
    assert S.equal(back["model"], state["model"]) and back["model"]["w"].dtype == torch.float64
    assert back["model"]["bn.num_batches_tracked"].dtype == torch.int64
    assert list(back["heads"]) == [0, 3] and torch.equal(back["heads"][3]["b"], state["heads"][3]["b"])
    assert back["hist"][0] == 0.1 and math.isnan(back["hist"][1]) and back["hist"][2] == 1e-300
    assert back["pair"] == (1, "x", None, True)
    assert np.array_equal(back["gram"], state["gram"]) and isinstance(back["gram"], np.ndarray)
    assert back["scalar"] == np.float32(0.5) and back["scalar"].dtype == np.float32
    assert back["empty"] == {}
    records = F.pack(state, "s")
    assert list(records.array_records["s.arrays"]) == [
        "model/w",
        "model/bn.num_batches_tracked",
        "heads/0/b",
        "heads/3/b",
        "gram",
    ]


def test_pack_refuses_what_a_record_cannot_carry():
    with pytest.raises(TypeError, match=r"cannot send a object at model/x"):
        F.pack({"model": {"x": object()}}, "s")
    with pytest.raises(TypeError, match="neither a string nor an integer"):
        F.pack({(1, 2): 0.0}, "s")


def test_run_config_gives_the_experiment_config_and_bad_input_is_named():
    cfg = F.config_from_run_config(
        {"method": "ditto", "profile": "smoke", "rounds": 3, "local-epochs": 2, "method-params": '{"lam": 0.1}', "out": "x"}
    )
    assert cfg == _smoke("ditto", rounds=3, local_epochs=2, method_params={"lam": 0.1})
    assert F.config_from_run_config({"method": "fedbn", "num-server-rounds": 5, "server-data": True}) == _smoke("fedbn", rounds=5)
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        F.config_from_run_config({"method": "nope"})
    with pytest.raises(ValueError, match="method-params must be a JSON object"):
        F.config_from_run_config({"method": "ditto", "method-params": "{lam: 1"})
    with pytest.raises(ValueError, match="unknown config field"):
        F.config_from_run_config({"method": "fedavg", "learning-rate": 0.1})
    with pytest.raises(F.FlowerUnsupported, match="held-out clients"):
        F.run_in_process(_smoke("fedavg", unseen_clients=1))


# ---- the apps' steps, in this process ---------------------------------------------------------------------------


def test_personal_state_stays_on_the_client():
    """FedBN: the BN entries never leave a client, live in its context.state between rounds, and differ per client."""
    cfg = _smoke("fedbn", rounds=2)
    states: dict = {}
    sent: list = []

    def send(kind, contents):
        replies = {cid: F.handle(kind, cid, c, states.setdefault(cid, F.RecordDict())) for cid, c in contents.items()}
        if kind == "train":
            sent.extend(r.array_records["message.arrays"] for r in replies.values())
        return replies

    record = F.serve(cfg, send, F.num_nodes(cfg))
    assert sent and all(not S.bn_keys(dict(a)) for a in sent), "a BN entry left a client"
    kept = [F.unpack(states[c], "pflnb-client")["personal"] for c in range(5)]
    assert kept[0] and set(kept[0]) == set(S.bn_keys(kept[0]))
    assert not S.equal(kept[0], kept[1]), "each client keeps its own BN statistics"
    assert record["summary"] == run(cfg, cache=False, progress=False)["summary"]


@pytest.mark.parametrize("method", MORE)
def test_apps_steps_give_the_engines_numbers(method):
    cfg = _smoke(method, rounds=2, participation=0.6)
    engine = run(cfg, cache=False, progress=False, warn=False)
    reads_data = method in ("fedpg", "pmixfed")
    if reads_data:
        with pytest.raises(F.FlowerUnsupported, match="server_data=True"):
            F.run_in_process(cfg)
    flower = F.run_in_process(cfg, server_data=reads_data)
    assert F.same_numbers(engine, flower) == []
    assert [r["selected"] for r in flower["rounds"]] != [list(range(5))] * 2, "participation 0.6 samples clients"


def test_flower_runs_the_engines_round_loop_divergence_check_and_record_included():
    """One round loop: a run that diverges stops at the same round, client and quantity through Flower as in the engine
    (the message check before the server step included), and Flower's record names the clients as the engine's."""
    cfg = _smoke("fedavg", lr=1e4)
    engine = run(cfg, cache=False, progress=False, warn=False)
    flower = F.run_in_process(cfg)
    assert "divergence" in engine and flower["status"] == "diverged"
    assert flower["divergence"] == engine["divergence"]
    assert len(flower["rounds"]) == len(engine["rounds"])
    fine = _smoke("lgmix", rounds=1)
    record, local = F.run_in_process(fine), run(fine, cache=False, progress=False)
    assert (record["clients"], record["domains"]) == (local["clients"], local["domains"])
    assert record["engine"] == "flower" and "final" not in record and record["rounds"][0]["internals"] == {}


def test_same_numbers_sees_a_difference():
    cfg = _smoke("fedavg")
    engine = run(cfg, cache=False, progress=False)
    other = json.loads(json.dumps(engine))
    other["rounds"][1]["client_metrics"]["2"]["loss"] += 1e-12
    other["evals"][0]["test_acc"][4] += 1e-12
    assert F.same_numbers(engine, engine) == []
    diffs = F.same_numbers(engine, other)
    assert len(diffs) == 2 and "round 2 client_metrics.2.loss" in diffs[0] and "evals[0].test_acc[4]" in diffs[1]
    assert F.same_numbers(engine, other, tol=1e-9) == []


# ---- Flower's simulation engine ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def simulated() -> dict[str, tuple[dict, dict]]:
    """The seven methods at the smoke profile through `pflnb run`'s engine and through one Flower simulation."""
    cfgs = [_smoke(m) for m in SEVEN]
    engine = [run(cfg, cache=False, progress=False) for cfg in cfgs]
    flower = F.run_flower(cfgs)
    return {cfg.method: (e, f) for cfg, e, f in zip(cfgs, engine, flower)}


@pytest.mark.flower
@pytest.mark.parametrize("method", SEVEN)
def test_flower_simulation_gives_pflnb_runs_numbers_bit_for_bit(simulated, method):
    engine, flower = simulated[method]
    assert flower["engine"] == "flower" and flower["status"] == "finished"
    assert F.same_numbers(engine, flower) == []
    assert flower["summary"] == engine["summary"]
    assert len(flower["rounds"]) == engine["config"]["rounds"] == 2
