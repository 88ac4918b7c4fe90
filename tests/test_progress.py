"""Progress of runs in worker processes: each run's round bar keeps its count in a file (``progress.report_to``), and
the parent shows the runs in flight (``Processes.outcomes``' ``rounds``), with the records unchanged."""

from __future__ import annotations

import json
import re
import tempfile

from pflnb import progress
from pflnb.experiments import executors, profile_config
from pflnb.experiments.executors import Processes, Serial, execute
from pflnb.experiments.jobs import RunJob


def test_a_bar_under_report_to_keeps_its_round_in_a_file_and_removes_it_when_done(tmp_path):
    seen = []
    with progress.report_to(tmp_path / "1234.json", every=0):
        for t in progress.tqdm(range(4, 8), desc="fedprox", leave=False):  # a run resumed at round 4 of 7
            (path,) = tmp_path.glob("1234-*.json")  # a file of its own
            seen.append((t, json.loads(path.read_text())))
            if t == 6:
                inner = progress.tqdm(total=3, desc="inner")  # a second bar at once: another file
                assert len(list(tmp_path.glob("1234-*.json"))) == 2
                inner.close()
        assert not path.exists()  # closed: no report left for the parent to show
        quiet = progress.tqdm(range(3), disable=True)
        list(quiet)
    assert seen == [(t, {"desc": "fedprox", "n": t - 1, "total": 7}) for t in range(4, 8)]  # rounds done
    assert list(tmp_path.iterdir()) == []  # a disabled bar reports nothing
    assert progress.in_flight(progress.read_reports(tmp_path)) == ""
    (tmp_path / "1.json").write_text('{"desc": "fedavg", "n": 3, "total": 9}')
    (tmp_path / "2.json").write_text('{"desc": "fedprox", "n": 120, "to')  # being replaced: skipped
    assert progress.in_flight(progress.read_reports(tmp_path)) == "fedavg 3/9"
    with progress.report_to(tmp_path / "9.json", every=3600):  # at most every hour: when it opens only
        bar = progress.tqdm(total=5, desc="x")
        bar.update()
        bar.update()
        (path,) = tmp_path.glob("9-*.json")
        assert json.loads(path.read_text()) == {"desc": "x", "n": 0, "total": 5}
        bar.close()
    with progress.report_to(tmp_path / "gone" / "1.json", every=0):  # a report that cannot be written
        assert list(progress.tqdm(range(3), desc="run")) == [0, 1, 2]  # the run goes on
    assert type(progress.tqdm(total=1, leave=False)).__name__ != "FileReport"  # outside report_to: a bar again
    final = progress.FinalLine(total=2, desc="runs")  # a batch run's bar takes the runs in flight too (not printed)
    final.set_postfix_str("fedavg 3/9")
    assert final.postfix == "fedavg 3/9"


def test_workers_show_the_rounds_of_their_runs_in_flight_and_return_the_same_records(tmp_path, monkeypatch):
    """``execute`` on worker processes puts the runs in flight in its bar's postfix (here a final-mode bar, which
    keeps it), and the records equal a serial run's."""
    monkeypatch.setattr(executors, "REPORT_EVERY_S", 0.05)  # the parent's reading and the workers' writing
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the reports' folder is made
    monkeypatch.setenv(progress.MODE_ENV, "final")
    shown: list[str] = []

    class Kept(progress.FinalLine):
        def set_postfix_str(self, text: str = "") -> None:
            shown.append(text)

    monkeypatch.setattr(executors, "tqdm", lambda **kw: Kept(total=kw["total"], desc=kw["desc"]))
    jobs = [RunJob(profile_config("smoke", "digits5-lite", rounds=20, model="tiny-bn-cnn", seed=s)) for s in (0, 1)]
    records = execute(jobs, Processes(2), root=tmp_path / "results", progress=True)
    serial = execute(jobs, Serial(), cache=False, progress=False)
    assert [r["evals"] for r in records] == [r["evals"] for r in serial]
    counts = [(int(n), int(total)) for text in shown for n, total in re.findall(r"fedavg (\d+)/(\d+)", text)]
    assert counts and all(total == 20 and 0 <= n <= 20 for n, total in counts), shown
    assert not list(tmp_path.glob("pflnb-rounds-*"))  # the reports' folder is gone
