"""Fed-CO2's update rules, one small step at a time, against states computed independently in the test.

Each test calls only the algorithm's public hooks (``init``, ``local_train``, ``aggregate``, ``eval_module``), so it
holds whatever loop implements them. The expected states are written here from the paper's equations with plain
tensor arithmetic (autograd gives the gradient of the loss written in the test; the SGD step is θ − η·g):

* intra-client transfer (Eqs. 4–5): the online model descends KL(p_teacher-offline ‖ p_online), the offline model
  KL(p_teacher-online ‖ p_offline), both teachers frozen copies from the start of the round, in eval mode;
* local adaptation with inter-client transfer (Eqs. 6–7): CE of the model's own head + μ·Σ_{j≠i} CE of client j's
  frozen offline head (eval mode) on the model's features, after the intra phase;
* the server (Eq. 2): the online models' non-BN entries averaged with the stated weights, BN entries kept on the
  clients, offline models never averaged, the sent offline heads stored;
* evaluation (Eq. 3): the sum of the online and offline logits.

Everything runs in float64 with one batch per epoch (batch size ≥ the client's training set), so the expected and
actual states agree to ~1e-12 and any wrong sign, swapped teacher, wrong phase order or missing term is far off.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import make_toy_data

from pflnb.algorithms import make_algorithm
from pflnb.data.federated import ClientData, FederatedDataset, Split
from pflnb.fl import OptimConfig
from pflnb.fl import state as S
from pflnb.fl.engine import Context
from pflnb.models import build_model

MODEL = "co2-cnn"
LR = 0.2
TOL = 1e-10


def _double(data: FederatedDataset) -> FederatedDataset:
    def sp(s: Split) -> Split:
        return Split(s.x.double(), s.y)

    clients = [ClientData(c.cid, c.name, c.domain, sp(c.train), sp(c.val), sp(c.test)) for c in data.clients]
    return FederatedDataset(data.name, clients, data.num_classes, data.input_shape)


def _setup(n_per_client: tuple[int, ...] = (8, 8, 8)):
    base = [
        make_toy_data(num_clients=1, n=n, shape=(3, 8, 8), num_classes=4, seed=i).clients[0] for i, n in enumerate(n_per_client)
    ]
    clients = [ClientData(i, f"c{i}", f"d{i}", c.train, c.val, c.test) for i, c in enumerate(base)]
    data = _double(FederatedDataset("toy", clients, 4, (3, 8, 8)))
    batch = max(n_per_client)  # one batch per epoch: the permutation cannot matter
    opt = OptimConfig(lr=LR, batch_size=batch, local_epochs=1, momentum=0.0, weight_decay=0.0)

    def model_fn():
        return build_model(MODEL, data.input_shape, data.num_classes).double()

    ctx = Context(data, model_fn, opt, seed=0, device=torch.device("cpu"))
    return data, ctx, model_fn


def _random_state(model_fn, seed: int) -> S.State:
    """A model state with random weights and non-trivial BN statistics (so that eval and train mode differ)."""
    torch.manual_seed(seed)
    state = S.clone(model_fn().state_dict())
    g = torch.Generator().manual_seed(seed + 1000)
    for k, v in state.items():
        if k.endswith("running_mean"):
            state[k] = 0.3 * torch.randn(v.shape, generator=g, dtype=v.dtype)
        elif k.endswith("running_var"):
            state[k] = 0.5 + torch.rand(v.shape, generator=g, dtype=v.dtype)
        elif v.is_floating_point() and (k.endswith(".weight") or k.endswith(".bias")) and ("bn" in k):
            state[k] = v + 0.2 * torch.randn(v.shape, generator=g, dtype=v.dtype)
    return state


def _module(model_fn, state: S.State, train: bool):
    m = model_fn()
    m.load_state_dict(state)
    return m.train(train)


def _sgd(model: torch.nn.Module, loss: torch.Tensor, lr: float = LR) -> None:
    """θ ← θ − η ∇loss over every parameter of ``model`` (plain SGD, no momentum)."""
    params = list(model.parameters())
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    with torch.no_grad():
        for p, g in zip(params, grads):
            if g is not None:
                p -= lr * g


def _kl(teacher_logits: torch.Tensor, student_logits: torch.Tensor) -> torch.Tensor:
    """KL(p_t ‖ p_s), summed over classes, averaged over the batch (T = 1)."""
    pt = torch.softmax(teacher_logits, 1)
    return (pt * (torch.log(pt) - torch.log_softmax(student_logits, 1))).sum(1).mean()


def _assert_state(actual: S.State, expected: S.State, what: str) -> None:
    assert set(actual) == set(expected), what
    for k in expected:
        if expected[k].is_floating_point():
            err = float((actual[k].double() - expected[k]).abs().max())
            assert err < TOL, f"{what}: {k} differs by {err:.3g}"
        else:
            assert torch.equal(actual[k], expected[k]), f"{what}: {k}"


def _start(algo, ctx, model_fn, cid: int):
    """Server and client states with a personal online BN part and an offline model different from the online one."""
    server, clients = algo.init(ctx, _random_state(model_fn, 0))
    c = clients[cid]
    online_full = _random_state(model_fn, 10 + cid)  # BN entries of the client differ from the server's
    c["personal"] = S.select(online_full, algo.personal_keys(ctx))
    c["offline"] = _random_state(model_fn, 20 + cid)
    server["heads"] = {j: S.select(_random_state(model_fn, 30 + j), ctx.head_keys) for j in server["heads"]}
    return server, clients


@pytest.mark.parametrize("intra", ["both", "online", "offline"])
def test_intra_client_transfer_one_step_matches_eqs_4_and_5(intra):
    data, ctx, model_fn = _setup()
    algo = make_algorithm("fedco2", {"intra": intra, "inter": "none"})
    cid = 1
    server, clients = _start(algo, ctx, model_fn, cid)
    ctx.round = 2  # mutual learning runs from round 2 on
    on0 = algo.client_state(server, clients[cid])
    off0 = S.clone(clients[cid]["offline"])
    up = algo.local_train(ctx, cid, server, clients[cid])

    x, y = data.clients[cid].train.x, data.clients[cid].train.y
    t_on, t_off = _module(model_fn, on0, False), _module(model_fn, off0, False)  # frozen start-of-round teachers
    with torch.no_grad():
        z_t_on, z_t_off = t_on(x), t_off(x)
    on, off = _module(model_fn, on0, True), _module(model_fn, off0, True)
    if intra in ("both", "online"):
        _sgd(on, _kl(z_t_off, on(x)))  # Eq. 4: the online model learns from the offline teacher
    if intra in ("both", "offline"):
        _sgd(off, _kl(z_t_on, off(x)))  # Eq. 5: the offline model learns from the online teacher
    _sgd(on, F.cross_entropy(on(x), y))  # then local adaptation (no inter-client transfer here)
    _sgd(off, F.cross_entropy(off(x), y))

    exp_on, exp_off = S.clone(on.state_dict()), S.clone(off.state_dict())
    _assert_state(up.client["offline"], exp_off, "offline model")
    _assert_state(up.client["personal"], S.select(exp_on, algo.personal_keys(ctx)), "online personal part")
    _assert_state(up.message["state"], S.select(exp_on, algo.shared_keys(ctx)), "online shared part sent")
    assert "head" not in up.message  # without inter-client transfer nothing of the offline model is sent
    assert up.metrics["intra_steps"] == 1


def test_no_mutual_learning_in_round_one():
    data, ctx, model_fn = _setup()
    algo = make_algorithm("fedco2", {"inter": "none"})
    server, clients = _start(algo, ctx, model_fn, 0)
    ctx.round = 1
    on0, off0 = algo.client_state(server, clients[0]), S.clone(clients[0]["offline"])
    up = algo.local_train(ctx, 0, server, clients[0])
    x, y = data.clients[0].train.x, data.clients[0].train.y
    on, off = _module(model_fn, on0, True), _module(model_fn, off0, True)
    _sgd(on, F.cross_entropy(on(x), y))
    _sgd(off, F.cross_entropy(off(x), y))
    _assert_state(up.client["offline"], S.clone(off.state_dict()), "offline model")
    _assert_state(up.client["personal"], S.select(S.clone(on.state_dict()), algo.personal_keys(ctx)), "online personal")


@pytest.mark.parametrize(("inter", "reduction", "mu"), [("both", "sum", 1.0), ("online", "sum", 0.7), ("offline", "mean", 1.0)])
def test_inter_client_transfer_one_step_matches_eqs_6_and_7(inter, reduction, mu):
    data, ctx, model_fn = _setup()
    algo = make_algorithm("fedco2", {"intra": "none", "inter": inter, "gen_reduction": reduction, "gen_weight": mu})
    cid = 0
    server, clients = _start(algo, ctx, model_fn, cid)
    heads_before = {j: S.clone(h) for j, h in server["heads"].items()}
    ctx.round = 3
    on0, off0 = algo.client_state(server, clients[cid]), S.clone(clients[cid]["offline"])
    up = algo.local_train(ctx, cid, server, clients[cid])

    x, y = data.clients[cid].train.x, data.clients[cid].train.y
    foreign = []
    for j in (1, 2):  # every other client's offline head, frozen, in eval mode (its BN1d running statistics)
        h = model_fn().head
        h.load_state_dict({k[len("head.") :]: v for k, v in heads_before[j].items()})
        foreign.append(h.eval().requires_grad_(False))

    def loss(model: torch.nn.Module, use_gen: bool) -> torch.Tensor:
        f = model.features(x)
        ce = F.cross_entropy(model.head(f), y)
        if not use_gen:
            return ce
        gens = torch.stack([F.cross_entropy(h(f), y) for h in foreign])
        return ce + mu * (gens.sum() if reduction == "sum" else gens.mean())

    on, off = _module(model_fn, on0, True), _module(model_fn, off0, True)
    _sgd(on, loss(on, inter in ("both", "online")))
    _sgd(off, loss(off, inter in ("both", "offline")))
    exp_on, exp_off = S.clone(on.state_dict()), S.clone(off.state_dict())
    _assert_state(up.client["offline"], exp_off, "offline model")
    _assert_state(up.client["personal"], S.select(exp_on, algo.personal_keys(ctx)), "online personal part")
    _assert_state(up.message["state"], S.select(exp_on, algo.shared_keys(ctx)), "online shared part sent")
    _assert_state(up.message["head"], S.select(exp_off, ctx.head_keys), "offline head sent")
    for j, h in heads_before.items():  # the foreign heads are not trained
        _assert_state(server["heads"][j], h, f"server head {j}")


def test_intra_then_inter_phase_order():
    """With both transfers, the KL phase comes first and the CE + L_gen phase starts from its result."""
    data, ctx, model_fn = _setup()
    algo = make_algorithm("fedco2")
    cid = 2
    server, clients = _start(algo, ctx, model_fn, cid)
    ctx.round = 2
    on0, off0 = algo.client_state(server, clients[cid]), S.clone(clients[cid]["offline"])
    heads = {j: S.clone(h) for j, h in server["heads"].items()}
    up = algo.local_train(ctx, cid, server, clients[cid])

    x, y = data.clients[cid].train.x, data.clients[cid].train.y
    with torch.no_grad():
        z_t_on, z_t_off = _module(model_fn, on0, False)(x), _module(model_fn, off0, False)(x)
    foreign = []
    for j in (0, 1):
        h = model_fn().head
        h.load_state_dict({k[len("head.") :]: v for k, v in heads[j].items()})
        foreign.append(h.eval().requires_grad_(False))
    on, off = _module(model_fn, on0, True), _module(model_fn, off0, True)
    _sgd(on, _kl(z_t_off, on(x)))
    _sgd(off, _kl(z_t_on, off(x)))
    for m in (on, off):
        f = m.features(x)
        _sgd(m, F.cross_entropy(m.head(f), y) + sum(F.cross_entropy(h(f), y) for h in foreign))
    _assert_state(up.client["offline"], S.clone(off.state_dict()), "offline model")
    _assert_state(up.message["state"], S.select(S.clone(on.state_dict()), algo.shared_keys(ctx)), "online shared part")


@pytest.mark.parametrize("weights", ["uniform", "n_samples"])
def test_server_averages_the_online_models_like_fedbn_and_keeps_offline_local(weights):
    data, ctx, model_fn = _setup(n_per_client=(6, 8, 12))
    algo = make_algorithm("fedco2", {"weights": weights})
    server, clients = algo.init(ctx, _random_state(model_fn, 0))
    shared, personal = algo.shared_keys(ctx), algo.personal_keys(ctx)
    assert not set(shared) & set(ctx.bn_keys) and set(personal) == set(ctx.bn_keys)
    sent = {c: {"state": S.select(_random_state(model_fn, 40 + c), shared)} for c in (0, 2)}  # client 1 not sampled
    sent[2]["head"] = S.select(_random_state(model_fn, 50), ctx.head_keys)
    offline_before = [S.clone(c["offline"]) for c in clients]
    new = algo.aggregate(ctx, server, sent)

    w = {0: 1.0, 2: 1.0} if weights == "uniform" else {0: 6.0, 2: 12.0}
    for k in shared:
        v0, v2 = sent[0]["state"][k], sent[2]["state"][k]
        if v0.is_floating_point():
            expected = (w[0] * v0 + w[2] * v2) / (w[0] + w[2])
            assert float((new["model"][k] - expected).abs().max()) < TOL, k
    for k in personal:  # the server's copy of the BN entries is not touched
        assert torch.equal(new["model"][k], server["model"][k]), k
    assert S.equal(new["heads"][2], sent[2]["head"])  # stored for the next round's inter-client transfer
    assert S.equal(new["heads"][0], server["heads"][0]) and S.equal(new["heads"][1], server["heads"][1])
    for c, before in enumerate(offline_before):  # offline models stay on the clients, unchanged by the server
        assert S.equal(clients[c]["offline"], before)
    # a client's next online model: the averaged shared entries with its own BN entries
    clients[1]["personal"] = S.select(_random_state(model_fn, 60), personal)
    full = algo.client_state(new, clients[1])
    assert all(torch.equal(full[k], clients[1]["personal"][k]) for k in personal)
    assert all(torch.equal(full[k], new["model"][k]) for k in shared)


def test_evaluation_fuses_online_and_offline_logits():
    data, ctx, model_fn = _setup()
    algo = make_algorithm("fedco2")
    server, clients = _start(algo, ctx, model_fn, 1)
    x = data.clients[1].test.x
    on = _module(model_fn, algo.client_state(server, clients[1]), False)
    off = _module(model_fn, clients[1]["offline"], False)
    with torch.no_grad():
        expected = on(x) + off(x)
        got = algo.eval_module(ctx, 1, server, clients[1]).eval()(x)
    assert float((got - expected).abs().max()) < TOL


def test_label_skew_variant_is_two_independent_sgd_steps():
    """Algorithm 2 (``fedco2-label``): no transfer at any round; each model takes its own CE step."""
    data, ctx, model_fn = _setup()
    algo = make_algorithm("fedco2-label", {"bn": "affine"})
    server, clients = _start(algo, ctx, model_fn, 0)
    assert not any("running" in k for k in algo.personal_keys(ctx))  # affine rule: running statistics are shared
    ctx.round = 5
    on0, off0 = algo.client_state(server, clients[0]), S.clone(clients[0]["offline"])
    up = algo.local_train(ctx, 0, server, clients[0])
    x, y = data.clients[0].train.x, data.clients[0].train.y
    on, off = _module(model_fn, on0, True), _module(model_fn, off0, True)
    _sgd(on, F.cross_entropy(on(x), y))
    _sgd(off, F.cross_entropy(off(x), y))
    _assert_state(up.client["offline"], S.clone(off.state_dict()), "offline model")
    _assert_state(up.message["state"], S.select(S.clone(on.state_dict()), algo.shared_keys(ctx)), "online shared part")
    assert set(up.message) == {"state"}
