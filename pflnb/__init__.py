"""pflnb: reproducible personalized federated learning, one notebook per paper."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

# cuBLAS is deterministic only with a fixed workspace, and it reads this setting when PyTorch first creates its
# cuBLAS handle: set it before torch touches CUDA (importing pflnb does; a value the user exported is kept and
# checked by ``determinism``). ":4096:8" is NVIDIA's recommended value (8 buffers of 4 MiB).
CUBLAS_WORKSPACE_CONFIG = ":4096:8"
DETERMINISTIC_CUBLAS_CONFIGS = (":4096:8", ":16:8")
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE_CONFIG)

# The CPU kernels' instruction set ($PFLNB_KERNELS, default AVX2 for torch, MKL and oneDNN): read by each library when
# it first runs a kernel, so it is set here, before torch is imported (pflnb/kernels.py).
from pflnb import kernels  # noqa: E402

kernels.pin()

import torch  # noqa: E402  (after the cuBLAS and kernel settings)

__version__ = "0.1.0"


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads to ``n`` (default: ``$PFLNB_THREADS`` if set); return the count in use.

    Small models on a small CPU are often fastest with one thread, and multi-threaded torch degrades badly
    when several processes share the cores (measured in benchmarks/engine_throughput.py).
    """
    if n is None and os.environ.get("PFLNB_THREADS"):
        n = int(os.environ["PFLNB_THREADS"])
    if n is not None:
        if n < 1:
            raise ValueError(f"threads must be >= 1, got {n}")
        torch.set_num_threads(n)
    return torch.get_num_threads()


set_threads()
kernels.warn_if_not_honoured()  # one clear message where this CPU (or an earlier torch import) cannot honour the pin


def device(name: str | None = None) -> torch.device:
    """Return the torch device to use: ``name`` if given ("auto" or None: CUDA when present, else CPU)."""
    if name in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@contextlib.contextmanager
def determinism(enabled: bool = True) -> Iterator[None]:
    """Within the block, runs repeat bit for bit on the same device: deterministic algorithms only (an op without
    a deterministic implementation raises instead of running), cuDNN's deterministic kernels and no cuDNN
    benchmarking, a fixed cuBLAS workspace (``CUBLAS_WORKSPACE_CONFIG``), and full float32 precision on CUDA:
    no TF32 in cuDNN's convolutions or cuBLAS's products (torch lets cuDNN use TF32 by default, whose 10-bit
    mantissa moved two-round losses by 0.1 to 4 % against the CPU on an H200). The previous settings come back
    on exit. ``enabled=False`` changes nothing. On the CPU the controls cost nothing and change no result of
    pflnb's code (its CPU kernels are deterministic for a fixed thread count already; TF32 is CUDA's alone)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"deterministic must be True or False, got {enabled!r}")
    if not enabled:
        yield
        return
    workspace = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    if workspace not in DETERMINISTIC_CUBLAS_CONFIGS:
        raise RuntimeError(
            f"deterministic runs need CUBLAS_WORKSPACE_CONFIG in {DETERMINISTIC_CUBLAS_CONFIGS} before CUDA starts, "
            f"got {workspace!r}: export CUBLAS_WORKSPACE_CONFIG={CUBLAS_WORKSPACE_CONFIG} (or unset it; importing pflnb "
            "sets it) or run with deterministic=False"
        )
    cudnn = torch.backends.cudnn
    saved = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        cudnn.benchmark,
        cudnn.deterministic,
        cudnn.allow_tf32,
        torch.backends.cuda.matmul.allow_tf32,
    )
    torch.use_deterministic_algorithms(True, warn_only=False)
    cudnn.benchmark, cudnn.deterministic = False, True
    cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
        cudnn.benchmark, cudnn.deterministic = saved[2], saved[3]
        cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved[4], saved[5]
