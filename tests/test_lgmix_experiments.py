"""LG-Mix experiment configs: every profile validates, the paper profile's loader path runs on files in the
exact FedBN layout, and the tidy tables (λ, layer distances) hold their invariants."""

import numpy as np
import pytest
import torch

from pflnb.data import build_federated, fake
from pflnb.experiments import run
from pflnb.experiments.paper import run_experiment
from pflnb.models import build_model
from pflnb.papers.lgmix import experiments as LX
from pflnb.papers.lgmix.paper import PAPER


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv("PFLNB_DATA", raising=False)
    return tmp_path


def test_every_profile_and_method_validates():
    for profile in ("smoke", "cpu"):
        for experiment in PAPER.experiments:
            for _, cfg in experiment.runs(profile, seeds=[0]):
                expected = "digits-shift" if experiment.name == "table2" else "digits5-lite"
                assert cfg.dataset == expected and tuple(cfg.fractions) == (0.6, 0.2, 0.2)
                cfg.validate()
    table1 = PAPER.experiment("table1")
    paper = table1.base("paper", "digits5")
    assert (paper.model, paper.batch_size, paper.lr, paper.rounds, paper.drop_last) == ("digit", 128, 0.01, 100, True)
    fedrep = {
        p: [c for lab, c in table1.runs(p, [0], "digits5" if p == "paper" else None) if lab["label"] == "FedRep"]
        for p in ("cpu", "paper")
    }
    assert fedrep["paper"][0].method_params == {}  # registered default at paper scale
    assert fedrep["cpu"][0].method_params == {"personal_epochs": 2}
    scal = PAPER.experiment("scalability").runs("cpu", seeds=[0])
    assert [(lab["label"], c.num_clients) for lab, c in scal][:3] == [("FedAvg", 5), ("FedAvg", 10), ("FedAvg", 15)]


def test_table2_is_the_harder_shift_analogue():
    from pflnb.papers.lgmix.paper import FIELDS, METHODS, SEEDS, TUNE

    table2 = PAPER.experiment("table2")
    assert [a.label for a in table2.arms] == ["Local", "FedAvg", "FedBN", "FedAlt", "LG-Mix"]
    assert all(any(a is m for m in METHODS) for a in table2.arms)  # Table 1's arm objects
    assert table2.seeds is SEEDS and table2.tune is TUNE
    cpu, table1_cpu = table2.base("cpu"), PAPER.experiment("table1").base("cpu")
    assert (cpu.dataset, cpu.num_clients, cpu.partition, cpu.image_size) == ("digits-shift", 8, "by-domain", 16)
    assert (cpu.model, cpu.rounds, cpu.batch_size, cpu.eval_every) == (table1_cpu.model, 16, 32, 2)
    assert table2.base("smoke").image_size == FIELDS["smoke"]["image_size"]
    paper = table2.base("paper")
    assert (paper.dataset, paper.num_clients, paper.model, paper.rounds) == ("domainnet10", 6, "resnet18", 100)
    assert table2.base("paper", "office-caltech10").rounds == 200
    texts = [c.claim for c in PAPER.claims]
    assert texts[-2:] == [
        "LG-Mix has the best mean accuracy on digits-shift, the Office-Caltech10/DomainNet analogue (Tables 1–2)",
        "LG-Mix beats FedAvg on digits-shift, the Office-Caltech10/DomainNet analogue (Tables 1–2)",
    ]
    coverage = {item.item: item for item in PAPER.coverage}
    # every digits5-lite experiment stands for Digits5: the paper's own setting at the paper profile
    for e in PAPER.experiments:
        if e.dataset == "digits5-lite" and e.name != "t6b":
            assert e.base("paper").dataset == "digits5" and e.base("paper").batch_size == 128, e.name
    assert coverage["Table 2"].status == "partly" and "digits-shift" in coverage["Table 2"].reason
    assert "digits-shift" in coverage["Table 1"].reason


@pytest.mark.parametrize(
    ("dataset", "names", "shape"),
    [
        ("digits5", ["mnist", "svhn", "usps", "synth", "mnistm"], (3, 28, 28)),
        ("office-caltech10", ["amazon", "caltech", "dslr", "webcam"], (3, 256, 256)),
        ("domainnet10", ["clipart", "infograph", "painting", "quickdraw", "real", "sketch"], (3, 256, 256)),
    ],
)
def test_paper_profile_loader_path(results, dataset, names, shape):
    """The paper configs load FedBN-layout files (written by the tests) and their models take the batches."""
    root = results / "data"
    if dataset == "digits5":
        fake.write_fedbn_digits5(root, n_per_part=12, n_test=4)
    else:
        fake.write_fedbn_sites(root, "office" if dataset == "office-caltech10" else "domainnet", n_train=6, n_test=3)
    cfg = PAPER.experiment("table1").base("paper", dataset, data_root=str(root), method="lgmix", min_samples=3)
    cfg.validate()
    data = build_federated(cfg.data_spec(), seed=0)
    assert [c.name for c in data.clients] == names and data.input_shape == shape
    model = build_model(cfg.model, data.input_shape, data.num_classes).eval()
    with torch.no_grad():
        h = model.features(data.clients[0].train.x[:2])
    assert h.shape == (2, model.feat_dim) and (h >= 0).all()
    if dataset == "digits5":  # one LG-Mix round through the engine on these files (a cheap model)
        rec = run(cfg.replace(rounds=1, model="small-bn-cnn"), progress=False)
        assert all(0 < v < 1 for v in rec["rounds"][0]["internals"]["lambda_raw"])


def test_tables_on_a_smoke_run(results):
    table1 = run_experiment(PAPER, "table1", "smoke", progress=False)
    records = table1.labelled("LG-Mix") + table1.labelled("APFL")
    lam = LX.lambda_table(records)
    assert set(lam.label) == {"LG-Mix", "APFL"} and len(lam) == 2 * 2 * 5
    lg = lam[lam.label == "LG-Mix"]
    assert np.all((lg.lambda_raw > 0) & (lg.lambda_raw < 1))
    assert list(table1.table.label) == [arm.label for arm in PAPER.experiment("table1").arms]
    cur = LX.curves(records)
    assert set(cur.columns) >= {"train_loss", "val_loss", "val_acc"} and cur.train_loss.notna().all()
    lgmix_cfg = PAPER.experiment("table1").base("smoke", method="lgmix", seed=0)
    assert records[0]["key"] == lgmix_cfg.key()
    (final,) = LX.final_states([lgmix_cfg])
    (again,) = LX.final_states([lgmix_cfg])  # loaded from the cache
    assert len(final["clients"]) == 5 and again["server"].keys() == final["server"].keys()
    dist = LX.layer_distances(final["clients"], final["server"], records[0]["clients"])
    assert (dist.distance >= 0).all() and set(dist.kind) == {"parameters", "BN statistics"}
    zero = LX.layer_distances([final["server"]], final["server"], ["u"])
    assert np.allclose(zero.distance, 0.0)
    feats = LX.feature_values(lgmix_cfg, final["clients"])
    assert (feats.value >= 0).all() and feats.client.nunique() == 5
