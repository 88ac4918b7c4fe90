"""CPU/GPU agreement (runs only where CUDA is present; marked ``gpu``), under ``pflnb.determinism`` as every
experiment runs: without it cuDNN's convolutions use TF32, and on an H200 five methods' two-round losses then
differed from the CPU's by 0.1 to 4 % (beyond this tolerance); in float32 they agree to it."""

import pytest
from conftest import make_toy_data

import pflnb
from pflnb.algorithms import list_methods, make_algorithm
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.models import build_model

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("method", list_methods())
def test_first_rounds_agree_on_cpu_and_gpu(method):
    data = make_toy_data()
    out = {}
    for device in ("cpu", "cuda"):
        settings = RunSettings(rounds=2, optim=OptimConfig(lr=0.05, batch_size=8), progress=False, device=device)
        with pflnb.determinism():
            rec = run_simulation(
                make_algorithm(method), data, lambda: build_model("small-bn-cnn", data.input_shape, data.num_classes), settings
            )
        out[device] = [l for e in rec["evals"] for l in e["test_loss"]]
    assert out["cpu"] == pytest.approx(out["cuda"], rel=1e-3, abs=1e-3)
