"""The reproductions' website (``make site``): executed notebooks, the claims ledger, the guides and the API reference.

The site is a static HTML book built by Sphinx with MyST-NB from ``docs/`` (the hand-written pages and guides) and
from what the code produced, staged into one source folder (``_site/src``, git-ignored) by :func:`stage`:

* the executed notebooks of a profile (``executed/<profile>/``, written by ``pflnb reproduce``), rendered without
  re-execution after :func:`clean_notebook` has removed progress-bar residue and the build machine's paths, each with
  a banner naming the profile it ran at (:func:`notebook_banner`);
* generated Markdown (``_generated/``): per paper its claims table and its figures next to the claims they support
  (:func:`paper_claims_markdown`), the ledger across the five papers (:func:`ledger_markdown`), the count table
  (:func:`counts_markdown`) and the registry's methods (:func:`methods_markdown`). Claims are read only through
  :func:`pflnb.experiments.claims.read_claims` from ``figures/<paper>/claims.csv``, the source of ``pflnb claims``;
* the figures (PNG) of ``figures/`` and an offline MathJax (from the ``jupyter-server-mathjax`` package).

:func:`build` stages and runs ``sphinx-build``; nothing in the built site needs a server or the network. The package
gathers the names of its three modules: :mod:`~pflnb.website.notebooks`, :mod:`~pflnb.website.pages` and
:mod:`~pflnb.website.build`.
"""

from pflnb.website.build import (
    build,
    choose_executed,
    execute,
    executed_complete,
    executed_stale,
    mathjax_dir,
    newest_reproduction,
    rst_safe,
    rst_safe_docstring,
    stage,
)
from pflnb.website.notebooks import (
    _WIDGET,
    GENERATED,
    PROFILE_NOTES,
    ROOT,
    SITE_DIR,
    VERDICT_CLASS,
    add_banner,
    clean_notebook,
    collapse_redraws,
    notebook_banner,
    notebook_key,
    notebook_sources,
    paper_notebooks,
    warning_lines,
)
from pflnb.website.pages import (
    FigureClaims,
    build_markdown,
    claims_html,
    counts_html,
    counts_markdown,
    coverage_markdown,
    figures_for_claims,
    file_refs,
    ledger_markdown,
    methods_markdown,
    moves_markdown,
    paper_claims_markdown,
    refs_match,
    robustness_markdown,
    text_refs,
    tuning_edges_markdown,
)

__all__ = [
    "_WIDGET",
    "GENERATED",
    "PROFILE_NOTES",
    "ROOT",
    "SITE_DIR",
    "VERDICT_CLASS",
    "add_banner",
    "build",
    "build_markdown",
    "choose_executed",
    "claims_html",
    "clean_notebook",
    "collapse_redraws",
    "counts_html",
    "counts_markdown",
    "coverage_markdown",
    "execute",
    "executed_complete",
    "executed_stale",
    "FigureClaims",
    "figures_for_claims",
    "file_refs",
    "ledger_markdown",
    "mathjax_dir",
    "methods_markdown",
    "moves_markdown",
    "newest_reproduction",
    "notebook_banner",
    "notebook_key",
    "notebook_sources",
    "paper_claims_markdown",
    "paper_notebooks",
    "refs_match",
    "robustness_markdown",
    "rst_safe",
    "rst_safe_docstring",
    "stage",
    "text_refs",
    "tuning_edges_markdown",
    "warning_lines",
]
