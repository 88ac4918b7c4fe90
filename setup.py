"""Build hook: the wheel ships the notebooks (notebooks/*.ipynb) as package data, pflnb/_notebooks/, for `pflnb notebooks
DIR`. Everything else about the package is in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithNotebooks(build_py):
    """build_py, then the notebooks copied into the built package (not in an editable install: it reads notebooks/)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "pflnb" / "_notebooks"
        self.mkpath(str(target))
        for nb in sorted((Path(__file__).parent / "notebooks").glob("*.ipynb")):
            self.copy_file(str(nb), str(target / nb.name))


setup(cmdclass={"build_py": BuildPyWithNotebooks})
