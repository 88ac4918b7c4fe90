"""Stable outputs: `pflnb check-outputs`, claims provenance, residual and ratio text, the final-line progress mode."""

from __future__ import annotations

import io
import subprocess

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from pflnb import progress
from pflnb.experiments import claims as C
from pflnb.experiments import outputs as O


def _png(pixels: np.ndarray, **info: str) -> bytes:
    buf = io.BytesIO()
    img = Image.fromarray(pixels.astype(np.uint8))
    from PIL.PngImagePlugin import PngInfo

    meta = PngInfo()
    for k, v in info.items():
        meta.add_text(k, v)
    img.save(buf, format="PNG", pnginfo=meta)
    return buf.getvalue()


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def _claims(path, verdict_value: float, code: str) -> None:
    a, b = {0: 0.8, 1: 0.82, 2: 0.81}, {0: 0.7, 1: 0.72, 2: 0.7 + verdict_value}
    C.write_claims([C.Claim("A beats B", "+5", C.compare(a, b), seeds=[0, 1, 2])], path, code=code)


@pytest.fixture
def repo(tmp_path):
    """A git repository with committed outputs: a PNG, a claims CSV, another CSV, a timing table and a README."""
    root = tmp_path / "repo"
    (root / "figures" / "p").mkdir(parents=True)
    img = np.zeros((6, 8, 3))
    img[2:4, 2:6] = 200
    (root / "figures" / "p" / "fig.png").write_bytes(_png(img, Software="a"))
    _claims(root / "figures" / "p" / "claims.csv", 0.01, "pflnb 0.1.0 @ aaaaaaaaaaaa")
    (root / "figures" / "p" / "table.csv").write_text("x,y\n1,2\n")
    (root / "figures" / "p" / "timing.csv").write_text("n,ms\n1,0.3\n")
    (root / "README.md").write_text(f"intro\n{C.LEDGER_START}\n| a | b |\n{C.LEDGER_END}\nrest\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "outputs")
    return root, img


def test_unchanged_outputs_pass_even_when_bytes_and_code_version_differ(repo):
    root, img = repo
    (root / "figures" / "p" / "fig.png").write_bytes(_png(img, Software="b"))  # same pixels, other metadata
    _claims(root / "figures" / "p" / "claims.csv", 0.01, "pflnb 0.1.0 @ bbbbbbbbbbbb (dirty)")  # other commit only
    (root / "figures" / "p" / "timing.csv").write_text("n,ms\n1,0.9\n")  # timing: listed, not counted
    readme = (root / "README.md").read_text().replace("rest", "other prose outside the ledger")
    (root / "README.md").write_text(readme)
    report = O.compare_outputs(root)
    assert report.ok, report.text()
    assert [d.path for d in report.timing] == ["figures/p/timing.csv"]
    assert report.unchanged == 4  # png, claims, table, README ledger


def test_every_kind_of_difference_is_listed(repo):
    root, img = repo
    img2 = img.copy()
    img2[0, 0] = 1  # one pixel
    (root / "figures" / "p" / "fig.png").write_bytes(_png(img2, Software="a"))
    _claims(root / "figures" / "p" / "claims.csv", 0.09, "pflnb 0.1.0 @ aaaaaaaaaaaa")  # a different number
    (root / "figures" / "p" / "table.csv").write_text("x,y\n1,2\n\n")  # bytes
    (root / "figures" / "p" / "new.png").write_bytes(_png(img))
    readme = (root / "README.md").read_text().replace("| a | b |", "| a | c |")
    (root / "README.md").write_text(readme)
    (root / "figures" / "p" / "timing.csv").unlink()
    report = O.compare_outputs(root)
    got = {(d.path, d.kind) for d in report.differences}
    assert got == {
        ("figures/p/fig.png", "changed"),
        ("figures/p/claims.csv", "changed"),
        ("figures/p/table.csv", "changed"),
        ("figures/p/new.png", "new"),
        ("README.md", "changed"),
    }
    assert [(d.path, d.kind) for d in report.timing] == [("figures/p/timing.csv", "missing")]
    assert not report.ok and "figures/p/fig.png" in report.text()
    (root / "figures" / "p" / "new.png").unlink()
    _git(root, "rm", "-q", "--cached", "figures/p/table.csv")  # still on disk, now untracked → new
    assert ("figures/p/table.csv", "changed") in {(d.path, d.kind) for d in O.compare_outputs(root).differences}


def test_cli_check_outputs_exit_status(repo, capsys):
    from pflnb import cli

    root, _ = repo
    assert cli.main(["check-outputs", "--root", str(root)]) == 0
    (root / "figures" / "p" / "table.csv").write_text("x,y\n9,9\n")
    assert cli.main(["check-outputs", "--root", str(root)]) == 1
    assert "changed  figures/p/table.csv" in capsys.readouterr().out


def test_code_version_names_the_commit_and_flags_a_dirty_tree(repo):
    root, _ = repo
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert C.code_version(root).endswith(f"@ {head[:12]}")
    (root / "figures" / "p" / "table.csv").write_text("changed output\n")  # outputs do not make the code dirty
    (root / "README.md").write_text("ledger rewritten\n")
    assert "dirty" not in C.code_version(root)
    (root / "code.py").write_text("x = 1\n")
    _git(root, "add", "code.py")
    assert C.code_version(root).endswith(f"@ {head[:12]} (dirty)")
    assert C.code_version(root.parent).endswith("@ commit unknown")  # not a git checkout


def test_claims_csv_records_its_code_and_the_ledger_shows_it(tmp_path):
    path = tmp_path / "lgmix" / "claims.csv"
    _claims(path, 0.01, "pflnb 9.9 @ 0123456789ab")
    raw = pd.read_csv(path)
    assert raw.columns[-1] == "code" and set(raw.code) == {"pflnb 9.9 @ 0123456789ab"}
    table, code = C.read_claims(path)
    assert list(table.columns) == C.COLUMNS and code == "pflnb 9.9 @ 0123456789ab"
    assert C.ledger(tmp_path).code.tolist() == [code]
    raw.drop(columns="code").to_csv(path, index=False)  # a CSV written before provenance
    assert C.read_claims(path)[1] == ""


@pytest.mark.parametrize(
    "r, tol, text",
    [
        (2.37e-16, 1e-10, "≤ 1e-15"),
        (2.38e-16, 1e-10, "≤ 1e-15"),
        (1.82e-17, 1e-10, "≤ 1e-15"),
        (3.4e-16, 1e-8, "≤ 1e-15"),
        (2e-13, 1e-10, "≤ 1e-12"),
        (5e-11, 1e-10, "≤ 1e-10"),  # the bound never exceeds the tolerance
        (0.0, 1e-10, "0"),
        (8.01e-3, 1e-10, "8.01e-03"),  # above tolerance: the real gap, three significant digits
        (3e-14, None, "≤ 1e-12"),
    ],
)
def test_residual_text_hides_rounding_noise(r, tol, text):
    assert C.residual_text(r, tol) == text


def test_identity_shows_the_bound_not_the_noise():
    assert C.identity(2.37e-16, 1e-10).ours == C.identity(2.38e-16, 1e-10).ours == "max |residual| ≤ 1e-15 (tolerance 1e-10)"
    out = C.identity(3e-3, 1e-10)
    assert out.verdict == C.CONTRADICTED and "= 3.00e-03" in out.ours


@pytest.mark.parametrize(
    "r, text", [(7834.0, "≥ 1,000×"), (1300.0, "≥ 1,000×"), (12.0, "≥ 10×"), (1.24, "≈ 1.0×"), (1.26, "≈ 1.5×")]
)
def test_ratio_text(r, text):
    assert C.ratio_text(r) == text


def test_write_timing_insists_on_a_timing_name(tmp_path):
    t = pd.DataFrame({"ms": [0.3]})
    C.write_timing(t, tmp_path / "timing.csv")
    assert O.is_timing("figures/x/timing.csv") and O.is_timing("figures/x/timing_table7.png")
    assert not O.is_timing("figures/x/table7.png")
    with pytest.raises(ValueError, match="timing"):
        C.write_timing(t, tmp_path / "cost.csv")


def test_final_mode_prints_one_line_per_bar(monkeypatch, capsys):
    monkeypatch.setenv(progress.MODE_ENV, "final")
    assert list(progress.tqdm(range(3), desc="runs")) == [0, 1, 2]
    with progress.tqdm(total=4, desc="runs (2 workers)") as bar:
        bar.update()
        bar.update(3)
        bar.set_postfix(method="fedavg")
    for _ in progress.tqdm(range(5), desc="fedavg", leave=False):  # the engine's per-run bar: silent
        pass
    for _ in progress.tqdm(range(5), desc="off", disable=True):
        pass
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("runs: 3/3 in ") and lines[1].startswith("runs (2 workers): 4/4 in ")
    assert "\r" not in "".join(lines)


def test_bars_mode_is_tqdm_and_bad_modes_fail(monkeypatch):
    monkeypatch.delenv(progress.MODE_ENV, raising=False)
    bar = progress.tqdm(range(2), desc="x")
    assert not isinstance(bar, progress.FinalLine)
    bar.close()
    monkeypatch.setenv(progress.MODE_ENV, "loud")
    with pytest.raises(ValueError, match="PFLNB_PROGRESS_MODE"):
        progress.tqdm(range(2))


def test_strip_plot_jitter_repeats_and_leaves_the_callers_generator_alone():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pflnb.papers.fedco2 import plots as P

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"model": np.repeat(["Fed-CO2", "online"], 30), "test_acc": rng.uniform(0.5, 1, 60)})

    def render() -> bytes:
        ax = P.component_boxes(df)
        buf = io.BytesIO()
        ax.figure.savefig(buf, format="png")
        plt.close(ax.figure)
        return buf.getvalue()

    np.random.seed(1)
    first = render()
    after = np.random.rand()
    np.random.seed(2)
    second = render()
    assert O.same_pixels(first, second)
    np.random.seed(1)
    assert np.random.rand() == after  # the jitter did not consume the caller's draws


def _wall_clock_claims(path, ratio: float, other: float = 0.09) -> None:
    a, b = {0: 0.8, 1: 0.82, 2: 0.81}, {0: 0.7, 1: 0.72, 2: 0.7 + other}
    timed = C.check(1.2 <= ratio <= 3.4, f"ratio {C.ratio_text(ratio)}", criterion="within 1.2–3.4×")
    C.write_claims(
        [
            C.Claim("A beats B", "+5", C.compare(a, b), seeds=[0, 1, 2]),
            C.Claim("A costs 1.2–3.4× B", "1.21–3.39×", timed, wall_clock=True),
        ],
        path,
        code="pflnb 0.1.0 @ aaaaaaaaaaaa",
    )


def test_wall_clock_claims_are_listed_like_timing_files_not_counted(repo):
    root, _ = repo
    path = root / "figures" / "lgmix" / "claims.csv"
    path.parent.mkdir()
    _wall_clock_claims(path, 2.0)
    (root / "README.md").write_text(f"intro\n{C.LEDGER_START}\n{C.readme_ledger_markdown(root / 'figures')}\n{C.LEDGER_END}\n")
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "wall-clock")
    _wall_clock_claims(path, 1.0)  # the timing moved the verdict: reproduced → contradicted
    (root / "README.md").write_text(f"intro\n{C.LEDGER_START}\n{C.readme_ledger_markdown(root / 'figures')}\n{C.LEDGER_END}\n")
    report = O.compare_outputs(root)
    assert report.ok, report.text()
    assert {(d.path, d.detail) for d in report.timing} == {
        ("figures/lgmix/claims.csv", "wall-clock claims"),
        ("README.md", "the claims ledger, by wall-clock claims only"),
    }
    _wall_clock_claims(path, 1.0, other=0.01)  # and an accuracy moved too: counted
    (root / "README.md").write_text(f"intro\n{C.LEDGER_START}\n{C.readme_ledger_markdown(root / 'figures')}\n{C.LEDGER_END}\n")
    report = O.compare_outputs(root)
    assert {d.path for d in report.differences} == {"figures/lgmix/claims.csv", "README.md"}


def test_outputs_made_under_other_kernels_are_named_once_not_listed(repo, monkeypatch):
    root, img = repo
    monkeypatch.setattr(C, "kernels_version", lambda: "native (AVX512)")
    _claims(root / "figures" / "p" / "claims.csv", 0.05, "pflnb 0.1.0 @ aaaaaaaaaaaa")  # regenerated elsewhere
    (root / "figures" / "p" / "table.csv").write_text("x,y\n1,3\n")
    report = O.compare_outputs(root)
    committed = C.read_kernels(
        io.BytesIO(
            subprocess.run(["git", "-C", str(root), "show", "HEAD:figures/p/claims.csv"], capture_output=True, check=True).stdout
        )
    )
    assert report.kernels == (committed, "native (AVX512)") and not report.ok
    text = report.text()
    assert f"made under CPU kernels {committed}, these under native (AVX512)" in text and "table.csv" not in text
    monkeypatch.setattr(C, "kernels_version", lambda: committed)
    _claims(root / "figures" / "p" / "claims.csv", 0.05, "pflnb 0.1.0 @ aaaaaaaaaaaa")
    assert O.compare_outputs(root).kernels is None  # same kernels: the differences are listed as usual
