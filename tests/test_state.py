import pytest
import torch

from pflnb.fl import state as S


def _states():
    g = torch.Generator().manual_seed(0)
    mk = lambda: {  # noqa: E731
        "fc.weight": torch.randn(3, 4, generator=g),
        "bn1.running_mean": torch.randn(3, generator=g),
        "bn1.num_batches_tracked": torch.tensor(5),
    }
    return mk(), mk(), mk()


def test_weighted_average_matches_formula_and_keeps_integers():
    a, b, c = _states()
    avg = S.weighted_average([a, b, c], [1.0, 2.0, 3.0])
    expected = (a["fc.weight"] + 2 * b["fc.weight"] + 3 * c["fc.weight"]) / 6
    torch.testing.assert_close(avg["fc.weight"], expected, rtol=0, atol=1e-6)
    assert avg["bn1.num_batches_tracked"].item() == 5
    assert avg["bn1.num_batches_tracked"].dtype == torch.int64


def test_average_of_identical_states_is_exact():
    a, _, _ = _states()
    avg = S.weighted_average([a, S.clone(a), S.clone(a)], [0.2, 0.3, 0.5])
    torch.testing.assert_close(avg["fc.weight"], a["fc.weight"], rtol=0, atol=1e-7)


def test_uniform_weights_by_default():
    a, b, _ = _states()
    assert S.equal(S.weighted_average([a, b]), S.weighted_average([a, b], [7.0, 7.0]))


@pytest.mark.parametrize("weights", [[-1.0, 2.0], [0.0, 0.0], [1.0]])
def test_bad_weights_raise(weights):
    a, b, _ = _states()
    with pytest.raises(ValueError, match="weights"):
        S.weighted_average([a, b], weights)


def test_mismatched_keys_raise():
    a, b, _ = _states()
    b.pop("fc.weight")
    with pytest.raises(KeyError):
        S.weighted_average([a, b])


def test_mix_limits_and_per_key():
    a, b, _ = _states()
    assert S.equal(S.mix(a, b, 1.0), a)
    assert S.equal(S.mix(a, b, 0.0), b, keys=["fc.weight", "bn1.running_mean"])
    m = S.mix(a, b, {"fc.weight": 1.0, "bn1.running_mean": 0.0})
    assert torch.equal(m["fc.weight"], a["fc.weight"]) and torch.equal(m["bn1.running_mean"], b["bn1.running_mean"])
    torch.testing.assert_close(S.mix(a, b, 0.3)["fc.weight"], 0.3 * a["fc.weight"] + 0.7 * b["fc.weight"])


def test_add_sub_scale_round_trip():
    a, b, _ = _states()
    d = S.sub(a, b)
    assert d["bn1.num_batches_tracked"].item() == 0
    back = S.add(b, d)
    torch.testing.assert_close(back["fc.weight"], a["fc.weight"], rtol=0, atol=1e-6)
    torch.testing.assert_close(S.scale(d, 2.0)["fc.weight"], 2 * d["fc.weight"])


def test_flatten_unflatten_round_trip_and_norm():
    a, b, _ = _states()
    v = S.flatten(a)
    assert v.numel() == 12 + 3
    assert S.equal(S.unflatten(v, a), a)
    assert S.distance(a, a) == 0.0
    assert S.norm(a) == pytest.approx(float(v.double().norm()))
    with pytest.raises(ValueError):
        S.unflatten(torch.zeros(3), a)


def test_select_update_and_bn_names():
    a, b, _ = _states()
    upd = S.update(a, S.select(b, ["fc.weight"]))
    assert torch.equal(upd["fc.weight"], b["fc.weight"]) and torch.equal(upd["bn1.running_mean"], a["bn1.running_mean"])
    with pytest.raises(KeyError):
        S.update(a, {"nope": torch.zeros(1)})
    assert S.is_bn_key("bn1.weight") and S.is_bn_key("features.bn3.running_var")
    assert not S.is_bn_key("fc.weight") and not S.is_bn_key("head.bias")
    assert S.bn_keys(a) == ["bn1.running_mean", "bn1.num_batches_tracked"]
