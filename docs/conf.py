"""Sphinx configuration of the pflnb site (``make site``; sources are staged by :mod:`pflnb.website`)."""

import pflnb

project = "pflnb"
author = "the pflnb authors"
copyright = "the pflnb authors"  # noqa: A001  (no year: the build is the same whenever it runs)
version = release = pflnb.__version__

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.mathjax", "sphinx.ext.viewcode"]
root_doc = "index"
exclude_patterns = ["_build", "_generated", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]

# MyST: $math$ in notebooks and pages, ::: fences, heading anchors for links to sections
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_dmath_double_inline = True  # notebooks write $$...$$ inside paragraphs, as Jupyter allows
suppress_warnings = ["myst.header"]  # notebooks start at "##" after their title in places

# MyST-NB: render the executed notebooks as they are (never re-executed), streams merged
nb_execution_mode = "off"
nb_merge_streams = True
nb_output_stderr = "show"

# autodoc: the API reference comes from the docstrings of pflnb
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_mock_imports = ["ray"]

# Offline MathJax 2, copied into _static/mathjax by the staging step (pflnb.website.stage); STIX web fonts are the ones
# shipped. The pages never load anything from the network.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
mathjax2_config = {
    # MyST marks the page body tex2jax_ignore and the math it parsed with the class "math": typeset only that,
    # and notebook outputs
    "tex2jax": {
        "inlineMath": [["\\(", "\\)"]],
        "displayMath": [["\\[", "\\]"]],
        "processEscapes": True,
        "ignoreClass": "tex2jax_ignore|mathjax_ignore|document",
        "processClass": "tex2jax_process|mathjax_process|math|output_area",
    },
    "HTML-CSS": {"availableFonts": [], "preferredFont": None, "webFont": "STIX-Web", "imageFont": None},
    "showMathMenu": False,
    "messageStyle": "none",
}

html_theme = "sphinx_book_theme"
html_title = "pflnb: personalized federated learning, reproduced"
html_static_path = ["_static"]
html_css_files = ["pflnb.css"]
html_last_updated_fmt = None
html_show_sphinx = False
html_show_copyright = False
html_copy_source = True
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "use_source_button": False,
    "navigation_with_keys": False,
}


def setup(app):
    """Docstrings are plain prose with ``literals`` and :func:`roles`: escape what reStructuredText would misread."""
    from pflnb.website import rst_safe_docstring

    app.connect("autodoc-process-docstring", rst_safe_docstring)
