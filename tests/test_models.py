import pytest
import torch

from pflnb.fl import state as S
from pflnb.models import MODELS, AlexNetBN, build_model


@pytest.mark.parametrize("name", sorted(m for m in MODELS if "alexnet" not in m))  # AlexNets need ≥ 64 px: below
@pytest.mark.parametrize("shape", [(3, 16, 16), (1, 28, 28)])
def test_model_contract(name, shape):
    torch.manual_seed(0)
    model = build_model(name, shape, 7)
    model.eval()
    x = torch.randn(5, *shape)
    h = model.features(x)
    assert h.shape == (5, model.feat_dim)
    out = model(x)
    assert out.shape == (5, 7)
    torch.testing.assert_close(model.head(h), out)
    keys = list(model.state_dict())
    assert model.head_keys() and all(k.startswith("head.") for k in model.head_keys())
    assert sorted(model.head_keys() + model.body_keys()) == sorted(keys)
    layered = [k for _, ks in model.layers() for k in ks]
    assert sorted(layered) == sorted(keys)  # every entry belongs to exactly one layer
    assert model.layers()[-1][0].startswith("head")
    # BN keys come from module types; FedBN's name rule ("bn*" modules) finds a subset of them
    # (torchvision-style names such as "downsample.1" are normalization layers too)
    assert set(S.bn_keys(model.state_dict())) <= set(model.bn_keys())


def test_bn_models_have_bn_and_plain_models_not():
    assert build_model("small-bn-cnn", (3, 8, 8), 10).bn_keys()
    assert build_model("digit", (3, 28, 28), 10).bn_keys()
    assert not build_model("cnn", (1, 28, 28), 10).bn_keys()
    assert not build_model("mlp", (1, 8, 8), 10).bn_keys()


def test_digit_model_matches_fedbn_shapes():
    m = build_model("digit", (3, 28, 28), 10)
    assert m.fc1.in_features == 6272 and m.fc2.out_features == 512 and m.head.in_features == 512


def test_alexnet_bn_forward_small_input():
    m = AlexNetBN(10)
    m.eval()
    assert m(torch.randn(2, 3, 64, 64)).shape == (2, 10)
    assert len(m.bn_keys()) == 7 * 5  # weight, bias, running_mean, running_var, num_batches_tracked


@pytest.mark.parametrize("name", sorted(m for m in MODELS if "alexnet" in m))
def test_alexnet_variants_contract(name):
    m = build_model(name, (3, 64, 64), 10)
    m.eval()
    x = torch.randn(2, 3, 64, 64)
    torch.testing.assert_close(m.head(m.features(x)), m(x))
    assert sorted(k for _, ks in m.layers() for k in ks) == sorted(m.state_dict())


def test_unknown_model_and_bad_shape():
    with pytest.raises(ValueError, match="unknown model"):
        build_model("resnet999", (3, 8, 8), 10)
    with pytest.raises(ValueError, match="square"):
        build_model("cnn", (3, 8, 16), 10)
