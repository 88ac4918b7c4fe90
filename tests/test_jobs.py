"""The job layer: one cache, one failure policy for every executor, protocols in the key, reopened runs, and imports
that point one way (cache → jobs → executors → run)."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from pflnb.experiments import EvalProtocol, Job, JobsFailed, Processes, RunJob, Serial, execute, profile_config, reopen, run
from pflnb.experiments.jobs import digest
from pflnb.fl import state as S

PACKAGE = Path(__file__).resolve().parents[1] / "pflnb"


@dataclass(frozen=True)
class Square(Job):
    """x² (a negative x raises); each computation leaves a marker file, so a test can count them."""

    x: int
    marks: str
    profile: str = "smoke"

    def key(self) -> str:
        return digest("square", self.x)

    def label(self) -> str:
        return "square"

    def compute(self, root, progress=False):
        Path(self.marks, f"{self.x}-{os.getpid()}-{len(os.listdir(self.marks))}").touch()
        if self.x < 0:
            raise ArithmeticError(f"no square of {self.x} today")
        return {"x": self.x, "square": self.x * self.x}

    def check(self, record, path):
        if set(record) - {"kernels"} != {"x", "square"}:  # every computed record carries its CPU kernels
            raise ValueError(f"cached record {path} has the wrong shape")
        return record


def _computed(marks: Path) -> list[int]:
    return sorted(
        int(p.name.split("-")[0]) if not p.name.startswith("-") else -int(p.name.split("-")[1]) for p in marks.iterdir()
    )


@pytest.mark.parametrize("executor", [Serial(), Processes(2)], ids=["serial", "processes"])
def test_execute_caches_orders_and_reports_every_failure_alike(tmp_path, executor):
    marks = tmp_path / "marks"
    marks.mkdir()
    jobs = [Square(x, str(marks)) for x in (3, -1, 2, -5, 4)]
    execute([jobs[2]], Serial(), root=tmp_path, progress=False)  # cached beforehand: loaded, not computed again
    with pytest.raises(JobsFailed) as info:
        execute(jobs, executor, root=tmp_path, progress=False)
    err = info.value
    assert [f["index"] for f in err.failures] == [1, 3]  # every failure, in input order
    assert all("Traceback" in f["error"] and "ArithmeticError: no square of" in f["error"] for f in err.failures)
    assert err.failures[1]["job"] == {"method": "square", "seed": None, "key": jobs[3].key(), "profile": "smoke"}
    assert "2 of 5 jobs failed (3 finished" in str(err)
    assert [r and r["square"] for r in err.records] == [9, None, 4, None, 16]  # finished ones kept, in input order
    for job, want in zip(jobs, (9, None, 4, None, 16)):  # and cached by the driver
        path = job.path(tmp_path)
        assert (json.loads(path.read_text())["square"] if path.exists() else None) == want
    assert _computed(marks) == [-5, -1, 2, 3, 4]  # 2 once (beforehand), every other job once
    again = execute([jobs[0], jobs[4]], executor, root=tmp_path, progress=False)
    assert [r["square"] for r in again] == [9, 16] and len(list(marks.iterdir())) == 5  # all loaded
    forced = execute([jobs[0]], executor, root=tmp_path, progress=False, force=True)
    assert forced[0]["square"] == 9 and len(list(marks.iterdir())) == 6
    assert not list(tmp_path.rglob("*.tmp"))


def test_serial_failures_chain_the_original_exception(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    with pytest.raises(JobsFailed) as info:
        execute([Square(-2, str(marks))], Serial(), root=tmp_path, progress=False)
    assert isinstance(info.value.__cause__, ArithmeticError)


def test_a_bad_cached_record_among_good_ones_is_set_aside_and_recomputed(tmp_path):
    from pflnb.experiments.cache import RecordSetAsideWarning

    marks = tmp_path / "marks"
    marks.mkdir()
    jobs = [Square(x, str(marks)) for x in (2, 3, 4)]
    execute(jobs, Serial(), root=tmp_path, progress=False)
    bad = jobs[1].path(tmp_path)
    bad.write_text('{"x": 2}')  # well-formed JSON of the wrong shape
    with pytest.warns(RecordSetAsideWarning, match=rf"{bad.name} -> .*{bad.name}\.\d{{8}}T\d{{6}}Z\.set-aside.*wrong shape"):
        records = execute(jobs, Processes(2), root=tmp_path, progress=False)
    assert [r["square"] for r in records] == [4, 9, 16]  # the sweep went on
    assert _computed(marks) == [2, 3, 3, 4]  # only the bad one computed again
    (kept,) = bad.parent.glob(f"{bad.name}.*.set-aside")
    assert kept.read_text() == '{"x": 2}'  # kept, never deleted
    assert json.loads(bad.read_text())["square"] == 9  # and the recomputed record cached in its place


def _tiny(**kw):
    return profile_config("smoke", "digits5-lite", **{"rounds": 2, "model": "tiny-bn-cnn", "method": "ditto", **kw})


def _flip_labels(data, seed):
    """A test protocol: every test label moved to the next class."""
    clients = [
        dataclasses.replace(c, test=dataclasses.replace(c.test, y=(c.test.y + 1) % data.num_classes)) for c in data.clients
    ]
    return dataclasses.replace(data, clients=clients)


def test_a_protocol_is_part_of_the_key_and_changes_only_the_evaluation(tmp_path):
    cfg = _tiny(method="fedavg")
    flip = EvalProtocol("flip-test-labels", _flip_labels)
    plain, flipped = run(cfg, root=tmp_path, progress=False), run(cfg, root=tmp_path, progress=False, protocol=flip)
    assert RunJob(cfg, flip).key() == digest(cfg.key(), {"protocol": "flip-test-labels"}) != cfg.key()
    assert flipped["key"] == RunJob(cfg, flip).key() and flipped["protocol"] == "flip-test-labels"
    assert sorted(p.name for p in (tmp_path / "smoke").iterdir()) == sorted(
        [f"fedavg-{cfg.key()}.json", f"fedavg-{flipped['key']}.json"]
    )
    assert [r["client_metrics"] for r in plain["rounds"]] == [
        r["client_metrics"] for r in flipped["rounds"]
    ]  # training never reads test
    assert plain["evals"][-1]["val_acc"] == flipped["evals"][-1]["val_acc"]
    assert plain["evals"][-1]["test_acc"] != flipped["evals"][-1]["test_acc"]


def test_reopen_gives_the_final_states_and_a_context_after_training(tmp_path, monkeypatch):
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    cfg = _tiny()
    final = run(cfg, keep_final=True, progress=False, cache=False)["final"]
    runs = reopen(run(cfg, progress=False))  # from a cached record
    assert runs.cfg == cfg and runs.record["key"] == cfg.key()
    assert S.equal(runs.server["model"], final["server"]["model"])
    for a, b in zip(runs.clients, final["clients"]):
        assert S.equal(a["personal"], b["personal"])
    ctx = runs.context()
    assert ctx.round == cfg.rounds + 1 and ctx.num_clients == len(runs.clients) == cfg.num_clients
    model = runs.model()
    assert all(torch.equal(v, final["server"]["model"][k]) for k, v in model.state_dict().items())
    module = runs.algorithm.eval_module(ctx, 0, runs.server, runs.clients[0])  # the personalized model of client 0
    assert module(runs.data.clients[0].test.x[:4]).shape == (4, runs.data.num_classes)


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at module level) of every ``pflnb`` import in ``path``."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pflnb"):
            out.append((node.module, id(node) in top))
        elif isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names if a.name.startswith("pflnb")]
    return out


def test_the_experiment_layer_imports_point_one_way():
    order = ["cache", "jobs", "gpu_share", "executors", "run"]  # each may import only those before it
    for i, name in enumerate(order):
        mods = {m for m, _ in _imports(PACKAGE / "experiments" / f"{name}.py")}
        later = {f"pflnb.experiments.{n}" for n in order[i + 1 :]}
        assert not mods & later, f"experiments/{name}.py imports {sorted(mods & later)}"
    assert "pflnb.experiments.executors" not in {m for m, _ in _imports(PACKAGE / "experiments" / "ray_backend.py")}


# modules that need an optional extra (pip install pflnb[flower]): imported where they are asked for, never at the top
OPTIONAL_MODULES = {"pflnb.flower"}


def test_no_function_local_pflnb_imports():
    local = [
        f"{path.relative_to(PACKAGE.parent)}: {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for module, at_top in _imports(path)
        if not at_top and module not in OPTIONAL_MODULES and not (module == "pflnb" and _imports_optional(path))
    ]
    assert local == []


def _imports_optional(path: Path) -> bool:
    """Whether ``from pflnb import <optional module>`` is the function-local import of ``path``."""
    optional = {m.split(".")[1] for m in OPTIONAL_MODULES}
    tree = ast.parse(path.read_text())
    return any(
        isinstance(n, ast.ImportFrom) and n.module == "pflnb" and {a.name for a in n.names} <= optional for n in ast.walk(tree)
    )


@dataclass(frozen=True)
class Die(Job):
    """A job whose worker process dies (os._exit) while computing it."""

    profile: str = "smoke"

    def key(self) -> str:
        return digest("die")

    def label(self) -> str:
        return "die"

    def compute(self, root, progress=False):
        os._exit(3)


def _pids(marks: Path) -> set[int]:
    return {int(p.name.split("-")[-2]) for p in marks.iterdir()}


def test_worker_processes_are_kept_between_calls_for_one_environment(tmp_path, monkeypatch):
    """Spawning a worker imports torch (seconds): execute() calls reuse the workers of the last call, unless the
    environment workers inherit changed or a worker died."""
    from pflnb.experiments import executors as EX
    from pflnb.experiments.executors import shutdown_pools

    shutdown_pools()
    marks = [tmp_path / f"marks{i}" for i in range(4)]
    for m in marks:
        m.mkdir()

    def call(i, xs):
        return execute([Square(x, str(marks[i])) for x in xs], Processes(2), root=tmp_path / f"r{i}", progress=False)

    assert [r["square"] for r in call(0, (1, 2, 3, 4))] == [1, 4, 9, 16]
    pool = {pid for p in EX._POOLS.values() for pid in p._processes}  # under load one worker may run all four
    call(1, (5, 6, 7, 8))
    assert _pids(marks[0]) <= pool and _pids(marks[1]) <= pool and os.getpid() not in pool  # the same workers again
    monkeypatch.setenv("PFLNB_KERNELS_HOLD_SEEDS", "")  # a variable the workers inherit: a new pool
    call(2, (1, 2, 3, 4))
    assert not _pids(marks[2]) & _pids(marks[0])
    with pytest.raises(JobsFailed, match="BrokenProcessPool|terminated abruptly"):
        execute([Die(), Square(9, str(marks[3]))], Processes(2), root=tmp_path / "r3", progress=False)
    assert [r["square"] for r in call(3, (10, 11))] == [100, 121]  # a dead worker's pool is not reused
    shutdown_pools()
