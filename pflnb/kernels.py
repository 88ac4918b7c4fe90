"""One code path for the CPU kernels, so that a record computed on one x86-64 machine with AVX2 is computed bit for bit
the same on another, whatever its vendor (Intel or AMD) and whatever wider instructions it has.

PyTorch's CPU arithmetic comes from three kernel families, and each picks a code path by the CPU it runs on: torch's
own vectorised kernels (ATen: AVX2, or AVX-512 where the CPU has it), MKL's BLAS and vector maths, and oneDNN's
convolutions. Each path rounds differently in the last bits, and training amplifies last bits into other accuracies.
Pinning all three removes the CPU from the result (the ``portable`` mode, the default):

- ``ATEN_CPU_CAPABILITY=avx2`` (torch's kernels),
- ``MKL_CBWR=COMPATIBLE`` (MKL's conditional numerical reproducibility: its one branch that is the same on Intel and
  non-Intel CPUs; MKL honours its AVX2 branch on Intel CPUs only, and runs its own AUTO branch elsewhere),
- ``ONEDNN_MAX_CPU_ISA=AVX2`` (oneDNN's highest instruction set).

Each library reads its variable once, when it first runs a kernel, so they must be in the environment before that:
importing :mod:`pflnb` sets them (:func:`pin`) before it imports torch, and worker processes, notebook kernels and Ray
workers inherit them (Ray gets them in its runtime environment). ``$PFLNB_KERNELS`` chooses the mode:

- ``portable`` (default): the pinned settings above; every reproduction and the committed outputs use them;
- ``generic``: the same, but torch's kernels on their generic (non-vectorised) path, a last-bit perturbation that
  ``make robustness`` uses to find the verdicts that sit on a boundary;
- ``avx2``: the pin of the outputs committed before 2026-11-28 (MKL's AVX2 branch: the same bits on Intel CPUs only),
  kept so that those records can still be read and checked on an Intel CPU;
- ``native``: nothing pinned, each library on this CPU's fastest path (interactive use may opt out this way).

Every record carries :func:`describe` (the mode, the CPU model and vendor, the capability torch really uses, MKL's
branch and the variables), and records computed under another mode are cached apart (:func:`cache_folder`). This
module imports nothing heavy: it must run before torch is imported.
"""

from __future__ import annotations

import os
import platform
import warnings
from pathlib import Path
from typing import Any

ENV = "PFLNB_KERNELS"
DEFAULT = "portable"
VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")
MODES: dict[str, dict[str, str]] = {
    "portable": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "generic": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "native": {},
}
# what torch.backends.cpu.get_cpu_capability() reports when a mode is honoured
CAPABILITY = {"portable": "AVX2", "generic": "DEFAULT", "avx2": "AVX2"}
OPT_OUT = f"{ENV}=native"


class KernelsNotHonoured(RuntimeError):
    """The CPU (or an earlier import of torch) does not run the kernels the mode pins."""


def mode() -> str:
    """The kernel mode this process runs under: ``$PFLNB_KERNELS`` (default :data:`DEFAULT`), checked."""
    value = os.environ.get(ENV, "").strip().lower() or DEFAULT
    if value not in MODES:
        raise ValueError(f"{ENV} must be one of {sorted(MODES)}, got {value!r}")
    return value


def settings(name: str | None = None) -> dict[str, str]:
    """The environment variables mode ``name`` (default: this process's) sets; empty for ``native``."""
    return dict(MODES[mode() if name is None else name])


def pin() -> dict[str, str]:
    """Put this process's mode's variables into the environment (before torch is imported: the libraries read them
    when they first run a kernel) and return them. A value exported for one of them is replaced: the mode decides
    (set ``PFLNB_KERNELS=native`` to keep your own)."""
    values = settings()
    os.environ.update(values)
    return values


def _cpuinfo(key: str) -> str:
    """The first value of ``key`` in ``/proc/cpuinfo`` ('' when there is none)."""
    info = Path("/proc/cpuinfo")
    if info.exists():
        for line in info.read_text(errors="replace").splitlines():
            if line.lower().startswith(key):
                return line.split(":", 1)[1].strip()
    return ""


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``'s 'model name', else :func:`platform.processor`)."""
    return _cpuinfo("model name") or platform.processor() or platform.machine() or "unknown"


def cpu_vendor() -> str:
    """The CPU's vendor id (``/proc/cpuinfo``'s 'vendor_id': GenuineIntel, AuthenticAMD, ...; '' when unknown)."""
    return _cpuinfo("vendor_id")


def mkl_branch() -> str:
    """The code branch MKL runs under ``MKL_CBWR``: the pinned branch on an Intel CPU; on any other CPU MKL ignores a
    branch such as AVX2 and runs its own (AUTO) branch, so its products differ from an Intel CPU's (MKL's
    documentation; measured on an AMD EPYC: MKL_CBWR=AVX2 gives AUTO's bits). Only COMPATIBLE is vendor-neutral."""
    value = os.environ.get("MKL_CBWR", "")
    if not value or value.upper() in ("AUTO", "COMPATIBLE") or cpu_vendor() in ("GenuineIntel", ""):
        return value or "AUTO"
    return f"AUTO (MKL_CBWR={value} is honoured on Intel CPUs only; this one is {cpu_vendor()})"


def capability() -> str:
    """The instruction set torch's CPU kernels use in this process ('AVX2', 'AVX512', 'DEFAULT', ...)."""
    import torch

    return str(torch.backends.cpu.get_cpu_capability())


def describe() -> dict[str, Any]:
    """What a record carries about the kernels it was computed with: the mode, whether it was honoured, the CPU
    model, torch's capability in use and the three variables as this process sees them."""
    name, used = mode(), capability()
    return {
        "mode": name,
        "honoured": name == "native" or used == CAPABILITY[name],
        "cpu": cpu_model(),
        "vendor": cpu_vendor(),
        "mkl_branch": mkl_branch(),
        "capability": used,
        **{v: os.environ.get(v, "") for v in VARIABLES},
    }


def problem() -> str:
    """Why this process does not run the pinned kernels ('' when it does, or in the ``native`` mode)."""
    name = mode()
    if name == "native":
        return ""
    used = capability()
    if used == CAPABILITY[name]:
        return ""
    why = (
        "torch was imported and ran a kernel before pflnb pinned them (import pflnb first)"
        if settings(name)["ATEN_CPU_CAPABILITY"] == os.environ.get("ATEN_CPU_CAPABILITY")
        else "the environment changed after pflnb set it"
    )
    if CAPABILITY[name] == "AVX2" and used == "DEFAULT":
        why = f"this CPU ({cpu_model()}, {platform.machine()}) has no AVX2 path"
    return (
        f"the CPU kernels are pinned to {CAPABILITY[name]} ({ENV}={name}) but torch uses {used}: {why}. Records will not "
        f"equal the committed ones bit for bit; set {OPT_OUT} to run on this CPU's own kernels (results then agree "
        "within seed noise, see the determinism guide)"
    )


def warn_if_not_honoured() -> None:
    """One warning when the pinned kernels are not the ones in use (see :func:`problem`)."""
    text = problem()
    if text:
        warnings.warn(text, RuntimeWarning, stacklevel=2)


def require() -> None:
    """Stop a reproduction (KernelsNotHonoured, with the one message of :func:`problem`) that cannot run the pinned
    kernels; nothing to do in the ``native`` mode."""
    text = problem()
    if text:
        raise KernelsNotHonoured(text)


# Seeds whose records a perturbed reproduction (make robustness) reads from the default mode's cache instead of
# computing them: the tuning seeds, so that the choices made on them stay those of the pinned reproduction and only
# the verdict seeds are recomputed under the other kernels.
HOLD_ENV = "PFLNB_KERNELS_HOLD_SEEDS"


def held_seeds() -> frozenset[int]:
    """The seeds ``$PFLNB_KERNELS_HOLD_SEEDS`` (space- or comma-separated) holds at the default mode's records."""
    text = os.environ.get(HOLD_ENV, "").replace(",", " ").split()
    try:
        return frozenset(int(t) for t in text)
    except ValueError:
        raise ValueError(f"{HOLD_ENV} must list integer seeds, got {os.environ.get(HOLD_ENV)!r}") from None


def record_mode(seed: int | None = None) -> str:
    """The kernel mode of the record of a job with ``seed``: this process's mode, or the default mode for a held seed
    (:data:`HOLD_ENV`)."""
    return DEFAULT if seed is not None and seed in held_seeds() else mode()


def is_held(seed: int | None) -> bool:
    """Whether a job with ``seed`` must be read from the default mode's records, never computed here."""
    return mode() != DEFAULT and record_mode(seed) == DEFAULT


def cache_folder(profile: str, seed: int | None = None) -> str:
    """The results folder of ``profile``'s records for a job with ``seed``: ``<profile>`` for the default mode,
    ``<profile>.<mode>`` for another (records of different kernels never mix)."""
    name = record_mode(seed)
    return profile if name == DEFAULT else f"{profile}.{name}"
