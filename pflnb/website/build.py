"""Staging the site's sources and running Sphinx (:func:`stage`, :func:`build`), which executed notebooks it shows
(:func:`choose_executed`), and the docstring filter that keeps the API pages' reStructuredText valid."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from pflnb.experiments import claims as C
from pflnb.website.notebooks import (
    GENERATED,
    ROOT,
    SITE_DIR,
    add_banner,
    clean_notebook,
    notebook_banner,
    notebook_sources,
    paper_notebooks,
)
from pflnb.website.pages import build_markdown, counts_markdown, ledger_markdown, methods_markdown, paper_claims_markdown

# ------------------------------------------------------------------------------------- docstrings for the API pages

# spans reStructuredText must keep as they are: ``literals``, :roles:`targets`, `interpreted text` and `links`_
_RST_KEEP = re.compile(r"``.+?``|:[\w:+.-]+:`[^`]+`|`[^`]+`_{0,2}")
_RST_REF_END = re.compile(r"(?<=\w)_(?=$|[^\w])")  # 'word_' is a reference to the target 'word' in rST
_RST_SINGLE_STAR = re.compile(r"(?<!\*)\*(?!\*)")


def _rst_safe_text(text: str) -> str:
    text = text.replace("|", "\\|")  # |x| is a substitution in rST, a norm or an absolute value in our docstrings
    text = _RST_REF_END.sub("\\\\_", text)
    if len(_RST_SINGLE_STAR.findall(text)) % 2:  # an unpaired '*' (as in f(*args)) is not emphasis
        text = _RST_SINGLE_STAR.sub("\\\\*", text)
    return text


def rst_safe(line: str) -> str:
    """A docstring line of plain prose made safe for reStructuredText: characters that rST would read as markup but
    the docstrings mean literally ('|x|', 'F5_', an unpaired '*') are escaped outside literals and roles."""
    bullet = re.match(r"\s*[*+-] ", line)  # a list item's bullet is markup the docstring means
    head, line = (line[: bullet.end()], line[bullet.end() :]) if bullet else ("", line)
    out, last = [head], 0
    for m in _RST_KEEP.finditer(line):
        out += [_rst_safe_text(line[last : m.start()]), m.group(0)]
        last = m.end()
    return "".join(out) + _rst_safe_text(line[last:])


def rst_safe_docstring(app: object, what: str, name: str, obj: object, options: object, lines: list[str]) -> None:
    """Sphinx ``autodoc-process-docstring`` hook: :func:`rst_safe` on every line, in place (the API reference)."""
    lines[:] = [rst_safe(line) for line in lines]


# --------------------------------------------------------------------------------------------------- stage, build


def executed_complete(folder: Path, root: Path | None = None) -> list[str]:
    """The notebooks of ``notebooks/`` that ``folder`` has no executed copy of (empty: complete)."""
    root = ROOT if root is None else root
    return [p.name for p in notebook_sources(root) if not (folder / p.name).exists()]


def executed_stale(folder: Path, root: Path | None = None) -> list[str]:
    """The notebooks whose executed copy in ``folder`` is older than the notebook itself."""
    root = ROOT if root is None else root
    return [
        p.name
        for p in notebook_sources(root)
        if (folder / p.name).exists() and (folder / p.name).stat().st_mtime < p.stat().st_mtime
    ]


def mathjax_dir() -> Path | None:
    """MathJax 2's files, shipped by the ``jupyter-server-mathjax`` package (None when it is not installed)."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        return None
    path = Path(jupyter_server_mathjax.__file__).parent / "static"
    return path if (path / "MathJax.js").exists() else None


def stage(
    out: Path, executed: Path, profile: str, figures: Path | None = None, docs: Path | None = None, root: Path | None = None
) -> Path:
    """Assemble the site's sources in ``out`` (emptied first): ``docs/``, the cleaned executed notebooks with their
    banners, the generated pages and the figures; return ``out``."""
    root = ROOT if root is None else root
    docs = docs or root / "docs"
    figures = figures or C.figures_root()
    missing = executed_complete(executed, root)
    if missing:
        raise FileNotFoundError(f"{executed} has no executed {', '.join(missing)}; run `pflnb reproduce --profile {profile}`")
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(docs, out, ignore=shutil.ignore_patterns("_build", "__pycache__", GENERATED))
    papers = {v: k for k, v in paper_notebooks(root).items()}
    (out / "notebooks").mkdir(exist_ok=True)
    for src in notebook_sources(root):
        nb = clean_notebook(json.loads((executed / src.name).read_text()), root)
        nb = add_banner(nb, notebook_banner(profile, src.stem, papers.get(src.stem)))
        (out / "notebooks" / src.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False))
    gen = out / GENERATED
    gen.mkdir()
    for key, stem in paper_notebooks(root).items():
        (gen / f"{key}.md").write_text(paper_claims_markdown(key, figures, notebook=stem))
    (gen / "ledger.md").write_text(ledger_markdown(figures))
    (gen / "counts.md").write_text(counts_markdown(figures))
    (gen / "methods.md").write_text(methods_markdown())
    (gen / "build.md").write_text(build_markdown(profile, executed, figures, root))
    for png in sorted(figures.glob("*/*.png")):
        dest = out / "figures" / png.parent.name / png.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(png, dest)
    mj = mathjax_dir()
    if mj is None:  # without it the pages would fetch MathJax from the network
        raise FileNotFoundError("the site serves its own MathJax: install jupyter-server-mathjax (pinned; `make env`)")
    shutil.copytree(mj, out / "_static" / "mathjax", ignore=shutil.ignore_patterns("localization"))
    return out


def execute(profile: str, root: Path | None = None) -> Path:
    """Execute every notebook at ``profile`` with ``pflnb reproduce`` (a subprocess) into ``executed/<profile>/``."""
    root = ROOT if root is None else root
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    cmd = [sys.executable, "-m", "pflnb.cli", "reproduce", "--profile", profile, "--quiet"]
    subprocess.run(cmd, check=True, env=env, cwd=root)
    return root / "executed" / profile


def newest_reproduction(profile: str, root: Path | None = None) -> Path:
    """Of ``executed/<profile>/`` (``make reproduce-all``) and ``executed/<profile>-main/`` (``make reproduce``, the main
    scope), the complete one whose notebooks were executed last (the full one when neither is complete)."""
    root = ROOT if root is None else root
    full, main = root / "executed" / profile, root / "executed" / f"{profile}-main"
    complete = [f for f in (full, main) if not executed_complete(f, root)]
    newest = lambda f: max((f / p.name).stat().st_mtime for p in notebook_sources(root))  # noqa: E731
    return max(complete, key=newest) if complete else full


def choose_executed(profile: str, executed: Path | None = None, root: Path | None = None, run: bool = True) -> tuple[str, Path]:
    """The (profile, folder) of executed notebooks to publish: ``executed``, or the last complete reproduction of
    ``profile`` (:func:`newest_reproduction`: after ``make reproduce`` its main scope, after ``make reproduce-all`` the
    full one); otherwise ``executed/smoke/``, executed first (when ``run``) if a notebook is missing there or older
    than its source."""
    root = ROOT if root is None else root
    folder = Path(executed) if executed is not None else newest_reproduction(profile, root)
    missing = executed_complete(folder, root)
    if not missing:
        stale = executed_stale(folder, root)
        if stale:
            renew = "`make reproduce-all` renews them"
            print(f"[pflnb] note: {', '.join(stale)} in {folder} are older than their notebooks; {renew}")
        return profile, folder
    if executed is not None:
        raise FileNotFoundError(f"{folder} lacks executed notebooks: {', '.join(missing)}")
    smoke = root / "executed" / "smoke"
    if profile != "smoke":
        make = f"`make reproduce-all PROFILE={profile}` makes it"
        print(f"[pflnb] no complete executed/{profile}/ ({make}): using the smoke profile")
    if executed_complete(smoke, root) or executed_stale(smoke, root):
        if not run:
            raise FileNotFoundError(f"{smoke} is incomplete or stale, and executing the notebooks was not allowed")
        print("[pflnb] executing every notebook at the smoke profile into executed/smoke/ (a few minutes)", flush=True)
        execute("smoke", root)
    return "smoke", smoke


def build(
    out: Path | None = None,
    profile: str = "cpu",
    executed: Path | None = None,
    figures: Path | None = None,
    root: Path | None = None,
    quiet: bool = False,
) -> Path:
    """Build the site: choose the executed notebooks (:func:`choose_executed`), stage the sources into
    ``<out>/src`` and run sphinx-build into ``<out>/html``; return the path of ``index.html``."""
    root = ROOT if root is None else root
    out = Path(out) if out is not None else root / SITE_DIR
    profile, folder = choose_executed(profile, executed, root)
    if figures is None and (folder / "figures").is_dir():  # the main scope keeps its claims beside its notebooks
        figures = folder / "figures"
        print(f"[pflnb] the site shows {folder.name}/ with its own claims and figures ({figures})")
    src = stage(out / "src", folder, profile, figures=figures, root=root)
    html_dir = out / "html"
    if html_dir.exists():
        shutil.rmtree(html_dir)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-j", "1", "-w", str(out / "warnings.log"), str(src), str(html_dir)]
    if quiet:
        cmd.insert(3, "-q")
    subprocess.run(cmd, check=True, env=env, cwd=root)
    return html_dir / "index.html"
