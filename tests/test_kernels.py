"""The CPU kernels pinned to one instruction set: set before torch loads, honoured in workers, recorded in every
record, cached apart by mode, a clear message where they cannot be honoured, and each setting taking effect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pflnb import kernels
from pflnb.experiments import Processes, execute, profile_config
from pflnb.experiments.jobs import RunJob

HAS_AVX2 = "avx2" in Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else False
needs_avx2 = pytest.mark.skipif(not HAS_AVX2, reason="needs an x86-64 CPU with AVX2")


def _python(code: str, **env: str) -> str:
    full = {**{k: v for k, v in os.environ.items() if k not in (*kernels.VARIABLES, kernels.ENV)}, **env}
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, check=True).stdout.strip()


@needs_avx2
@pytest.mark.parametrize(("mode", "capability"), [("portable", "AVX2"), ("generic", "DEFAULT"), ("avx2", "AVX2")])
def test_importing_pflnb_pins_the_kernels_before_torch_runs_one(mode, capability):
    code = "import pflnb, torch, json; torch.ones(3).exp(); print(json.dumps(pflnb.kernels.describe()))"
    seen = json.loads(_python(code, PFLNB_KERNELS=mode))
    assert seen["capability"] == capability and seen["honoured"] and seen["mode"] == mode
    assert {v: seen[v] for v in kernels.VARIABLES} == kernels.MODES[mode]
    # an exported value is replaced: the mode decides
    assert json.loads(_python(code, PFLNB_KERNELS=mode, ATEN_CPU_CAPABILITY="avx512"))["capability"] == capability


def test_native_pins_nothing():
    code = "import pflnb, os; print([os.environ.get(v, '') for v in pflnb.kernels.VARIABLES])"
    assert _python(code, PFLNB_KERNELS="native") == str(["", "", ""])


def test_an_unknown_mode_is_refused():
    with pytest.raises(subprocess.CalledProcessError) as info:
        subprocess.run(
            [sys.executable, "-c", "import pflnb"], env={**os.environ, "PFLNB_KERNELS": "avx512"}, capture_output=True, check=True
        )
    assert "PFLNB_KERNELS must be one of ['avx2', 'generic', 'native', 'portable'], got 'avx512'" in info.value.stderr.decode()


@needs_avx2
def test_torch_imported_first_is_named_in_one_message():
    code = (
        "import warnings, torch; torch.ones(3).exp()\n"  # torch ran a kernel (AVX-512 where the CPU has it) first
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always'); import pflnb\n"
        "print(pflnb.kernels.capability()); print(len(w)); print(w[0].message if w else '-')"  # '-': no empty last line
    )
    capability, count, message = _python(code).split("\n", 2)
    if capability == "AVX2":
        pytest.skip("this CPU's own kernels are AVX2: importing torch first changes nothing")
    assert count == "1" and "torch was imported and ran a kernel before pflnb pinned them" in message
    assert kernels.OPT_OUT in message


def test_require_stops_a_reproduction_that_cannot_honour_the_pin(monkeypatch):
    monkeypatch.setenv(kernels.ENV, "portable")
    monkeypatch.setattr(kernels, "capability", lambda: "DEFAULT")
    with pytest.raises(kernels.KernelsNotHonoured, match=r"pinned to AVX2 .* torch uses DEFAULT: this CPU .* has no AVX2"):
        kernels.require()
    monkeypatch.setenv(kernels.ENV, "native")
    kernels.require()  # opted out: nothing to honour


def test_records_are_cached_apart_by_mode_and_held_seeds_read_the_default(monkeypatch):
    monkeypatch.delenv(kernels.HOLD_ENV, raising=False)
    monkeypatch.delenv(kernels.ENV, raising=False)  # the default: portable
    assert kernels.cache_folder("cpu", 0) == "cpu" and kernels.cache_folder("cpu", 100) == "cpu"
    monkeypatch.setenv(kernels.ENV, "avx2")  # the earlier pin's records never mix with the default's
    assert kernels.cache_folder("cpu", 0) == "cpu.avx2"
    monkeypatch.setenv(kernels.ENV, "generic")
    assert kernels.cache_folder("cpu", 0) == "cpu.generic"
    monkeypatch.setenv(kernels.HOLD_ENV, "100, 101")
    assert kernels.cache_folder("cpu", 100) == "cpu" and kernels.cache_folder("cpu", 0) == "cpu.generic"
    assert kernels.is_held(101) and not kernels.is_held(0) and not kernels.is_held(None)
    monkeypatch.setenv(kernels.HOLD_ENV, "a")
    with pytest.raises(ValueError, match="PFLNB_KERNELS_HOLD_SEEDS must list integer seeds"):
        kernels.held_seeds()


def test_a_held_seed_without_its_pinned_record_stops_before_computing(tmp_path, monkeypatch):
    monkeypatch.setenv(kernels.ENV, "generic")
    monkeypatch.setenv(kernels.HOLD_ENV, "100")
    cfg = profile_config("smoke", "digits5-lite", rounds=1, model="tiny-bn-cnn", method="fedavg", seed=100)
    with pytest.raises(ValueError, match=r"1 job\(s\) on held seeds .* run the pinned reproduction first"):
        execute([RunJob(cfg)], root=tmp_path, progress=False)
    assert not list(tmp_path.rglob("*.json"))


@needs_avx2
def test_worker_records_carry_the_pinned_kernels_and_each_setting_changes_a_record(tmp_path):
    cfg = profile_config("smoke", "digits5-lite", rounds=2, model="tiny-bn-cnn", method="fedavg")
    (record,) = execute([RunJob(cfg)], Processes(1), root=tmp_path, progress=False)  # computed in a spawned worker
    assert record["kernels"]["mode"] == "portable" and record["kernels"]["capability"] == "AVX2" and record["kernels"]["honoured"]
    assert record["kernels"]["MKL_CBWR"] == record["kernels"]["mkl_branch"] == "COMPATIBLE"  # MKL's vendor-neutral branch
    assert record["kernels"]["cpu"] == kernels.cpu_model()
    # the same run under the generic kernels (a subprocess: the libraries read the variables once) gives other bits
    code = (
        "import json, sys, pflnb; from pflnb.experiments import profile_config, run\n"
        "cfg = profile_config('smoke', 'digits5-lite', rounds=2, model='tiny-bn-cnn', method='fedavg')\n"
        f"r = run(cfg, root={str(tmp_path)!r}, progress=False)\n"
        "print(json.dumps([r['kernels']['mode'], r['evals']]))"
    )
    mode, evals = json.loads(_python(code, PFLNB_KERNELS="generic"))
    assert mode == "generic" and evals != record["evals"]
    assert (tmp_path / "smoke.generic").is_dir()  # cached apart from the pinned records
    # ... and so does MKL's AVX2 branch (the earlier pin) in place of the vendor-neutral one
    mode, evals = json.loads(_python(code, PFLNB_KERNELS="avx2"))
    assert mode == "avx2" and evals != record["evals"]


def test_mkl_branch_says_that_the_avx2_branch_holds_on_intel_cpus_only(monkeypatch):
    """MKL ignores MKL_CBWR=AVX2 on a non-Intel CPU (it runs its AUTO branch): the record says so."""
    from pflnb import kernels as K

    monkeypatch.setenv("MKL_CBWR", "AVX2")
    monkeypatch.setattr(K, "cpu_vendor", lambda: "GenuineIntel")
    assert K.mkl_branch() == "AVX2"
    monkeypatch.setattr(K, "cpu_vendor", lambda: "AuthenticAMD")
    assert K.mkl_branch().startswith("AUTO (MKL_CBWR=AVX2 is honoured on Intel CPUs only")
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    assert K.mkl_branch() == "COMPATIBLE"  # the vendor-neutral branch
