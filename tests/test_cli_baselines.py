"""Every baseline runs through the command line on digits5-lite and on Fashion-MNIST Dirichlet(0.3)."""

import json

import pytest

from pflnb.cli import main
from pflnb.data import DataUnavailable, load_source
from pflnb.experiments.baselines import BASELINES

SETTINGS = {
    "digits5-lite": ["--dataset", "digits5-lite"],
    "fmnist-dir0.3": ["--dataset", "fmnist", "--set", "alpha=0.3", "rounds=1"],
}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("method", BASELINES)
def test_cli_smoke_run(method, setting, tmp_path, monkeypatch, capsys):
    if setting.startswith("fmnist"):
        try:
            load_source("fmnist")
        except DataUnavailable:
            pytest.skip("Fashion-MNIST not installed (make data installs it)")
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    args = ["run", "--method", method, "--profile", "smoke", "--quiet", *SETTINGS[setting]]
    if "--set" not in args:
        args += ["--set", "rounds=1"]
    assert main(args) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert method in out and "±" in out
    (record,) = [json.loads(p.read_text()) for p in tmp_path.rglob("*.json")]
    assert record["config"]["method"] == method and len(record["evals"]) == 1
    if setting.startswith("fmnist"):
        assert record["config"]["alpha"] == 0.3 and record["config"]["partition"] == "dirichlet"
    acc = record["summary"]["test_acc"]
    assert 0.0 <= acc <= 1.0
