"""Shipped run records: export from a reproduction's run logs, import with every digest checked, and `pflnb verify`
recomputing records bit for bit (and failing, naming the field, on a record that was changed)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import lzma

import pandas as pd
import pytest
import torch

from pflnb.cli import main
from pflnb.experiments import profile_config
from pflnb.experiments import records as REC
from pflnb.experiments.cache import RUN_LOG_ENV
from pflnb.experiments.executors import Serial, execute
from pflnb.experiments.jobs import RunJob


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """Two tiny runs computed as a notebook computes them (a tuning and a verdict run, logged), exported."""
    executed, root = tmp_path / "executed", tmp_path / "results"
    (executed / "runs").mkdir(parents=True)
    monkeypatch.setenv(RUN_LOG_ENV, str(executed / "runs" / "00_toy.jsonl"))
    cfg = profile_config("smoke", "digits5-lite", rounds=2, model="tiny-bn-cnn")
    execute([RunJob(cfg.replace(seed=100))], Serial(), root=root, progress=False, kind="tuning", experiment="main")
    execute([RunJob(cfg.replace(seed=0))], Serial(), root=root, progress=False, kind="verdict", experiment="main")
    monkeypatch.delenv(RUN_LOG_ENV)
    summary = REC.export(executed, tmp_path / "records", root)
    return tmp_path / "records" / "00_toy.jsonl.xz", root, summary


def _rewrite(path, change):
    lines = [json.loads(t) for t in lzma.open(path, "rt").read().splitlines()]
    change(lines)
    path.write_bytes(lzma.compress(("\n".join(json.dumps(x) for x in lines) + "\n").encode()))


def test_export_writes_one_line_per_logged_record_with_its_digest(shipped):
    path, root, summary = shipped
    lines = list(REC.read_lines([path]))
    assert summary == {"00_toy": {"records": 2, "digest_only": 0, "bytes": path.stat().st_size, "kept": 0}}
    assert [ln.kind for ln in lines] == ["tuning", "verdict"]
    assert [ln.experiments for ln in lines] == [("main",), ("main",)]
    for ln in lines:
        cached = json.loads((root / ln.path).read_text())
        assert ln.content == cached and ln.digest == REC.digest(cached)


def test_digest_leaves_out_wall_clock_and_the_machine_but_nothing_else(shipped):
    path, _, _ = shipped
    record = next(REC.read_lines([path])).record()
    moved = json.loads(json.dumps(record))
    moved["wall_time_s"] += 1.0
    moved["rounds"][0]["time"]["local"] += 1.0
    moved["kernels"]["cpu"] = "another CPU"
    assert REC.digest(moved) == REC.digest(record)
    moved["evals"][-1]["test_acc"][0] += 1e-12  # one last bit of one number
    assert REC.digest(moved) != REC.digest(record)
    assert REC.first_difference(record, moved).startswith(f"evals[{len(record['evals']) - 1}].test_acc[0]")


def test_import_fills_an_empty_cache_and_refuses_a_record_that_fails_its_digest(shipped, tmp_path):
    path, _, _ = shipped
    fresh = tmp_path / "fresh"
    counts = lambda w, p: {"written": w, "present": p, "different": 0, "missing": 0, "differ": []}  # noqa: E731
    assert REC.import_records([path], fresh) == counts(2, 0)
    assert REC.import_records([path], fresh) == counts(0, 2)

    def tamper(lines):
        lines[1]["content"]["summary"]["test_acc"] += 0.01

    _rewrite(path, tamper)
    empty = tmp_path / "empty"
    with pytest.raises(REC.RecordDigestError, match="00_toy: smoke/"):
        REC.import_records([path], empty)
    assert not empty.exists()  # nothing written


def test_verify_recomputes_the_records_bit_for_bit_and_names_a_changed_one(shipped, capsys):
    path, _, _ = shipped
    assert main(["verify", str(path), "--all", "--quiet"]) == 0
    assert "2 equal, 0 differ, 0 skipped" in capsys.readouterr().out

    def change(lines):  # a record changed with a digest to match: only recomputing it shows the change
        lines[0]["content"]["evals"][-1]["val_acc"][0] += 0.125
        lines[0]["digest"] = REC.digest(lines[0]["content"])

    _rewrite(path, change)
    assert main(["verify", str(path), "-n", "2", "--seed", "3", "--quiet"]) == 1
    out = capsys.readouterr()
    assert "1 equal, 1 differ" in out.out and "mismatch: 00_toy" in out.err and "val_acc[0]" in out.err


def test_sample_is_stratified_by_notebook_and_kind_and_repeats_with_its_seed():
    lines = [
        REC.Line(nb, kind, f"p/{nb}-{kind}-{i}.json", "d", {})
        for nb in ("a", "b")
        for kind in ("tuning", "verdict")
        for i in range(5)
    ]
    drawn = REC.sample(lines, 4, seed=1)
    assert {(ln.notebook, ln.kind) for ln in drawn} == {("a", "tuning"), ("a", "verdict"), ("b", "tuning"), ("b", "verdict")}
    assert [ln.path for ln in drawn] == [ln.path for ln in REC.sample(lines, 4, seed=1)]
    assert {ln.notebook for ln in REC.sample(lines, 3, seed=2, notebook="b")} == {"b"}
    assert len(REC.sample(lines, 100, seed=0)) == 20
    with pytest.raises(ValueError, match="notebook 'c'"):
        REC.sample(lines, 1, seed=0, notebook="c")


def test_a_record_of_other_kernels_is_imported_into_their_own_folder(shipped, tmp_path):
    """A shipped record computed under another kernel mode than the default (the earlier avx2 pin's, say) goes to
    that mode's folder, where a process under that mode reads it, never into the default kernels' folder."""
    path, _, _ = shipped

    def older(lines):  # the second record as if computed under the earlier pin, its digest made again
        lines[1]["content"]["kernels"]["mode"] = "avx2"
        lines[1]["digest"] = REC.digest(lines[1]["content"])

    _rewrite(path, older)
    fresh = tmp_path / "fresh"
    assert REC.import_records([path], fresh)["written"] == 2
    first, second = REC.read_lines([path])
    assert first.path.startswith("smoke/") and (fresh / first.path).exists()
    moved = second.path.replace("smoke/", "smoke.avx2/", 1)
    assert second.cache_path() == moved and (fresh / moved).exists() and not (fresh / second.path).exists()


def test_export_reads_the_logged_jobs_own_file_beside_another_jobs_of_the_same_key(shipped, tmp_path):
    """Two jobs may share a label and key with other suffixes (a run's record and its final states, ``.final.pt``):
    the run log names each job's suffix, so export ships the logged job's own file, not an ambiguity error."""
    path, root, _ = shipped
    first = next(REC.read_lines([path]))
    sidecar = root / first.path.replace(".json", ".final.pt")
    sidecar.write_bytes(b"not the run's record")
    executed = path.parent.parent / "executed"
    again = REC.export(executed, tmp_path / "again", root)
    assert again["00_toy"]["records"] == 2
    assert [ln.path for ln in REC.read_lines([tmp_path / "again" / "00_toy.jsonl.xz"])][0] == first.path


def test_a_large_record_ships_its_digest_only_and_is_checked_once_recomputed(shipped, tmp_path, capsys):
    """A record file above the inline size (LG-Mix's final model states) ships as its digest: import writes nothing
    for it and counts it missing; once the notebook has recomputed it, a second import checks it against the digest
    and fails naming it when it differs; verify skips it and never draws it at random."""
    path, root, _ = shipped
    executed = path.parent.parent / "executed"
    limit = min((root / ln.path).stat().st_size for ln in REC.read_lines([path])) - 1  # every record is above it
    summary = REC.export(executed, tmp_path / "digests", root, inline_max=limit)
    assert summary["00_toy"]["digest_only"] == 2
    shipped_file = tmp_path / "digests" / "00_toy.jsonl.xz"
    lines = list(REC.read_lines([shipped_file]))
    assert [(ln.encoding, ln.content, ln.shipped) for ln in lines] == [("digest", None, False)] * 2
    assert [ln.digest for ln in lines] == [ln.digest for ln in REC.read_lines([path])]
    fresh = tmp_path / "fresh"
    assert REC.import_records([shipped_file], fresh)["missing"] == 2 and not fresh.exists()
    assert REC.sample(lines, 5, seed=0) == []
    assert [r["status"] for r in REC.verify(lines, progress=False)] == ["skipped", "skipped"]

    for ln in lines:  # the notebook recomputes them: here, the same bytes
        (fresh / ln.path).parent.mkdir(parents=True, exist_ok=True)
        (fresh / ln.path).write_bytes((root / ln.path).read_bytes())
    counts = REC.import_records([shipped_file], fresh)
    assert (counts["present"], counts["missing"], counts["differ"]) == (2, 0, [])
    changed = json.loads((fresh / lines[1].path).read_text())
    changed["evals"][-1]["test_acc"][0] += 1e-9
    (fresh / lines[1].path).write_text(json.dumps(changed))
    assert main(["records", "import", str(shipped_file), "--root", str(fresh)]) == 1
    assert f"differs: 00_toy: {lines[1].path}" in capsys.readouterr().err


def _claims_csv(folder, rows):
    from pflnb.experiments.claims import COLUMNS

    folder.mkdir(parents=True)
    table = pd.DataFrame([{c: "" for c in COLUMNS} | row for row in rows], columns=COLUMNS)
    table.to_csv(folder / "claims.csv", index=False)


def test_verify_claim_draws_the_records_of_the_experiments_the_claim_read(tmp_path, monkeypatch, capsys):
    """``--claim``: the committed claims CSV names the experiments a verdict read (``reads``); only their runs, of
    that paper's notebook, are drawn. Unknown, ambiguous and experiment-less claims are errors saying which."""
    executed, root = tmp_path / "executed", tmp_path / "results"
    (executed / "runs").mkdir(parents=True)
    cfg = profile_config("smoke", "digits5-lite", rounds=1, model="tiny-bn-cnn")
    for notebook, experiment, seed in (("01_toy", "table1", 0), ("01_toy", "fig2", 1), ("02_other", "table1", 2)):
        monkeypatch.setenv(RUN_LOG_ENV, str(executed / "runs" / f"{notebook}.jsonl"))
        execute([RunJob(cfg.replace(seed=seed))], Serial(), root=root, progress=False, kind="verdict", experiment=experiment)
    monkeypatch.delenv(RUN_LOG_ENV)
    REC.export(executed, tmp_path / "records", root)
    lines = list(REC.read_lines(sorted((tmp_path / "records").glob("*.jsonl.xz"))))
    figures = tmp_path / "figures"
    _claims_csv(
        figures / "toy",
        [
            {"claim": "A beats B on Table 1", "reads": "table1"},
            {"claim": "A beats B in Fig. 2", "reads": "fig2"},
            {"claim": "A check", "reads": ""},
        ],
    )
    claim, drawn = REC.claim_lines(lines, "A beats B on", figures)
    assert claim == "A beats B on Table 1"
    assert [(ln.notebook, ln.record()["config"]["seed"]) for ln in drawn] == [("01_toy", 0)]  # not 02_other's table1
    with pytest.raises(ValueError, match="2 claims start with 'A beats'"):
        REC.claim_lines(lines, "A beats", figures)
    with pytest.raises(ValueError, match="no committed claim starts with 'Z'"):
        REC.claim_lines(lines, "Z", figures)
    with pytest.raises(ValueError, match="names no experiment it read"):
        REC.claim_lines(lines, "A check", figures)
    monkeypatch.setattr(REC, "figures_root", lambda: figures)
    files = [str(f) for f in sorted((tmp_path / "records").glob("*.jsonl.xz"))]
    assert main(["verify", *files, "--claim", "A beats B in", "--all", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "the 1 shipped records read by 'A beats B in Fig. 2'" in out and "1 equal, 0 differ" in out


def test_an_earlier_gzip_export_still_reads_and_a_new_export_replaces_it(shipped, tmp_path):
    """records/paper/ ships a gzip file from before the xz format: it reads line for line like the xz one; exporting
    the same notebook again writes the xz file and removes the gzip one, so no record is read twice."""
    path, root, _ = shipped
    digests = [ln.digest for ln in REC.read_lines([path])]
    old = path.with_name("00_toy.jsonl.gz")
    old.write_bytes(gzip.compress(lzma.open(path).read()))
    path.unlink()
    assert REC.shipped_files(path.parent) == [old]
    assert [ln.digest for ln in REC.read_lines([old])] == digests and len(digests) == 2
    REC.export(path.parent.parent / "executed", path.parent, root)
    assert REC.shipped_files(path.parent) == [path] and [ln.digest for ln in REC.read_lines([path])] == digests


def _log_only(executed, lines, experiment="main"):
    """A run log naming exactly ``lines`` (shipped lines whose records are cached) as computed for ``experiment``."""
    (executed / "runs").mkdir(parents=True)
    with open(executed / "runs" / "00_toy.jsonl", "w") as f:
        for ln in lines:
            profile, name = ln.path.split("/")
            method, key = name.rsplit(".", 1)[0].rsplit("-", 1)
            about = {"method": method, "key": key, "suffix": "json", "profile": profile, "seed": None, "kind": ln.kind}
            f.write(json.dumps({"event": "computed", **about, "experiment": experiment}) + "\n")


def test_a_merged_export_keeps_the_shipped_records_its_log_does_not_name_and_replaces_the_rest(shipped, tmp_path, capsys):
    """A sweep shipped in parts: each part's run log names only what it ran. ``--merge`` keeps the shipped lines of
    the other records (first, unchanged) and writes the logged ones from the cache (a changed record replaces its
    line, which keeps the experiments it named; a part of new records only is appended); without it the file holds
    the log's records only."""
    path, root, _ = shipped
    tuning, verdict = REC.read_lines([path])
    changed = json.loads((root / verdict.path).read_text())
    changed["evals"][-1]["test_acc"][0] += 1e-9
    (root / verdict.path).write_text(json.dumps(changed))
    part = tmp_path / "part"
    _log_only(part, [verdict], experiment="other")
    argv = ["records", "export", "--executed", str(part), "--out", str(path.parent), "--root", str(root), "--merge"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "2 records" in out and "(1 kept from the shipped file)" in out
    merged = list(REC.read_lines([path]))
    assert [(ln.path, ln.digest) for ln in merged] == [(tuning.path, tuning.digest), (verdict.path, REC.digest(changed))]
    assert merged[0].content == tuning.content and merged[1].content == changed
    assert [ln.experiments for ln in merged] == [("main",), ("main", "other")]
    summary = REC.export(part, path.parent, root)  # not merged: the log's records only
    assert (summary["00_toy"]["records"], summary["00_toy"]["kept"]) == (1, 0)
    assert [ln.path for ln in REC.read_lines([path])] == [verdict.path]
    # a part that only adds records is appended as one more xz stream: the shipped bytes stay, as a prefix
    before, added = path.read_bytes(), tmp_path / "added"
    _log_only(added, [tuning])
    summary = REC.export(added, path.parent, root, merge=True)
    assert (summary["00_toy"]["records"], summary["00_toy"]["kept"]) == (2, 1)
    assert path.read_bytes().startswith(before) and len(path.read_bytes()) > len(before)
    appended = list(REC.read_lines([path]))
    both = tmp_path / "both"
    _log_only(both, [verdict, tuning])
    REC.export(both, tmp_path / "whole", root)  # the same records in one stream
    same = lambda lines: [(ln.path, ln.digest, ln.content) for ln in lines]  # noqa: E731
    assert same(appended) == same(REC.read_lines([tmp_path / "whole" / "00_toy.jsonl.xz"]))
    assert [ln.path for ln in appended] == [verdict.path, tuning.path]


def test_a_paper_profile_record_ships_whole_above_the_inline_size(shipped, tmp_path, monkeypatch):
    """A paper-profile record (hours of compute) ships whole up to PAPER_INLINE_MAX; another profile's record above
    INLINE_MAX ships its digest only, and so does a paper-profile torch record (final states); an explicit
    ``inline_max`` applies to both."""
    path, root, _ = shipped
    smoke = next(REC.read_lines([path]))
    name = smoke.path.split("/")[1]
    paper = dataclasses.replace(smoke, path=f"paper/{name.rsplit('-', 1)[0]}-{'0' * 16}.json")  # another job, its key
    (root / paper.path).parent.mkdir(parents=True)
    (root / paper.path).write_bytes((root / smoke.path).read_bytes())
    executed = tmp_path / "both"
    _log_only(executed, [smoke, paper])
    size = (root / smoke.path).stat().st_size
    monkeypatch.setattr(REC, "INLINE_MAX", size - 1)
    monkeypatch.setattr(REC, "PAPER_INLINE_MAX", size)
    REC.export(executed, tmp_path / "out", root)
    lines = list(REC.read_lines([tmp_path / "out" / "00_toy.jsonl.xz"]))
    assert [(ln.path, ln.shipped) for ln in lines] == [(smoke.path, False), (paper.path, True)]
    assert lines[1].content == smoke.content
    REC.export(executed, tmp_path / "out", root, inline_max=size - 1)
    assert [ln.shipped for ln in REC.read_lines([tmp_path / "out" / "00_toy.jsonl.xz"])] == [False, False]
    # a paper-profile torch record (final model states) keeps the INLINE_MAX rule: above it, its digest only
    monkeypatch.setattr(REC, "PAPER_INLINE_MAX", 2**30)
    states = root / "paper" / f"fedavg-{'1' * 16}.final.pt"
    torch.save({"w": torch.zeros(size)}, states)
    event = {"event": "computed", "method": "fedavg", "key": "1" * 16, "suffix": "final.pt", "profile": "paper", "kind": "run"}
    (tmp_path / "states" / "runs").mkdir(parents=True)
    (tmp_path / "states" / "runs" / "00_toy.jsonl").write_text(json.dumps({**event, "seed": None, "experiment": "main"}) + "\n")
    REC.export(tmp_path / "states", tmp_path / "out", root)
    ((line),) = REC.read_lines([tmp_path / "out" / "00_toy.jsonl.xz"])
    assert (line.path, line.encoding, line.shipped) == (states.relative_to(root).as_posix(), REC.DIGEST_ONLY, False)
    monkeypatch.setattr(REC, "INLINE_MAX", states.stat().st_size)
    REC.export(tmp_path / "states", tmp_path / "out", root)
    assert next(REC.read_lines([tmp_path / "out" / "00_toy.jsonl.xz"])).encoding == "torch"  # at the limit: whole


def test_records_import_takes_its_files_after_the_options_too(shipped, tmp_path, capsys):
    """``pflnb records import --profile paper FILE`` (the order the guides write) imports FILE, as FILE before the
    options does; an unknown option after the files is still an error."""
    path, _, _ = shipped
    for order, fresh in (("after", tmp_path / "a"), ("before", tmp_path / "b")):
        argv = ["records", "import", "--profile", "paper", "--root", str(fresh)]
        argv = [*argv, str(path)] if order == "after" else [*argv[:2], str(path), *argv[2:]]
        assert main(argv) == 0, order
        assert "2 records written, 0 already cached" in capsys.readouterr().out, order
        assert len(list(fresh.rglob("*.json"))) == 2, order
    with pytest.raises(SystemExit):
        main(["records", "import", str(path), "--no-such-option"])
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["list", "stray"])
    assert main(["records", "export", "--profile", "cpu", "stray"]) == 2  # export reads no files: an error, not ignored
    assert "records export takes no files" in capsys.readouterr().err


def test_verify_reports_a_plain_run_whose_config_gives_another_key_than_its_file(shipped):
    """A shipped plain run whose file name's key its config no longer gives (another key scheme) differs, saying so,
    instead of being skipped."""
    path, _, _ = shipped
    line = next(iter(REC.read_lines([path])))
    line.path = line.path.rsplit("-", 1)[0] + "-0000000000000000.json"
    ((row),) = REC.verify([line], progress=False)
    assert row["status"] == "differs" and "not its file's 0000000000000000" in row["detail"]


def test_verify_recomputes_a_papers_own_job_by_the_job_that_computed_it(tmp_path, monkeypatch):
    """A record of a job beside a plain run (FedPG's P-model scores: the run's record with ``pm``) is rebuilt as that
    job and recomputed equal, not as the plain run (whose record lacks ``pm``); a record whose fields rebuild a job
    of another key than its file name is skipped, saying so."""
    from pflnb.papers.fedpg.experiments import PModelJob

    executed, root = tmp_path / "executed", tmp_path / "results"
    (executed / "runs").mkdir(parents=True)
    monkeypatch.setenv(RUN_LOG_ENV, str(executed / "runs" / "03_toy.jsonl"))
    cfg = profile_config("smoke", "digits5-lite", rounds=2, model="tiny-bn-cnn", method="fedavg-ft")
    job = PModelJob(cfg, cs=(0.0, 1.0))
    execute([job], Serial(), root=root, progress=False, kind="verdict", experiment="table1")
    monkeypatch.delenv(RUN_LOG_ENV)
    REC.export(executed, tmp_path / "records", root)
    (line,) = REC.read_lines([tmp_path / "records" / "03_toy.jsonl.xz"])
    assert line.path.startswith("smoke/pm-fedavg-ft-") and REC.rebuild(line.record()) == job
    assert REC.rebuild({**line.record(), "pm": {"cs": [0.5]}}) != job  # other scores: another job
    ((row),) = REC.verify([line], progress=False)
    assert (row["status"], row["detail"]) == ("equal", "")
    line.content = {**line.content, "pm": {**line.content["pm"], "cs": [0.5]}}  # its fields now name another job
    line.digest = REC.digest(line.content)
    ((row),) = REC.verify([line], progress=False)
    assert row["status"] == "skipped" and "not rebuilt from its record" in row["detail"]


def test_verify_recomputes_runs_under_a_registered_evaluation_protocol_and_skips_others(tmp_path, monkeypatch):
    """A run under FedPG's S-acc protocol is rebuilt with that protocol (its key names it) and recomputed equal; a run
    under a protocol no paper registers is skipped, naming the protocol."""
    from pflnb.experiments.jobs import EvalProtocol
    from pflnb.papers.fedpg.experiments import S_ACC, s_acc_test_splits

    executed, root = tmp_path / "executed", tmp_path / "results"
    (executed / "runs").mkdir(parents=True)
    monkeypatch.setenv(RUN_LOG_ENV, str(executed / "runs" / "03_toy.jsonl"))
    cfg = profile_config("smoke", "digits5-lite", rounds=2, model="tiny-bn-cnn", method="fedavg")
    unregistered = EvalProtocol("not-registered", s_acc_test_splits)
    jobs = [RunJob(cfg, protocol=S_ACC), RunJob(cfg.replace(seed=1), protocol=unregistered)]
    execute(jobs, Serial(), root=root, progress=False, kind="verdict", experiment="fig5")
    monkeypatch.delenv(RUN_LOG_ENV)
    REC.export(executed, tmp_path / "records", root)
    lines = sorted(REC.read_lines([tmp_path / "records" / "03_toy.jsonl.xz"]), key=lambda ln: ln.record()["config"]["seed"])
    assert [REC.rebuild(ln.record()) for ln in lines][0] == jobs[0]
    rows = REC.verify(lines, progress=False)
    assert [r["status"] for r in rows] == ["equal", "skipped"]
    assert "evaluation protocol 'not-registered'" in rows[1]["detail"]


def test_verify_recomputes_a_simulation_record_by_its_setting_method_and_seed(tmp_path, monkeypatch):
    """FedFac's simulation records carry no engine config: their setting, method and seed rebuild the job, and verify
    recomputes it equal (a wall-clock record, which no job rebuilds, is skipped)."""
    from pflnb.papers.fedfac.simstudy import SimJob, SimSetting

    executed, root = tmp_path / "executed", tmp_path / "results"
    (executed / "runs").mkdir(parents=True)
    monkeypatch.setenv(RUN_LOG_ENV, str(executed / "runs" / "05_toy.jsonl"))
    setting = SimSetting(n_clients=4, n_per_client=20, d=6, m=8, rounds=2, warm_epochs=1, participation=1.0)
    job = SimJob(setting, "dynamic", seed=3, threads=1)
    execute([job], Serial(), root=root, progress=False, kind="run", experiment="sim")
    monkeypatch.delenv(RUN_LOG_ENV)
    REC.export(executed, tmp_path / "records", root)
    (line,) = REC.read_lines([tmp_path / "records" / "05_toy.jsonl.xz"])
    assert REC.rebuild(line.record()) == job
    ((row),) = REC.verify([line], progress=False)
    assert (row["status"], row["detail"]) == ("equal", "")
    assert REC.rebuild({"times": [0.1], "setting": "x"}) is None
