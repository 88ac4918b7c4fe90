"""Launch overhead of the stacked step: one local SGD step of every row (run × client) as eager torch.func, as
``torch.compile`` and, on CUDA, replayed from a captured CUDA graph; what each keeps of determinism.

The step is the batched runner's local step for a phase of plain cross-entropy (FedAvg's, FedPG's local epochs):
``vmap(grad(...))`` of the masked mean cross-entropy through the engine's :class:`~pflnb.fl.functional.FunctionalModel`,
then :func:`~pflnb.fl.batched.functional_step`'s SGD update with a learning rate per row (stacked runs of several
rates). Its shapes are fixed: the full-width, every-row-live steps that make up most of a round (the runner's
trailing partial batches and finished clients change shapes, which a graph cannot). Defaults: FedPG's Fashion-MNIST
paper config (mlp2 on 28 px inputs, batch 50, 10 classes).

For each row count it prints and writes (``--json``) the milliseconds a step takes eager, compiled and graphed (and
the same rows' steps one after another on the module, the sequential runner's way), and for each variant: whether
two runs of ``--check`` steps from the same start give the same bits, and the largest difference from eager after
them (a CUDA graph replays eager's kernels: 0; a compiled step fuses operations: rounding).

    python benchmarks/launch_overhead.py [--device cuda] [--rows 1000 250 100 10] [--steps 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.func import grad, vmap

from pflnb.fl.batched import functional_step
from pflnb.fl.functional import FunctionalModel, stack_states
from pflnb.fl.plan import Phase
from pflnb.fl.training import OptimConfig
from pflnb.kernels import cpu_model
from pflnb.models import build_model

Step = Callable[..., dict[str, torch.Tensor]]


def make_step(fm: FunctionalModel, phase: Phase) -> Step:
    """(params, x, y, mask, lr) → new params: every row's masked cross-entropy gradient and its SGD update."""

    def loss(p: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        logits, _ = fm(p, x, m, True)
        return (F.cross_entropy(logits, y, reduction="none") * m).sum() / m.sum()

    def update(p, x, y, m, lr):
        g = grad(loss)(p, x, y, m)
        new_p, _ = functional_step(phase, p, g, {"n": torch.zeros((), dtype=x.dtype, device=x.device)}, lr)
        return new_p

    return vmap(update)


def inputs(args: argparse.Namespace, rows: int, device: torch.device, fm_model: torch.nn.Module) -> tuple:
    """Stacked parameters (every row a copy of one initialization), a minibatch per row, masks and rates."""
    g = torch.Generator().manual_seed(0)
    state = {k: v.detach() for k, v in fm_model.named_parameters()}
    params = {k: v.to(device) for k, v in stack_states([state] * rows, list(state)).items()}
    x = torch.rand(rows, args.batch, args.channels, args.image, args.image, generator=g).to(device)
    y = torch.randint(0, args.classes, (rows, args.batch), generator=g).to(device)
    m = torch.ones(rows, args.batch, device=device)
    lr = (args.lr * torch.tensor([1.0, 0.5, 2.0]).repeat(rows // 3 + 1)[:rows]).to(device)  # a rate grid
    return params, x, y, m, lr


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], object], steps: int, device: torch.device) -> float:
    """Milliseconds a call of ``fn`` takes, over ``steps`` calls after one warm-up call."""
    fn()
    _sync(device)
    t = time.perf_counter()
    for _ in range(steps):
        fn()
    _sync(device)
    return 1e3 * (time.perf_counter() - t) / steps


def roll(step: Step, start: dict[str, torch.Tensor], batch: tuple, n: int) -> dict[str, torch.Tensor]:
    """``n`` steps from ``start`` on the same minibatch."""
    p = {k: v.clone() for k, v in start.items()}
    for _ in range(n):
        p = step(p, *batch)
    return p


def graphed(step: Step, start: dict[str, torch.Tensor], batch: tuple) -> tuple[Callable[[], None], Callable[[], dict]]:
    """A CUDA graph of one step on static buffers: (replay one step in place, the current parameters); reset with
    ``load``. The step's outputs are copied back into its inputs, so replays chain like eager steps."""
    p_in = {k: v.clone() for k, v in start.items()}
    static = tuple(b.clone() for b in batch)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up on a side stream, as torch.cuda.graph's documentation asks
        for _ in range(3):
            step(p_in, *static)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # the step and the copy of its outputs into its inputs, one graph
        p_out = step(p_in, *static)
        for k in p_in:
            p_in[k].copy_(p_out[k])
    return graph.replay, lambda: p_in


def plain_step_agrees(model: torch.nn.Module, old: dict[str, torch.Tensor], new: dict[str, torch.Tensor], batch: tuple) -> bool:
    """Rows 0-2 of a stacked step (rates ×1, ×0.5, ×2) against torch's own autograd on the module: each row's update
    (new − old) is −lr · the gradient of the mean cross-entropy on its minibatch (to float32 rounding), so the
    benchmark times an SGD step with a rate per row."""
    x, y, _, lr = batch
    for r in range(min(3, len(x))):
        ref = {k: v.detach().clone().requires_grad_() for k, v in model.named_parameters()}
        loss = F.cross_entropy(torch.func.functional_call(model, ref, (x[r],)), y[r])
        grads = torch.autograd.grad(loss, list(ref.values()))
        for k, g in zip(ref, grads):
            if not torch.allclose(new[k][r] - old[k][r], -lr[r] * g, rtol=1e-3, atol=1e-7):
                return False
    return True


def sequential_steps(model: torch.nn.Module, batch: tuple, lr: float) -> Callable[[], None]:
    """The same work as one stacked step, done the sequential runner's way: each row's SGD step on the module with
    torch.optim, one row after another (one module for all rows: a timing, not a training). A lower bound on the
    sequential runner's time: it leaves out the runner's per-client costs (loading a state, a fresh optimizer)."""
    x, y, _, _ = batch
    module = copy.deepcopy(model)
    opt = torch.optim.SGD(module.parameters(), lr=lr)

    def run() -> None:
        for r in range(len(x)):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(module(x[r]), y[r]).backward()
            opt.step()

    return run


def _diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def measure(args: argparse.Namespace, rows: int, device: torch.device) -> dict[str, object]:
    torch.manual_seed(0)
    model = build_model(args.model, (args.channels, args.image, args.image), args.classes)
    fm = FunctionalModel(model.to(device))
    phase = Phase(optim=OptimConfig(lr=args.lr, batch_size=args.batch))
    eager = make_step(fm, phase)
    params, *batch = inputs(args, rows, device, model)
    batch = tuple(batch)
    if not plain_step_agrees(model, params, eager(params, *batch), batch):
        raise AssertionError("the stacked step does not match plain SGD steps on rows 0-2")
    out: dict[str, object] = {"rows": rows}
    p = {k: v.clone() for k, v in params.items()}
    out["sequential_ms"] = timed(sequential_steps(model, batch, args.lr), max(1, args.steps // 5), device)
    out["eager_ms"] = timed(lambda: eager(p, *batch), args.steps, device)
    ref = roll(eager, params, batch, args.check)
    out["eager_repeatable"] = _same(ref, roll(eager, params, batch, args.check))
    if args.compile:
        compiled = torch.compile(eager, mode=args.compile_mode, dynamic=False)
        t = time.perf_counter()
        compiled(p, *batch)
        _sync(device)
        out["compile_s"] = time.perf_counter() - t
        out["compiled_ms"] = timed(lambda: compiled(p, *batch), args.steps, device)
        c1 = roll(compiled, params, batch, args.check)
        out["compiled_repeatable"] = _same(c1, roll(compiled, params, batch, args.check))
        out["compiled_max_diff"] = _diff(c1, ref)
    if device.type == "cuda":
        replay, current = graphed(eager, params, batch)
        out["graph_ms"] = timed(replay, args.steps, device)
        runs = []
        for _ in range(2):
            replay_k, current_k = graphed(eager, params, batch)
            for _ in range(args.check):
                replay_k()
            runs.append({k: v.clone() for k, v in current_k().items()})
        out["graph_repeatable"] = _same(*runs)
        out["graph_max_diff"] = _diff(runs[0], ref)
    return out


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--rows", type=int, nargs="+", default=[1000, 250, 100, 10], help="run × client rows of the step")
    ap.add_argument("--model", default="mlp2")
    ap.add_argument("--image", type=int, default=28)
    ap.add_argument("--channels", type=int, default=1)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--steps", type=int, default=50, help="timed steps per variant")
    ap.add_argument("--check", type=int, default=5, help="steps of the determinism check")
    ap.add_argument("--no-compile", dest="compile", action="store_false", help="skip torch.compile")
    ap.add_argument("--compile-mode", default="default", help="torch.compile's mode (default, reduce-overhead, ...)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model()
    print(f"device: {name}; torch {torch.__version__}; {args.model} on {args.channels}×{args.image}² inputs, batch {args.batch}")
    rows = []
    for r in args.rows:
        row = measure(args, r, device)
        rows.append(row)
        print(json.dumps({k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in row.items()}), flush=True)
        if args.json:  # after each row, so that a run cut short keeps what it measured
            args.json.parent.mkdir(parents=True, exist_ok=True)
            meta = {"device": name, "torch": torch.__version__, "threads": args.threads, "model": args.model}
            args.json.write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    main()
