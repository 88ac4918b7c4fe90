"""Device placement and CUDA determinism, checked on the CPU.

A GPU run fails when pflnb creates a tensor on the default device next to tensors on the run's device, or when
a model uses an op that has no deterministic CUDA kernel (it raises under the determinism controls). Neither
shows on a CPU-only machine, so these tests look for the causes instead:

- ``FactoryAudit`` (a TorchFunctionMode) records every call of a tensor factory (``torch.zeros``, ``tensor``,
  ``randperm``, ...) made directly from pflnb code without an explicit ``device=``: on CUDA such a tensor lands
  on the CPU (or wherever ``torch.set_default_device`` points) while the model's outputs are on the GPU;
- ``NondeterministicOpAudit`` (a TorchDispatchMode) records every ATen op, forward or backward, that PyTorch
  runs without a deterministic CUDA implementation (``torch.use_deterministic_algorithms`` lists them); the
  CPU and CUDA decompositions of these composite ops are the same, so the op shows on the CPU too;
- a source scan for ``.numpy()`` on tensors that are not first moved with ``.cpu()``.
"""

from __future__ import annotations

import ast
import collections
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from conftest import make_toy_data
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors
from torch.utils._python_dispatch import TorchDispatchMode

import pflnb
from pflnb.algorithms import list_methods, make_algorithm
from pflnb.experiments import ExperimentConfig, run
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.models import MODELS, build_model
from pflnb.models.pooling import AdaptiveAvgPool2d, adaptive_avg_pool2d
from pflnb.theory import ntk

PKG = Path(pflnb.__file__).resolve().parent
FACTORIES = _device_constructors()

# ATen ops that raise under torch.use_deterministic_algorithms(True) on CUDA (its documentation's list, by op).
NONDETERMINISTIC_CUDA_OPS = {
    "_adaptive_avg_pool2d_backward",
    "_adaptive_avg_pool3d_backward",
    "adaptive_max_pool2d_backward",
    "adaptive_max_pool3d_backward",
    "avg_pool3d_backward",
    "fractional_max_pool2d_backward",
    "fractional_max_pool3d_backward",
    "max_unpool2d",
    "max_unpool3d",
    "upsample_linear1d_backward",
    "upsample_bilinear2d_backward",
    "_upsample_bilinear2d_aa_backward",
    "upsample_bicubic2d_backward",
    "upsample_trilinear3d_backward",
    "reflection_pad1d_backward",
    "reflection_pad2d_backward",
    "reflection_pad3d_backward",
    "nll_loss2d_forward",
    "_ctc_loss_backward",
    "put",
    "put_",
    "histc",
    "grid_sampler_2d_backward",
    "grid_sampler_3d_backward",
}


class FactoryAudit(TorchFunctionMode):
    """Records pflnb call sites (file:line function) of tensor factories called without ``device=``."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: collections.Counter[str] = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        implicit = func in FACTORIES and kwargs.get("device") is None
        if implicit and func in (torch.as_tensor, torch.asarray) and args and isinstance(args[0], torch.Tensor):
            implicit = False  # a tensor argument keeps its own device
        if implicit:
            caller = sys._getframe(1)  # the code that called the factory (torch's own internals are not flagged)
            if caller.f_globals.get("__name__", "").startswith("pflnb"):
                where = Path(caller.f_code.co_filename).resolve().relative_to(PKG.parent)
                self.sites[f"{where}:{caller.f_lineno} torch.{func.__name__}"] += 1
        return func(*args, **kwargs)


class NondeterministicOpAudit(TorchDispatchMode):
    """Records ATen ops without a deterministic CUDA kernel (forward and backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in NONDETERMINISTIC_CUDA_OPS or str(func) == "aten.median.dim":
            self.ops.add(str(func))
        if name == "bincount" and (len(args) > 1 and args[1] is not None or kwargs.get("weights") is not None):
            self.ops.add("aten.bincount (with weights)")
        if name == "scatter_reduce" and "prod" in [a for a in args if isinstance(a, str)] + [kwargs.get("reduce")]:
            self.ops.add("aten.scatter_reduce (prod)")
        return func(*args, **kwargs)


def _audited(fn):
    with FactoryAudit() as factories, NondeterministicOpAudit() as ops:
        out = fn()
    return out, factories.sites, ops.ops


# ---- the audits catch what they are meant to catch -------------------------------------------------------


def test_factory_audit_flags_a_tensor_without_device_and_passes_an_explicit_one():
    import pflnb.fl.state as S  # any pflnb module: the audit looks at the calling frame's module

    code = "def f(x):\n    return x + torch.zeros(x.shape), x + torch.zeros(x.shape, device=x.device)\n"
    scope = {"torch": torch, "__name__": S.__name__}
    exec(compile(code, str(PKG / "fl" / "state.py"), "exec"), scope)
    _, sites, _ = _audited(lambda: scope["f"](torch.ones(2)))
    assert list(sites) == ["pflnb/fl/state.py:2 torch.zeros"]


def test_op_audit_flags_torch_adaptive_pooling_backward():
    x = torch.randn(2, 3, 7, 7, requires_grad=True)
    _, _, ops = _audited(lambda: torch.nn.AdaptiveAvgPool2d((6, 6))(x).sum().backward())
    assert ops == {"aten._adaptive_avg_pool2d_backward.default"}
    _, _, ops = _audited(lambda: AdaptiveAvgPool2d((6, 6))(x).sum().backward())
    assert ops == set()


# ---- theory ----------------------------------------------------------------------------------------------


def test_dense_ntk_trace_creates_nothing_off_its_inputs_device():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3)).double()
    x = torch.randn(6, 5, dtype=torch.float64)
    (value, sites, ops) = _audited(lambda: ntk.dense_ntk_trace(model, x))
    assert not sites, f"tensors created without device=: {dict(sites)}"
    assert value == pytest.approx(ntk.ntk_trace(model, x), rel=1e-12)
    # issue 15: with an accumulator made on the default device this raised on CUDA; a "meta" default device
    # stands in for the GPU mismatch (a tensor made without device= lands there and cannot be read back)
    with torch.device("meta"):
        assert ntk.dense_ntk_trace(model, x) == value


# ---- every method, end to end ----------------------------------------------------------------------------

VARIANTS: list[tuple[str, dict, str]] = [(m, {}, "small-bn-cnn") for m in list_methods()] + [
    ("lgmix", {"ntk_every": 1}, "mlp"),  # the T6b diagnostic: dense_ntk_trace on the run's device (issue 15)
    ("lgmix", {"trace_mode": "code", "mix_buffers": False}, "small-bn-cnn"),
    ("fedfac", {"mode": "static", "layers": (1,)}, "small-bn-cnn"),
    ("fedfac", {"partition": "given", "given": (0, 3, 5), "layers": (1,), "mask": "shared"}, "small-bn-cnn"),
    ("fedfac", {"partition": "random_redrawn", "mask": "personal", "ensemble_unseen": True}, "small-bn-cnn"),
    ("fedfac", {"fa_input": "updates", "bn": "local"}, "small-bn-cnn"),
    ("ditto", {"prox": "proximal"}, "small-bn-cnn"),
    ("apfl", {"alpha": 0.5}, "mlp"),
    ("pmixfed", {"mu_mode": "beta"}, "small-bn-cnn"),
    ("fedco2", {"offline_init": "independent", "bn": "affine"}, "small-bn-cnn"),
    ("fedpg", {"line_search": True, "direction": "fedsgd"}, "mlp"),
    ("fedavg", {"unseen_personal": "average", "personal": "head", "global_lr": 0.5}, "small-bn-cnn"),
]


@pytest.mark.parametrize(("method", "params", "model"), VARIANTS, ids=[f"{m}-{i}" for i, (m, _, _) in enumerate(VARIANTS)])
def test_every_method_creates_tensors_on_the_run_device_and_uses_deterministic_ops(method, params, model):
    data = make_toy_data(num_clients=3, unseen=1)
    settings = RunSettings(rounds=2, participation=0.67, optim=OptimConfig(lr=0.05, batch_size=8), progress=False, device="cpu")
    algo = make_algorithm(method, params)

    def model_fn():
        return build_model(model, data.input_shape, data.num_classes)

    record, sites, ops = _audited(lambda: run_simulation(algo, data, model_fn, settings))
    assert record["summary"], "the run finished"
    assert not sites, f"{method}: tensors created without device= (they miss the GPU): {dict(sites)}"
    assert not ops, f"{method}: ops without a deterministic CUDA kernel: {sorted(ops)}"


def _model_input(name: str) -> tuple[int, int, int]:
    return (3, 64, 64) if "alexnet" in name else (3, 32, 32)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_train_with_deterministic_cuda_kernels_only(name):
    torch.manual_seed(0)
    shape = _model_input(name)
    model = build_model(name, shape, 10)
    x, y = torch.rand(2, *shape), torch.tensor([1, 3])
    _, sites, ops = _audited(lambda: F.cross_entropy(model(x), y).backward())
    assert not ops, f"{name}: ops without a deterministic CUDA kernel: {sorted(ops)}"
    assert not sites, f"{name}: tensors created without device= in forward: {dict(sites)}"


@pytest.mark.parametrize(("n_in", "n_out"), [(7, 6), (13, 6), (6, 6), (5, 1), (8, 3), (1, 6), (3, 5)])
def test_adaptive_avg_pool_equals_torch_in_value_and_gradient(n_in, n_out):
    x = torch.randn(2, 3, n_in, n_in + 2, dtype=torch.float64, requires_grad=True)
    want = F.adaptive_avg_pool2d(x, (n_out, n_out))
    got = adaptive_avg_pool2d(x, (n_out, n_out))
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=1e-13)
    (g_want,) = torch.autograd.grad((want**2).sum(), x)
    (g_got,) = torch.autograd.grad((got**2).sum(), x)
    torch.testing.assert_close(g_got, g_want, rtol=0, atol=1e-12)


# ---- numpy conversions -----------------------------------------------------------------------------------


def _numpy_without_cpu(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy":
            receiver = node.func.value
            moved = any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "cpu" for n in ast.walk(receiver)
            )
            line = path.read_text().splitlines()[node.lineno - 1]
            if not moved and "# not a tensor" not in line:  # e.g. Flower's Array.numpy(), a deserialisation
                bad.append(f"{path.relative_to(PKG.parent)}:{node.lineno}")
    return bad


def test_numpy_conversions_move_tensors_to_the_host_first():
    # pflnb/data builds its tensors from numpy on the host by design; everything else may hold CUDA tensors
    files = [p for sub in ("algorithms", "fl", "models", "theory", "experiments") for p in sorted((PKG / sub).rglob("*.py"))]
    files += sorted(PKG.glob("*.py"))
    bad = [site for f in files for site in _numpy_without_cpu(f)]
    assert not bad, f".numpy() on a tensor that may live on the GPU (add .cpu()): {bad}"


# ---- the determinism controls ----------------------------------------------------------------------------


def _controls():
    cudnn = torch.backends.cudnn
    return (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        cudnn.benchmark,
        cudnn.deterministic,
        cudnn.allow_tf32,
        torch.backends.cuda.matmul.allow_tf32,
    )


def test_determinism_sets_the_controls_and_restores_them():
    before = _controls()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True  # TF32 allowed outside the block
    try:
        with pflnb.determinism():
            assert _controls() == (True, False, False, True, False, False)  # full float32 precision inside
        assert _controls() == (before[0], before[1], True, before[3], True, True)
        with pflnb.determinism(False):
            assert _controls() == (before[0], before[1], True, before[3], True, True)
    finally:
        torch.backends.cudnn.benchmark = before[2]
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before[4], before[5]
    with pytest.raises(ZeroDivisionError), pflnb.determinism():
        raise ZeroDivisionError
    assert _controls() == before


def test_determinism_needs_a_deterministic_cublas_workspace(monkeypatch):
    import os

    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] in pflnb.DETERMINISTIC_CUBLAS_CONFIGS  # set by importing pflnb
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":0:0")
    with pytest.raises(RuntimeError, match="CUBLAS_WORKSPACE_CONFIG"), pflnb.determinism():
        pass
    with pytest.raises(TypeError, match="deterministic"), pflnb.determinism("yes"):
        pass


@pytest.mark.parametrize("method", ["fedavg", "apfl", "fedco2", "fedfac", "lgmix", "pmixfed"])
def test_determinism_changes_no_cpu_result(method):
    data = make_toy_data()

    def once():
        settings = RunSettings(rounds=2, optim=OptimConfig(lr=0.05, batch_size=8), progress=False, device="cpu")
        fn = lambda: build_model("small-bn-cnn", data.input_shape, data.num_classes)  # noqa: E731
        return run_simulation(make_algorithm(method), data, fn, settings)["evals"]

    plain = once()
    with pflnb.determinism():
        controlled = once()
    assert controlled == plain


def test_config_deterministic_field_validation_and_cache_key():
    cfg = ExperimentConfig(rounds=1)
    assert cfg.deterministic is True
    off = cfg.replace(deterministic=False)
    assert off.key() != cfg.key()  # a non-deterministic record never stands in for a deterministic one
    assert cfg.key() == _key_without_field(cfg)  # the default kept every existing cache key
    with pytest.raises(ValueError, match="deterministic"):
        cfg.replace(deterministic="yes").validate()


def _key_without_field(cfg):
    import hashlib
    import json

    from pflnb.experiments.config import _HASHED_IF_NOT_DEFAULT, _UNHASHED

    assert "deterministic" in _HASHED_IF_NOT_DEFAULT  # and the fields added after it (train_ratio, noise), at defaults
    d = {k: v for k, v in cfg.to_dict().items() if k not in _UNHASHED and k not in _HASHED_IF_NOT_DEFAULT}
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


@pytest.mark.parametrize("deterministic", [True, False])
def test_run_applies_the_config_determinism(monkeypatch, tmp_path, deterministic):
    import importlib

    J = importlib.import_module("pflnb.experiments.jobs")  # where a run job calls the engine
    seen = []
    real = J.drive

    def spy(*args, **kwargs):
        seen.append(_controls()[0::3])
        return real(*args, **kwargs)

    monkeypatch.setattr(J, "drive", spy)
    cfg = ExperimentConfig(rounds=1, image_size=8, model="tiny-bn-cnn", max_samples=60, profile="smoke", device="cpu")
    run(cfg.replace(deterministic=deterministic), root=tmp_path, progress=False)
    assert seen == [(True, True)] if deterministic else seen == [_controls()[0::3]]
    assert _controls()[0] is False  # restored after the run
