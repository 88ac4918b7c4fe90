"""Shared fixtures: a tiny synthetic federated dataset (no files, no downloads) and model factories."""

from __future__ import annotations

import os

import pytest
import torch

from pflnb.data.federated import ClientData, FederatedDataset, Split

try:  # `make unit` runs the tests on two pytest-xdist workers; the GPU machine and a plain `pytest` may lack xdist
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # pragma: no cover
    LoadScopeScheduling = None

torch.set_num_threads(1)  # tiny test models: one thread is as fast and immune to oversubscription
os.environ.setdefault("PFLNB_RESULTS", os.path.join(os.path.dirname(__file__), "..", "results", "_pytest"))


def _split(gen: torch.Generator, n: int, shift: float, shape: tuple[int, int, int], num_classes: int) -> Split:
    y = torch.randint(0, num_classes, (n,), generator=gen)
    x = torch.randn((n, *shape), generator=gen) * 0.5
    x[:, 0, 0, :] += torch.nn.functional.one_hot(y, shape[2]).float()[:, : shape[2]] * 2.0  # class signal
    return Split(x + shift, y)


def make_toy_data(
    num_clients: int = 3,
    n: int = 24,
    shape: tuple[int, int, int] = (1, 8, 8),
    num_classes: int = 4,
    unseen: int = 0,
    seed: int = 0,
) -> FederatedDataset:
    """A tiny feature-shift dataset: client c's inputs are shifted by 0.5·c."""
    gen = torch.Generator().manual_seed(seed)
    clients = []
    for c in range(num_clients + unseen):
        sp = [_split(gen, m, 0.5 * c, shape, num_classes) for m in (n, n // 2, n // 2)]
        clients.append(ClientData(c, f"toy{c}", f"domain{c}", *sp))
    return FederatedDataset("toy", clients[:num_clients], num_classes, shape, unseen=clients[num_clients:])


@pytest.fixture
def toy_data() -> FederatedDataset:
    return make_toy_data()


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``gpu`` when CUDA is absent."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # the mark, not any node named "gpu" (e.g. a checkout folder)
            item.add_marker(skip)


# Test files whose tests must run on one xdist worker, one after another: those sharing a local Ray instance (Ray's and
# Flower's), and the site's build (one build of _site/test at a time; its module fixture set up once). xdist's own
# `xdist_group` marks do nothing under pytest 9 (xdist 3.8 renames `item._nodeid`, which pytest 9's `nodeid` no longer
# reads), so `--dist loadgroup` is carried out here, by file.
XDIST_GROUPS = {
    "test_ray.py": "ray",
    "test_ray_connect.py": "ray",
    "test_flower.py": "ray",
    "test_flower_app.py": "ray",
    "test_site.py": "site",
}


def xdist_scope(nodeid: str) -> str:
    """The work unit of a test: its group's name for the files of :data:`XDIST_GROUPS`, else the test alone."""
    return XDIST_GROUPS.get(nodeid.split("::", 1)[0].rsplit("/", 1)[-1], nodeid)


if LoadScopeScheduling is not None:

    class GroupScheduling(LoadScopeScheduling):
        """xdist's load scheduling with the groups of :data:`XDIST_GROUPS` kept together (the largest unit first)."""

        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(config, log):
        return GroupScheduling(config, log) if config.getoption("dist") == "loadgroup" else None
