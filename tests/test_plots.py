import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pflnb import plots  # noqa: E402


def test_save_writes_png_and_pdf_without_timestamps(tmp_path):
    blobs = []
    for _ in range(2):
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3])
        path = plots.save(fig, "line", tmp_path)
        plt.close(fig)
        blobs.append((path.read_bytes(), (tmp_path / "line.pdf").read_bytes()))
    assert path == tmp_path / "line.png"
    assert blobs[0] == blobs[1]  # same figure, same bytes: re-running a notebook does not churn figures/
    assert b"CreationDate" not in blobs[0][1]
