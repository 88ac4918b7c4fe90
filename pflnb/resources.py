"""The notebooks of the package, wherever it is installed: notebooks/ of a checkout, or the copies a wheel ships
(``pflnb/_notebooks/``); :func:`copy_notebooks` backs ``pflnb notebooks DIR``."""

from __future__ import annotations

import shutil
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def notebooks_folder() -> Path:
    """Where this installation's notebooks are: the checkout's notebooks/ (an editable install) or the wheel's copies."""
    checkout = PACKAGE.parent / "notebooks"
    if (PACKAGE.parent / "pyproject.toml").exists() and checkout.is_dir():
        return checkout
    shipped = PACKAGE / "_notebooks"
    if shipped.is_dir():
        return shipped
    raise FileNotFoundError(f"no notebooks in this installation of pflnb ({PACKAGE}): neither a checkout nor a wheel")


def notebook_files() -> list[Path]:
    """The notebooks (00_quickstart, one per paper, the baselines), in order."""
    return sorted(notebooks_folder().glob("*.ipynb"))


def copy_notebooks(dest: str | Path, force: bool = False) -> list[Path]:
    """Copy every notebook into folder ``dest`` (created if missing) and return the copies; an existing notebook there
    is kept unless ``force`` (FileExistsError naming them)."""
    dest = Path(dest).expanduser()
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(f"{dest} exists and is not a folder")
    sources = notebook_files()
    clashes = [dest / nb.name for nb in sources if (dest / nb.name).exists()]
    if clashes and not force:
        names = ", ".join(c.name for c in clashes)
        raise FileExistsError(f"{dest} already has {names}; use --force to replace them")
    dest.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copyfile(nb, dest / nb.name)) for nb in sources]
