"""Fig. 10's measure (pflnb/papers/fedfac/featuremaps.py): per-channel correlation of two models' maps, the maps of
a named layer, and the per-seed means of the shared and personalized channels."""

import numpy as np
import pytest
import torch

from pflnb.papers.fedfac.featuremaps import channel_correlation, channel_similarity, fedavg_accuracy, layer_maps


def test_channel_correlation_is_per_channel_over_images_and_positions():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4, 5, 5))
    b = a.copy()
    b[:, 1] = -2 * a[:, 1] + 1  # channel 1 anticorrelated, affine
    b[:, 2] = rng.normal(size=(3, 5, 5))  # channel 2 independent
    b[:, 3] = 7.0  # channel 3 constant
    c = channel_correlation(a, b)
    assert c[0] == pytest.approx(1.0) and c[1] == pytest.approx(-1.0) and abs(c[2]) < 0.3 and np.isnan(c[3])
    x = np.moveaxis(a, 1, 0).reshape(4, -1)[2]
    y = np.moveaxis(b, 1, 0).reshape(4, -1)[2]
    assert c[2] == pytest.approx(np.corrcoef(x, y)[0, 1])
    with pytest.raises(ValueError, match="one shape"):
        channel_correlation(a, b[:, :2])


def test_layer_maps_reads_the_named_submodule():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten())
    x = torch.randn(2, 1, 4, 4)
    maps = layer_maps(net, "0", x)
    assert maps.shape == (2, 3, 4, 4) and np.allclose(maps, net[0](x).detach().numpy())


def test_channel_similarity_averages_each_group_over_clients():
    rec = {"featuremaps": {"shared": [True, False, True], "correlation": [[0.9, 0.1, 0.7], [0.8, np.nan, 0.6]]}}
    sim = channel_similarity([rec], [3])
    assert sim["shared"][3] == pytest.approx(0.75) and sim["personalized"][3] == pytest.approx(0.1)


def test_fedavg_accuracy_is_read_per_seed():
    recs = [{"featuremaps": {"fedavg_test_acc": 0.13}}, {"featuremaps": {"fedavg_test_acc": 0.71}}]
    assert fedavg_accuracy(recs, [4, 2]) == {4: 0.13, 2: 0.71}
