"""The reproduction's cost account (pflnb.experiments.cost) on run logs and records written here, against sums done
by hand; and the run log that execute() writes (stage, kind, seconds)."""

import json

import pytest

from pflnb.experiments.cost import cost_table, lower_bound, makespan, reproduction_cost
from pflnb.experiments.reproduce import read_events


def test_makespan_hands_jobs_to_the_first_free_worker_in_order():
    assert makespan([3, 1, 1, 1], 2) == 3  # 3 | 1+1+1
    assert makespan([1, 1, 3], 2) == 4  # 1+3 | 1: in order, not longest first
    assert makespan([2, 2, 2], 1) == 6
    assert makespan([5], 4) == 5
    assert makespan([], 2) == 0
    with pytest.raises(ValueError):
        makespan([1], 0)


def _record(results, key, wall, evals=(), profile="cpu"):
    folder = results / profile
    folder.mkdir(parents=True, exist_ok=True)
    rec = {"key": key, "rounds": [{"round": i + 1, "time": {"local": 1.0, "eval": e}} for i, e in enumerate(evals)]}
    if wall is not None:
        rec["wall_time_s"] = wall
    (folder / f"m-{key}.json").write_text(json.dumps(rec))


def _log(executed, stem, events):
    (executed / "runs").mkdir(parents=True, exist_ok=True)
    (executed / "runs" / f"{stem}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def test_cold_cost_from_warm_and_cold_logs(tmp_path):
    executed, results = tmp_path / "executed", tmp_path / "results"
    executed.mkdir()
    (executed / "reproduce.log").write_text(
        "== pflnb reproduce --profile cpu --scope all: old\n01_a.ipynb: ok in 999 s; runs: ...\n"
        "== pflnb reproduce --profile cpu --scope all: new\n01_a.ipynb: ok in 600 s; runs: 3 computed\n"
        "02_b.ipynb: ok in 120 s; runs: 1 computed, 1 loaded\ndone: 2 notebook(s)\n"
        "== pflnb reproduce --profile cpu --scope all: 02_b alone\n02_b.ipynb: ok in 130 s; runs: 4 loaded\n"
    )  # each notebook's last execution counts: 01_a from the second invocation, 02_b from the third
    _record(results, "k1", 100.0, evals=(2.0, 3.0))
    _record(results, "k2", 50.0)
    _record(results, "k3", 60.0, evals=(1.0,))
    _record(results, "k4", None)  # a record without a wall time: untimed unless the log timed it
    _record(results, "k5", None)
    ev = lambda event, key, stage, kind=None, seconds=None: {  # noqa: E731
        "event": event,
        "key": key,
        "profile": "cpu",
        "stage": stage,
        **({"kind": kind} if kind else {}),
        **({"seconds": seconds} if seconds is not None else {}),
    }
    _log(
        executed,
        "01_a",
        [
            ev("loaded", "k1", "s1", "tuning"),  # warm: the record's 100 s
            ev("computed", "k2", "s1", "tuning", seconds=40.0),  # cold: the log's 40 s, not the record's 50
            ev("loaded", "k3", "s2", "verdict"),
            ev("failed", "k9", "s2", "verdict"),
        ],
    )
    timing = {"key": "k6", "rounds": 5, "wall_time_s": 9.0}  # not an engine run: FedFac's paired timing job
    (results / "cpu" / "t-k6.json").write_text(json.dumps(timing))
    _log(
        executed,
        "02_b",
        [
            ev("loaded", "k1", "t1", "tuning"),
            ev("computed", "k4", "t1", seconds=7.0),
            ev("loaded", "k5", "t1"),
            ev("loaded", "k6", "t2"),
        ],
    )
    a, b = reproduction_cost(executed, results, workers=2)
    assert (a.name, a.wall, b.wall) == ("01_a.ipynb", 600.0, 130.0)
    assert a.engine == {"tuning": 140.0, "verdict": 60.0, "other": 0.0}
    assert a.evaluation == 2.0 + 3.0 + 1.0
    assert (a.jobs, a.repeated, a.untimed) == (3, 0, 0)
    assert a.scheduled == 100.0 + 60.0  # stage s1: 100 | 40 on two workers; then s2
    assert a.critical == 100.0 + 60.0
    assert b.engine == {"tuning": 0.0, "verdict": 0.0, "other": 7.0 + 9.0}  # k1 cost in 01_a already
    assert (b.jobs, b.repeated, b.untimed, b.evaluation) == (4, 1, 1, 0.0)
    assert lower_bound([a, b], 2) == max((140 + 60 + 16) / 2, 160.0)
    assert lower_bound([a, b], 1) == 216.0
    table = cost_table([a, b], 2)
    assert "| total | 12.2 | 3.6 |" in table  # 730 s wall, 216 s engine
    assert "at least 2.7 min" in table  # 160 s


def test_missing_run_logs_say_so(tmp_path):
    (tmp_path / "reproduce.log").write_text("== pflnb reproduce --profile cpu --scope main: x\n01_a.ipynb: ok in 5 s\n")
    with pytest.raises(FileNotFoundError, match="runs/01_a.jsonl"):
        reproduction_cost(tmp_path, tmp_path)
    with pytest.raises(FileNotFoundError, match="make reproduce"):
        reproduction_cost(tmp_path / "nowhere", tmp_path)


def test_execute_logs_stage_kind_and_seconds(tmp_path, monkeypatch):
    """Two execute() calls: two stages; the computed job's seconds; the kind as given, none when not given."""
    from pflnb.experiments import RunJob, Serial, execute, profile_config
    from pflnb.experiments.cache import RUN_LOG_ENV

    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv(RUN_LOG_ENV, str(log))
    cfg = profile_config("smoke", "digits5-lite", rounds=1, model="tiny-bn-cnn")
    execute([RunJob(cfg)], Serial(), root=tmp_path / "r", progress=False, kind="tuning")
    execute([RunJob(cfg)], Serial(), root=tmp_path / "r", progress=False)
    first, second = read_events(log)
    assert (first["event"], first["kind"], second["event"]) == ("computed", "tuning", "loaded")
    assert first["seconds"] > 0 and "seconds" not in second and "kind" not in second
    assert first["stage"] != second["stage"]


def test_reproduce_keeps_each_notebooks_run_log_for_the_cost_account(tmp_path, monkeypatch):
    """pflnb reproduce → runs/<notebook>.jsonl → reproduction_cost: a notebook running one engine run twice (computed,
    then loaded) costs that run once; a notebook without jobs gets an empty log and costs nothing."""
    import nbformat

    from pflnb.cli import main

    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path / "results"))
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    code = (
        "from pflnb.experiments import profile_config, run\n"
        "cfg = profile_config('smoke', 'digits5-lite', rounds=1, model='tiny-bn-cnn')\n"
        "run(cfg, progress=False); run(cfg, progress=False)"
    )
    nb.cells = [
        nbformat.v4.new_code_cell("profile = 'smoke'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(code),
    ]
    nbs = tmp_path / "notebooks"  # the kernels run here, the log goes to a relative --out from tmp_path
    nbs.mkdir()
    nbformat.write(nb, nbs / "one.ipynb")
    nb.cells = nb.cells[:1]
    nbformat.write(nb, nbs / "none.ipynb")
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)
    assert (
        main(["reproduce", "--profile", "smoke", "--quiet", "--out", "out", "notebooks/one.ipynb", "notebooks/none.ipynb"]) == 0
    )
    one, none = reproduction_cost(out, tmp_path / "results", workers=2)
    events = read_events(out / "runs" / "one.jsonl")
    assert [e["event"] for e in events] == ["computed", "loaded"]
    assert (one.jobs, one.repeated, one.untimed) == (2, 1, 0)
    assert one.engine["other"] == pytest.approx(events[0]["seconds"]) and one.engine["other"] > 0
    assert (none.jobs, none.engine_total) == (0, 0.0)
