"""Where the batched and sequential client runners part on a device: a diagnosis, not a timing.

On an H200 (float32, TF32 off under ``pflnb.determinism``) five methods' two-round test losses differed between the
runners by 0.13 % to 0.95 %, while on the CPU they agreed to 1e-7. This script narrows such a gap down on whatever
device it is given, from whole runs to one unit of one layer:

1. **Operations.** A convolution and a linear layer with per-client weights, BatchNorm in training mode (pflnb's
   ``MaskedBatchNorm``, also with padded samples under ``vmap``, against ``F.batch_norm``), the row writes of the
   runner's compaction, and one whole gradient of the small BN CNN (``vmap(grad)`` through ``FunctionalModel``
   against ``loss.backward``): each in float32, batched and per client, against a float64 per-client value.
2. **Trace.** Round 1 of FedAvg with the batched runner in float32 and float64, step by step: the float32 inputs
   (parameters, BN buffers) and outputs (gradients, losses) of every ``vmap(grad)`` call against float64's, per
   client. Step 1 is replayed row by row (unbatched, ``vmap`` over one row, on the CPU); ``--save-step`` keeps its
   inputs.
3. **Factors.** One round of FedAvg (which failed the gpu test) and FedRep (which passed), each factor changed alone:
   client sizes, momentum and weight decay, a model without BN, one client a chunk, deterministic algorithms off.
4. **Runs.** One and two rounds of five methods with each runner in float64 and float32, each float32 run also
   against the float64 sequential run (the reference): which runner moved away, not only that they differ.

``--kinks STEP.pt --row R`` runs a saved step's row through the plain ``nn.Module`` in float32 and float64 and lists
the ReLU inputs whose sign differs (:func:`relu_flips`). Every number is the largest difference relative to the
reference's largest entry, or absolute below 1 (the runner tests' ``max_diff``). What it found on an H100 is in
``benchmarks/results/runner_gap_gpu.md``.

    python benchmarks/runner_gap.py [--device cuda] [--json FILE] [--save-step FILE] [--skip-runs] [--skip-factors]
    python benchmarks/runner_gap.py --kinks FILE [--row 1] [--device cpu]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.util
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.func import grad, vmap

import pflnb
from pflnb.algorithms import make_algorithm
from pflnb.data.federated import ClientData, FederatedDataset, Split
from pflnb.fl import BatchedRunner, OptimConfig, RunSettings, run_simulation
from pflnb.fl import batched as B
from pflnb.fl import functional as FN
from pflnb.models import build_model

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("fedavg", "fedbn", "fedbabu", "fedrep", "lgmix")


def _runner_tests():
    """tests/test_runner_batched.py, for its ``data64`` and ``max_diff`` (one definition of the toy data)."""
    spec = importlib.util.spec_from_file_location("runner_tests", ROOT / "tests" / "test_runner_batched.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


T = _runner_tests()
SGD = T.SGD  # the runner tests' optimizer: momentum 0.5, weight decay 1e-3, batch 8


def as_dtype(data: FederatedDataset, dtype: torch.dtype) -> FederatedDataset:
    clients = [
        ClientData(c.cid, c.name, c.domain, *(Split(s.x.to(dtype), s.y) for s in (c.train, c.val, c.test))) for c in data.clients
    ]
    return FederatedDataset(data.name, clients, data.num_classes, data.input_shape)


class OneClientChunks(BatchedRunner):
    """The batched runner with one client a chunk (vmap over a single client)."""

    def chunk_size(self, ctx, n, per_client):
        return 1


@contextlib.contextmanager
def precision_only():
    """Full float32 (no TF32) without deterministic algorithms: separates the two halves of ``determinism``."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def run(
    method: str,
    runner: str,
    dtype: torch.dtype,
    device: str,
    rounds: int,
    participation: float,
    sizes=T.SIZES,
    opt: OptimConfig = SGD,
    model: str = "small-bn-cnn",
    chunks: str = "memory",
    deterministic: bool = True,
) -> dict:
    data = as_dtype(T.data64(sizes), dtype)
    settings = RunSettings(rounds=rounds, participation=participation, optim=opt, progress=False, device=device)
    if runner == "batched" and chunks == "one":
        runner = OneClientChunks()
    with pflnb.determinism() if deterministic else precision_only():
        return run_simulation(
            make_algorithm(method), data, lambda: build_model(model, (3, 8, 8), 4).to(dtype), settings, runner=runner
        )


FACTORS = {
    "as in the gpu test (round 1, all clients)": {},
    "equal sizes (16 each: no partial batch, no padded step)": {"sizes": (16,) * 5},
    "equal sizes 12 (a partial batch each, no padded step)": {"sizes": (12,) * 5},
    "sizes 16 and one 8 (a padded step, no partial batch)": {"sizes": (16, 16, 16, 16, 8)},
    "no momentum, no weight decay": {"opt": OptimConfig(lr=0.05, batch_size=8)},
    "model without BatchNorm (small-cnn)": {"model": "small-cnn"},
    "one client a chunk": {"chunks": "one"},
    "deterministic algorithms off (TF32 still off)": {"deterministic": False},
}


def factors_table(device: str) -> list[dict]:
    """One round of FedAvg (fails the gpu test) and FedRep (passes it), each factor changed alone: the float32 runs'
    distance from the float64 sequential run, in final state and in the clients' training losses."""
    rows = []
    for label, kw in FACTORS.items():
        for method in ("fedavg", "fedrep"):
            ref = run(method, "sequential", torch.float64, device, 1, 1.0, **kw)
            seq = run(method, "sequential", torch.float32, device, 1, 1.0, **kw)
            bat = run(method, "batched", torch.float32, device, 1, 1.0, **kw)
            train = [r["client_metrics"] for r in ref["rounds"]]
            row = {
                "factor": label,
                "method": method,
                "f32 sequential vs f64 (state)": rel(seq["final"], ref["final"]),
                "f32 batched vs f64 (state)": rel(bat["final"], ref["final"]),
                "f32 sequential vs f64 (train loss)": rel([r["client_metrics"] for r in seq["rounds"]], train),
                "f32 batched vs f64 (train loss)": rel([r["client_metrics"] for r in bat["rounds"]], train),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def losses(rec: dict) -> list[float]:
    return [v for e in rec["evals"] for v in e["test_loss"]]


def rel(a, b) -> float:
    """max |a − b| / max(1, max |b|) over nested structures (``b`` the reference)."""
    return T.max_diff(b, a)


def replay(fn, vmapped_out, args, vmap_fn, save: Path | None) -> dict[str, str]:
    """One traced step again, row by row: each row's gradient from the runner's ``vmap`` call, unbatched on the
    device in float32, with ``vmap`` over that row alone, and unbatched on the CPU in float32; each against the
    row's float64 gradient on the device. ``save``: where to keep the step's stacked inputs (``--kinks`` reads them)."""
    batched = args[:6]  # train params, fixed params, buffers, x, y, mask, stacked along dim 0 (anchors, columns: none)
    rest = args[6:]

    def pick(a, sel, dtype=None, device=None):
        def one(v):
            v = v[sel]
            if dtype is not None and v.is_floating_point():
                v = v.to(dtype)
            return v if device is None else v.to(device)

        return {k: one(v) for k, v in a.items()} if isinstance(a, dict) else one(a)

    res = {}
    for r in range(len(args[5])):
        ref = fn(*(pick(a, r, torch.float64) for a in batched), *rest)[0]
        alone = vmap_fn(fn, in_dims=(0,) * 6 + (None, None))(*(pick(a, slice(r, r + 1)) for a in batched), *rest)[0]
        ways = {
            "vmap over all rows (the runner)": {k: v[r] for k, v in vmapped_out[0].items()},
            "unbatched, f32": fn(*(pick(a, r) for a in batched), *rest)[0],
            "vmap over this row alone": {k: v[0] for k, v in alone.items()},
        }
        try:
            cpu = fn(*(pick(a, r, device="cpu") for a in batched), *rest)[0]
            ways["unbatched, f32, CPU"] = {k: v.to(ref[k].device) for k, v in cpu.items()}
        except Exception as e:  # noqa: BLE001  (the step's closure may hold device tensors)
            ways["unbatched, f32, CPU"] = repr(e)[:80]
        for way, g in ways.items():
            if isinstance(g, str):
                res[f"row {r}: {way}"] = g
                continue
            worst = max(ref, key=lambda k: rel(g[k].double(), ref[k]))
            err, size = rel(g[worst].double(), ref[worst]), float(ref[worst].abs().max())
            res[f"row {r}: {way}"] = f"{err:.1e} ({worst}; |ref| max {size:.2e})"
    for k, v in res.items():
        print(f"replay  {k}: {v}", flush=True)
    if save is not None:
        torch.save({"args": [pick(a, slice(None), device="cpu") for a in batched]}, save)
    return res


def trace_steps(device: str, method: str = "fedavg", replay_step: int = 1, save: Path | None = None) -> dict:
    """Round 1 of ``method`` with the batched runner in float32 and float64, step by step: at each ``vmap(grad)``
    call, how far the float32 inputs (parameters, BN buffers) and outputs (gradients, losses) are from float64's,
    per stacked row (client), and the minibatch's shape. The first step whose inputs agree but outputs do not is
    the one to look at; step ``replay_step`` of the float32 run is replayed row by row (:func:`replay`)."""
    traces, replayed = {}, {}
    real_vmap = B.vmap
    for dtype in (torch.float64, torch.float32):
        calls: list[dict] = []

        def recording_vmap(fn, *a, _calls=calls, _dtype=dtype, **k):
            f = real_vmap(fn, *a, **k)

            def wrapped(*args):
                out = f(*args)
                if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict) and "loss" in out[1]:
                    if _dtype == torch.float32 and len(_calls) == replay_step:
                        replayed.update(replay(fn, out, args, real_vmap, save))
                    cpu = lambda d: {n: v.detach().double().cpu().clone() for n, v in d.items()}  # noqa: E731
                    _calls.append(
                        {
                            "params": cpu(args[0]),
                            "buffers": cpu(args[2]),
                            "grads": cpu(out[0]),
                            "loss": out[1]["loss"].detach().double().cpu(),
                            "x": tuple(args[3].shape),
                            "mask rows": args[5].sum(-1).tolist(),
                        }
                    )
                return out

            return wrapped

        B.vmap = recording_vmap
        try:
            run(method, "batched", dtype, device, 1, 1.0)
        finally:
            B.vmap = real_vmap
        traces[dtype] = calls
    rows = []
    for i, (a, b) in enumerate(zip(traces[torch.float32], traces[torch.float64])):

        def worst(key, a=a, b=b):
            """Per stacked row (client), the largest difference over the entries of ``key``, and that entry."""
            diffs = {n: [rel(a[key][n][r], b[key][n][r]) for r in range(len(b[key][n]))] for n in b[key]}
            per_row = [max((d[r] for d in diffs.values()), default=0.0) for r in range(len(a["loss"]))]
            name = max(diffs, key=lambda n: max(diffs[n])) if diffs else ""
            return [float(f"{v:.1e}") for v in per_row], name

        row = {"step": i, "x": a["x"], "real samples": a["mask rows"]}
        for key in ("params", "buffers", "grads"):
            row[key], row[key + " worst"] = worst(key)
        row["loss"] = [float(f"{rel(a['loss'][r], b['loss'][r]):.1e}") for r in range(len(b["loss"]))]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return {"steps": rows, "replay": replayed}


def relu_flips(path: Path, row: int, device: str, model: str = "small-bn-cnn") -> dict:
    """A saved step's row through the plain ``nn.Module`` (no runner, no vmap) in float32 and float64 on ``device``:
    the gradient's distance, and every ReLU input whose sign differs between the two, with its float64 value and the
    float32 error of that layer's inputs. A sign flip at a pre-activation within rounding of zero switches that
    unit's gradient on or off: the gradient jumps although every input agrees to rounding."""
    train, _, bufs, x, y, _ = torch.load(path)["args"]
    out: dict = {}
    pre: dict = {}
    grads = {}
    for dtype in (torch.float64, torch.float32):
        net = build_model(model, tuple(x.shape[2:]), int(y.max()) + 1).to(device, dtype).train()
        net.load_state_dict({k: (v[row].to(dtype) if v.is_floating_point() else v[row]) for k, v in {**train, **bufs}.items()})
        seen: list[torch.Tensor] = []
        hooks = [
            m.register_forward_hook(lambda m, i, o, seen=seen: seen.append(i[0].detach().double()))
            for m in net.modules()
            if isinstance(m, torch.nn.ReLU)
        ]
        F.cross_entropy(net(x[row].to(device, dtype)), y[row].to(device)).backward()
        for h in hooks:
            h.remove()
        pre[dtype] = seen
        grads[dtype] = {n: p.grad.double() for n, p in net.named_parameters()}
    worst = max(grads[torch.float64], key=lambda n: rel(grads[torch.float32][n], grads[torch.float64][n]))
    out["gradient: f32 vs f64"] = f"{rel(grads[torch.float32][worst], grads[torch.float64][worst]):.1e} ({worst})"
    for i, (a64, a32) in enumerate(zip(pre[torch.float64], pre[torch.float32])):
        flips = (a64 > 0) != (a32 > 0)
        out[f"ReLU call {i + 1}"] = {
            "sign flips": int(flips.sum()),
            "|pre-activation| at the flips (f64)": [float(v) for v in a64[flips].abs()],
            "smallest |pre-activation| (f64)": float(a64.abs().min()),
            "largest f32 error of the pre-activations": float((a32 - a64).abs().max()),
        }
    print(json.dumps(out, indent=1), flush=True)
    return out


def runs_table(device: str) -> list[dict]:
    rows = []
    for method in METHODS:
        for rounds, part in ((1, 1.0), (2, 0.6)):
            ref = run(method, "sequential", torch.float64, device, rounds, part)
            bat64 = run(method, "batched", torch.float64, device, rounds, part)
            seq32 = run(method, "sequential", torch.float32, device, rounds, part)
            bat32 = run(method, "batched", torch.float32, device, rounds, part)
            row = {
                "method": method,
                "rounds": rounds,
                "participation": part,
                "f64 batched vs sequential (state)": rel(bat64["final"], ref["final"]),
                "f32 sequential vs f64 (state)": rel(seq32["final"], ref["final"]),
                "f32 batched vs f64 (state)": rel(bat32["final"], ref["final"]),
                "f32 batched vs sequential (test loss)": rel(losses(bat32), losses(seq32)),
                "f32 sequential vs f64 (test loss)": rel(losses(seq32), losses(ref)),
                "f32 batched vs f64 (test loss)": rel(losses(bat32), losses(ref)),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def ops_table(device: str) -> dict:
    """The float32 error of each piece, batched (vmap) and per client, against the float64 per-client value."""
    g = torch.Generator().manual_seed(0)
    C, N = 3, 8
    x64 = torch.randn(C, N, 3, 8, 8, generator=g, dtype=torch.float64)
    w64 = torch.randn(C, 16, 3, 3, 3, generator=g, dtype=torch.float64) * 0.2
    lin_x64 = torch.randn(C, N, 64, generator=g, dtype=torch.float64)
    lin_w64 = torch.randn(C, 10, 64, generator=g, dtype=torch.float64) * 0.1
    out: dict[str, float] = {}
    with pflnb.determinism():

        def both(name, fn, *args64):
            ref = torch.stack([fn(*(a[c] for a in args64)) for c in range(C)]).to(device)
            args32 = [a.float().to(device) for a in args64]
            per_client = torch.stack([fn(*(a[c] for a in args32)) for c in range(C)])
            batched = vmap(fn)(*args32)
            out[f"{name}: per client vs f64"] = rel(per_client.double(), ref)
            out[f"{name}: vmap vs f64"] = rel(batched.double(), ref)
            out[f"{name}: vmap vs per client (f32)"] = rel(batched, per_client)

        both("conv2d", lambda x, w: F.conv2d(x, w, padding=1), x64, w64)
        both("linear", lambda x, w: F.linear(x, w), lin_x64, lin_w64)
        both("batch_norm (train)", lambda x: F.batch_norm(x, None, None, training=True), x64)

        # MaskedBatchNorm (the batched runner's BN) against nn.BatchNorm2d, all samples real
        bn = torch.nn.BatchNorm2d(3).to(device)
        ctx = FN._BNContext()
        mbn = FN.MaskedBatchNorm(bn, "", ctx)
        ctx.training, ctx.mask = True, torch.ones(N, device=device)
        xs = x64[0].float().to(device)
        with torch.no_grad():
            out["MaskedBatchNorm vs BatchNorm2d (f32)"] = rel(mbn(xs), bn.train()(xs))
            ref_bn = F.batch_norm(x64[0].to(device), None, None, training=True)
            out["MaskedBatchNorm vs f64"] = rel(mbn(xs).double(), ref_bn)

        # MaskedBatchNorm under vmap with padded samples, against F.batch_norm on each client's real samples
        real = [N, 5, 2]
        mk = torch.stack([(torch.arange(N) < r).to(torch.float32) for r in real]).to(device)

        def masked_bn(x, m):
            ctx.mask = m
            return mbn(x)

        with torch.no_grad():
            got = vmap(masked_bn)(x64.float().to(device), mk)
            err = 0.0
            for c, r in enumerate(real):
                ref_c = F.batch_norm(x64[c, :r].to(device), None, None, training=True)
                err = max(err, rel(got[c, :r].double(), ref_c))
            out["MaskedBatchNorm under vmap, padded samples vs f64"] = err
        ctx.mask = torch.ones(N, device=device)

        # the row writes and reads of the live-set compaction, with deterministic algorithms on
        target = torch.randn(5, 16, 3, 3, 3, generator=g).to(device)
        rows_ = torch.randn(3, 16, 3, 3, 3, generator=g).to(device)
        where = torch.tensor([0, 2, 4], device=device)
        got = target.clone()
        got[where] = rows_
        expected = target.clone()
        for j, i in enumerate((0, 2, 4)):
            expected[i].copy_(rows_[j])
        out["index_put (row writes) vs row copies"] = rel(got, expected)
        out["index_select vs row reads"] = rel(target.index_select(0, where), torch.stack([target[i] for i in (0, 2, 4)]))

        # one whole gradient of the small BN CNN: vmap(grad) through FunctionalModel vs loss.backward
        model64 = build_model("small-bn-cnn", (3, 8, 8), 4).double().to(device)
        y = torch.randint(0, 4, (C, N), generator=g).to(device)

        def seq_grads(model, xb):
            res = []
            for c in range(C):
                model.zero_grad()
                model.train()
                F.cross_entropy(model(xb[c]), y[c]).backward()
                res.append({n: p.grad.detach().clone() for n, p in model.named_parameters()})
            return {n: torch.stack([r[n] for r in res]) for n in res[0]}

        ref = seq_grads(copy.deepcopy(model64), x64.to(device))
        model32 = copy.deepcopy(model64).float()
        x32 = x64.float().to(device)
        seq32 = seq_grads(copy.deepcopy(model32), x32)
        fm = FN.FunctionalModel(model32)
        params = {n: p.detach().unsqueeze(0).expand(C, *p.shape).clone() for n, p in model32.named_parameters()}
        bufs = {n: b.detach().unsqueeze(0).expand(C, *b.shape).clone() for n, b in model32.named_buffers()}
        mask = torch.ones(C, N, device=device)

        def loss(p, b, xb, yb, m):
            logits, _ = fm({**p, **b}, xb, m, True)
            return F.cross_entropy(logits, yb)

        bat32 = vmap(grad(loss), in_dims=(0, 0, 0, 0, 0))(params, bufs, x32, y, mask)
        for n in ref:
            out[f"grad {n}: per client vs f64"] = rel(seq32[n].double(), ref[n])
            out[f"grad {n}: vmap vs f64"] = rel(bat32[n].double(), ref[n])
        # the functional model on the per-client path (no vmap): separates vmap from MaskedBatchNorm/functional_call
        one = [
            grad(loss)({n: v[c] for n, v in params.items()}, {n: v[c] for n, v in bufs.items()}, x32[c], y[c], mask[c])
            for c in range(C)
        ]
        for n in ref:
            out[f"grad {n}: functional per client vs f64"] = rel(torch.stack([o[n] for o in one]).double(), ref[n])
    return out


def settings_in_force() -> dict:
    with pflnb.determinism():
        s = {
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        }
        for label, obj in (
            ("cudnn.conv", getattr(torch.backends.cudnn, "conv", None)),
            ("cuda.matmul", torch.backends.cuda.matmul),
            ("backends", torch.backends),
        ):
            value = getattr(obj, "fp32_precision", None)
            if value is not None:
                s[label + ".fp32_precision"] = value
    return s


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--json", type=Path)
    p.add_argument("--skip-runs", action="store_true")
    p.add_argument("--skip-factors", action="store_true")
    p.add_argument("--save-step", type=Path, help="keep the replayed step's stacked inputs here (a .pt file)")
    p.add_argument("--kinks", type=Path, help="only look for ReLU sign flips in row --row of a saved step")
    p.add_argument("--row", type=int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    if a.kinks:
        relu_flips(a.kinks, a.row, a.device)
        return 0
    res = {"device": a.device, "name": torch.cuda.get_device_name(0) if a.device.startswith("cuda") else "cpu"}
    res["settings"] = settings_in_force()
    print(json.dumps(res), flush=True)
    res["ops"] = ops_table(a.device)
    for k, v in res["ops"].items():
        print(f"{v:10.2e}  {k}", flush=True)
    res["trace"] = trace_steps(a.device, save=a.save_step)
    if not a.skip_factors:
        res["factors"] = factors_table(a.device)
    if not a.skip_runs:
        res["runs"] = runs_table(a.device)
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
