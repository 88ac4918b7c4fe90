"""benchmarks/launch_overhead.py runs, and what it reports holds: a few rows on the CPU (its SGD self-check included),
and on CUDA the captured graph replays eager's step bit for bit."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "launch_overhead.py"


def _bench():
    spec = importlib.util.spec_from_file_location("launch_overhead", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_times_a_checked_sgd_step_and_writes_each_row(tmp_path):
    out = tmp_path / "lo.json"
    rows = _bench().main(
        ["--device", "cpu", "--rows", "4", "3", "--steps", "1", "--check", "2", "--no-compile", "--json", str(out)]
    )
    assert [r["rows"] for r in rows] == [4, 3] and all(r["eager_repeatable"] for r in rows)
    assert all(r["eager_ms"] > 0 and r["sequential_ms"] > 0 for r in rows) and "graph_ms" not in rows[0]
    assert json.loads(out.read_text())["rows"] == rows


def test_the_self_check_refuses_a_step_whose_rate_is_not_the_rows():
    """plain_step_agrees compares each row's update with −lr·∇: an update at another rate fails it."""
    b = _bench()
    model = b.build_model("mlp2", (1, 6, 6), 3)
    params = {k: v.detach().clone()[None].repeat(3, *([1] * v.dim())) for k, v in model.named_parameters()}
    x, y = torch.rand(3, 5, 1, 6, 6), torch.randint(0, 3, (3, 5))
    lr = torch.tensor([0.1, 0.05, 0.2])
    fm = b.FunctionalModel(model)
    step = b.make_step(fm, b.Phase(optim=b.OptimConfig(lr=0.1, batch_size=5)))
    batch = (x, y, torch.ones(3, 5), lr)
    assert b.plain_step_agrees(model, params, step(params, *batch), batch)
    same_rate = (x, y, torch.ones(3, 5), torch.full((3,), 0.1))
    assert not b.plain_step_agrees(model, params, step(params, *same_rate), batch)


@pytest.mark.gpu
def test_the_cuda_graph_replays_the_eager_step_bit_for_bit():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    (row,) = _bench().main(["--device", "cuda", "--rows", "6", "--steps", "2", "--check", "3", "--no-compile"])
    assert row["graph_repeatable"] and row["graph_max_diff"] == 0.0 and row["eager_repeatable"]
