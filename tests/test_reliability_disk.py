"""Nothing right is lost when the results folder cannot take a record: checked before training, and a write that
fails after training keeps the result (printed, returned, named as not cached) while a sweep goes on."""

from __future__ import annotations

import errno
import importlib
import warnings

import pytest

from pflnb.cli import EXIT_NOT_CACHED, main
from pflnb.experiments import Serial, cache_path, profile_config, run, run_many
from pflnb.experiments.cache import RecordNotCachedWarning, check_results_root

cache_module = importlib.import_module("pflnb.experiments.cache")
jobs_module = importlib.import_module("pflnb.experiments.jobs")


def _tiny(**kw):
    return profile_config("smoke", "digits5-lite", **{"rounds": 1, "model": "tiny-bn-cnn", **kw})


def _disk_full_for(monkeypatch, methods: set[str]) -> list[str]:
    """Make writes of the records of ``methods`` fail as on a full disk; return the paths that failed."""
    real, failed = jobs_module.write_json_atomic, []

    def write(path, record):
        if record["config"]["method"] in methods:
            failed.append(str(path))
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, record)

    monkeypatch.setattr(jobs_module, "write_json_atomic", write)
    return failed


def test_results_folder_must_be_a_writable_directory(tmp_path, monkeypatch):
    assert check_results_root(tmp_path / "new" / "smoke").is_dir()  # a missing folder is created
    assert list((tmp_path / "new" / "smoke").iterdir()) == []  # the write probe leaves nothing behind
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"results folder .*file is not a directory"):
        check_results_root(tmp_path / "file")

    def refuse(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(cache_module.tempfile, "mkstemp", refuse)
    with pytest.raises(ValueError, match=r"results folder .*ro is not writable \(Permission denied\)"):
        check_results_root(tmp_path / "ro")


def test_unwritable_folder_fails_before_any_training(tmp_path, monkeypatch):
    def no_training(*a, **k):
        raise AssertionError("training started")

    monkeypatch.setattr(jobs_module, "drive", no_training)
    (tmp_path / "smoke").write_text("a file where the profile's folder should be")
    with pytest.raises(ValueError, match="not a directory"):
        run(_tiny(), root=tmp_path, progress=False)
    with pytest.raises(ValueError, match="not a directory"):
        run_many([_tiny(), _tiny(seed=1)], root=tmp_path, progress=False, executor=Serial())


def test_failed_write_keeps_the_result_and_names_path_and_reason(tmp_path, monkeypatch):
    failed = _disk_full_for(monkeypatch, {"fedavg"})
    cfg = _tiny(method="fedavg")
    with pytest.warns(RecordNotCachedWarning, match="No space left on device"):
        record = run(cfg, root=tmp_path, progress=False)
    assert failed == [str(cache_path(cfg, tmp_path))]
    assert record["summary"]["test_acc"] >= 0  # the finished result is returned
    assert record["not_cached"] == f"could not write {failed[0]} (No space left on device): the record was not cached"
    assert not cache_path(cfg, tmp_path).exists()
    assert [p.name for p in (tmp_path / "smoke").iterdir()] == []  # no partial or temporary file either


def test_sweep_goes_on_and_reports_every_unsaved_run_at_the_end(tmp_path, monkeypatch):
    _disk_full_for(monkeypatch, {"fedavg"})
    configs = [_tiny(method="fedavg"), _tiny(method="local"), _tiny(method="fedavg", seed=1)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = run_many(configs, root=tmp_path, progress=False, executor=Serial())
    assert [bool(r.get("not_cached")) for r in records] == [True, False, True]
    assert cache_path(configs[1], tmp_path).exists() and not cache_path(configs[0], tmp_path).exists()
    last = [w for w in caught if issubclass(w.category, RecordNotCachedWarning)][-1]
    assert str(last.message).startswith("2 finished job(s) were not cached")
    assert "fedavg seed 0" in str(last.message) and "fedavg seed 1" in str(last.message)


def test_cli_prints_the_results_then_each_unsaved_run_and_exits_non_zero(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    _disk_full_for(monkeypatch, {"local"})
    rc = main(["sweep", "--methods", "fedavg", "local", "--profile", "smoke", "--set", "rounds=1", "--quiet"])
    out, err = capsys.readouterr()
    assert rc == EXIT_NOT_CACHED
    assert "fedavg" in out and "local" in out  # both results printed
    lines = [ln for ln in err.splitlines() if ln.startswith("pflnb: error:")]
    assert len(lines) == 1 and "local seed 0 finished, but could not write" in lines[0]
    assert str(tmp_path) in lines[0] and "No space left on device" in lines[0] and "not cached" in lines[0]
    assert "Traceback" not in err
