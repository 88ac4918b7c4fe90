"""Helpers behind the baselines notebook: identical-method check and APFL's α summary."""

import pandas as pd
import pytest

from pflnb.experiments.baselines import apfl_alpha, identical_methods


def test_identical_methods_compares_every_seed_of_one_setting():
    s = pd.DataFrame(
        [
            {"setting": "x", "method": "a", "seed": 0, "test_acc": 0.5},
            {"setting": "x", "method": "a", "seed": 1, "test_acc": 0.6},
            {"setting": "x", "method": "b", "seed": 1, "test_acc": 0.6},
            {"setting": "x", "method": "b", "seed": 0, "test_acc": 0.5},
            {"setting": "x", "method": "c", "seed": 0, "test_acc": 0.5},
            {"setting": "x", "method": "c", "seed": 1, "test_acc": 0.61},
            {"setting": "y", "method": "a", "seed": 0, "test_acc": 0.1},
        ]
    )
    assert identical_methods(s, "a", "b", "x")
    assert not identical_methods(s, "a", "c", "x")
    assert not identical_methods(s, "a", "b", "y")  # b absent there


def test_apfl_alpha_summary():
    rec = lambda m, alphas: {"config": {"method": m}, "rounds": [{"internals": {"alpha": alphas}}]}  # noqa: E731
    t = apfl_alpha({"x": [rec("apfl", [0.0, 0.5]), rec("apfl", [0.0, 0.1]), rec("fedavg", [])], "y": [rec("fedavg", [])]})
    assert list(t.setting) == ["x"]
    assert t.final_alpha[0] == pytest.approx(0.15) and t.share_at_0[0] == pytest.approx(0.5)
