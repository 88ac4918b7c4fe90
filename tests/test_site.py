"""The site as a reader sees it (``make site``).

The module builds the site once, from the notebooks executed at the smoke profile (``executed/smoke/``, executed first
when a notebook is missing there or older than its source), into ``_site/test/html``. Static checks read every built
page: each internal link and image resolves, no page shows a traceback, an error cell, progress-bar residue or a path
of the build machine, and the pages come in reading order. Then headless Chromium (Debian's ``chromium`` and
``chromium-driver``, installed by ``make browser``) opens the home page, a paper page, the ledger and a notebook:
they render, their images load, their math is typeset, their verdicts are coloured, and search works; screenshots are saved in
``_site/test/screenshots/`` for a reviewer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from pflnb import website as W
from pflnb.experiments import claims as C

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / W.SITE_DIR / "test"
SHOTS = OUT / "screenshots"
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
# what must never reach a page: tracebacks, error cells, docutils error messages, progress-bar residue, ANSI colours
FORBIDDEN = {
    "a traceback": re.compile(r"Traceback \(most recent call last\)"),
    "an error output cell": re.compile(r'class="[^"]*\b(traceback|output error|stderr error)\b'),
    "a docutils error message": re.compile(r'class="[^"]*\b(system-message|problematic)\b'),
    "a widget's text stand-in": re.compile(r"HBox\(children|FloatProgress\(|IProgress not found"),
    "a progress bar": re.compile(r"\|[█▉▊▋▌▍▎▏]{3,}|[█▉▊▋▌▍▎▏]{3,}\s*\||\d+it/s\]"),
    "an ANSI colour code": re.compile(r"\x1b\[|\[0;3\dm"),
}

# TeX left in a page's text: math that MyST did not parse (MathJax typesets only what it parsed)
RAW_TEX = re.compile(r"\\(lambda|mathrm|mathbf|mathcal|frac|sum|Delta|eta|sigma|leftarrow|top|cdot|nabla|theta|gamma|alpha|mu)\b")
_NOT_TEXT = re.compile(
    r'<(script|style|pre|code)\b.*?</\1>|<span class="math[^"]*">.*?</span>|<div class="math[^"]*">.*?</div>', re.S
)

pytestmark = pytest.mark.site  # one build at a time: make unit keeps this file on one xdist worker (conftest)


class _Page(HTMLParser):
    """The ids, the links (tag, attribute, value) and the `rel=next` link of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str, str]] = []
        self.next: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for attr in ("href", "src"):
            if a.get(attr) is not None and tag in ("a", "link", "script", "img", "source", "iframe"):
                self.links.append((tag, attr, a[attr]))
        if tag == "link" and a.get("rel") == "next":
            self.next = a.get("href")


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def site() -> Path:
    """The built site's html folder (the smoke profile's notebooks, the committed figures/ and claims)."""
    with pytest.MonkeyPatch.context() as mp:
        # the notebooks' runs go to the results cache that `make notebooks` (nbmake, run after this) reads, as a
        # `pflnb reproduce --profile smoke` would: executing them here makes that step load them instead of training
        mp.delenv("PFLNB_RESULTS", raising=False)
        index = W.build(out=OUT, profile="smoke", quiet=True)
    assert index.exists()
    return index.parent


def _html_pages(site: Path) -> list[Path]:
    """Every page of the site (not the theme's template fragments under _static/)."""
    return [p for p in sorted(site.rglob("*.html")) if p.relative_to(site).parts[0] != "_static"]


@pytest.fixture(scope="module")
def pages(site: Path) -> dict[str, _Page]:
    return {p.relative_to(site).as_posix(): _parse(p) for p in _html_pages(site)}


def test_every_page_of_the_book_is_built(site):
    expected = {"index.html", "ledger.html", "api/index.html", "api/engine.html", "api/registry.html", "api/claims.html"}
    expected |= {f"papers/{k}.html" for k in C.PAPERS}
    expected |= {f"notebooks/{p.stem}.html" for p in W.notebook_sources()}
    expected |= {f"guides/{p.stem}.html" for p in (ROOT / "docs" / "guides").glob("*.md")}
    missing = sorted(p for p in expected if not (site / p).exists())
    assert not missing, f"pages not built: {missing}"
    assert (site / "_static" / "mathjax" / "MathJax.js").exists(), "MathJax must be served by the site itself (offline)"
    assert not (OUT / "warnings.log").read_text().strip(), "sphinx warnings:\n" + (OUT / "warnings.log").read_text()


def test_every_internal_link_and_image_resolves_and_nothing_comes_from_the_network(site, pages):
    broken, remote = [], []
    for name, page in pages.items():
        here = (site / name).parent
        for tag, attr, value in page.links:
            url = urlsplit(value)
            if url.scheme in ("http", "https"):
                if tag != "a":
                    remote.append(f"{name}: <{tag} {attr}={value}>")
                continue
            if url.scheme in ("mailto", "javascript", "data") or value in ("", "#"):
                continue
            target = (here / unquote(url.path)).resolve() if url.path else site / name
            if not target.exists():
                broken.append(f"{name}: {value}")
                continue
            if url.fragment and target.suffix == ".html":
                key = target.relative_to(site.resolve()).as_posix()
                if url.fragment not in pages[key].ids:
                    broken.append(f"{name}: {value} (no id {url.fragment!r} there)")
    assert not broken, f"{len(broken)} broken links or images:\n" + "\n".join(broken[:40])
    assert not remote, "the site must work offline; these load from the network:\n" + "\n".join(remote)


def test_no_page_shows_a_traceback_an_error_cell_progress_residue_or_a_machine_path(site):
    found = []
    for path in _html_pages(site):
        text = path.read_text(encoding="utf-8")
        source_listing = path.relative_to(site).parts[0] == "_modules"  # pflnb's code (this test's patterns are in it)
        for what, pattern in FORBIDDEN.items():
            if not source_listing and pattern.search(text):
                found.append(f"{path.relative_to(site)}: {what}: {pattern.search(text).group(0)!r}")
        if str(ROOT) in text:
            found.append(f"{path.relative_to(site)}: the build machine's path {ROOT}")
    assert not found, "\n".join(found)


def test_all_math_is_parsed(site):
    """Every formula of the notebooks and pages reached MathJax: no TeX is left in the text outside math."""
    found = []
    for path in _html_pages(site):
        if path.relative_to(site).parts[0] == "_modules":
            continue
        text = _NOT_TEXT.sub("", path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(site)}: ...{text[max(0, m.start() - 60) : m.end()]}" for m in RAW_TEX.finditer(text)]
    assert not found, "TeX outside math:\n" + "\n".join(found[:20])


def test_pages_read_top_to_bottom(pages):
    """Following 'next' from the home page: the quickstart, then each paper's claims page followed by its notebook,
    then the ledger and the baselines."""
    chain, name = [], "index.html"
    while name and len(chain) < 16:
        chain.append(name)
        nxt = pages[name].next
        name = os.path.normpath(os.path.join(os.path.dirname(name), nxt)).replace(os.sep, "/") if nxt else None
    papers = [x for k, stem in W.paper_notebooks().items() for x in (f"papers/{k}.html", f"notebooks/{stem}.html")]
    assert chain[: 2 + len(papers) + 2] == [
        "index.html",
        "notebooks/00_quickstart.html",
        *papers,
        "ledger.html",
        "notebooks/06_baselines.html",
    ]


def test_paper_pages_and_ledger_show_the_claims_csvs(site):
    for key in C.PAPERS:
        table, _ = C.read_claims(ROOT / "figures" / key / "claims.csv")
        text = (site / "papers" / f"{key}.html").read_text(encoding="utf-8")
        assert text.count(f'<tr id="claim-{key}-') == len(table)
        for png in (ROOT / "figures" / key).glob("*.png"):
            assert png.name in text, f"papers/{key}.html lacks the figure {png.name}"
        assert f"notebooks/{W.paper_notebooks()[key]}.html" in text
    ledger = (site / "ledger.html").read_text(encoding="utf-8")
    counts = C.ledger_counts(C.ledger())
    total = ledger.split('class="pflnb-total"')[1].split("</tr>")[0]
    assert f"<b>{int(counts['total'].sum())}</b>" in total
    # every row: the papers' claims (counted) and our checks (their own tables, not counted), then apart the claims
    # decided at the papers' own settings (claims-paper.csv)
    setting = len(re.findall(r'<tr id="claim-[a-z0-9]+-paper-', ledger))
    assert setting == len(C.paper_setting_claims())
    assert ledger.count('<tr id="claim-') - setting == int(counts["total"].sum() + counts[C.OUR_CHECKS].sum())


def test_notebook_pages_show_their_figures_inline(site):
    for src in W.notebook_sources():
        nb = json.loads((ROOT / "executed" / "smoke" / src.name).read_text())
        n_png = sum("image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", []))
        text = (site / "notebooks" / f"{src.stem}.html").read_text(encoding="utf-8")
        assert len(re.findall(r'<img [^>]*src="\.\./_images/', text)) >= n_png > 0, src.name
        assert "Executed notebook" in text and "<strong>smoke</strong> profile" in text


def test_executed_notebooks_show_no_warning_text(site):
    """ipywidgets is installed with the set-up, so tqdm.auto draws widget bars and says nothing on stderr; any other
    warning in a notebook's outputs is a defect too."""
    found = {}
    for src in W.notebook_sources():
        lines = W.warning_lines(json.loads((ROOT / "executed" / "smoke" / src.name).read_text()))
        if lines:
            found[src.name] = lines
    assert not found, f"warning text in executed notebooks: {found}"


# ------------------------------------------------------------------------------------------------ in the browser


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium driven through ChromeDriver (Debian's packages), with a fresh profile folder."""
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        pytest.skip(f"needs {CHROMIUM} and {CHROMEDRIVER} (Debian packages chromium, chromium-driver: `make browser`)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pinned in requirements.txt)")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="pflnb-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _open(driver, path: Path, math: bool = False) -> None:
    driver.get(path.as_uri())
    deadline = time.time() + 30
    while time.time() < deadline:
        done = driver.execute_script(
            "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"
            + (" && document.querySelectorAll('.MathJax, .MathJax_Display').length > 0" if math else "")
        )
        if done:
            return
        time.sleep(0.2)
    raise AssertionError(f"{path.name} did not finish loading (images{' or math' if math else ''}) in 30 s")


def _screenshot(driver, name: str) -> list[Path]:
    """The top of the page (1400 × 1000) and the whole page (up to 12,000 px high) as PNGs in _site/test/screenshots."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    top = SHOTS / f"{name}.png"
    driver.set_window_size(1400, 1000)
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(top))
    height = driver.execute_script("return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    full = SHOTS / f"{name}-full.png"
    driver.set_window_size(1400, min(int(height) + 100, 12000))
    time.sleep(0.3)
    driver.save_screenshot(str(full))
    driver.set_window_size(1400, 1000)
    return [top, full]


def _check_rendered(driver, site: Path, name: str) -> str:
    """Checks common to every opened page; returns its visible text."""
    title = driver.execute_script("const h = document.querySelector('main h1, article h1'); return h ? h.innerText : ''")
    assert title.strip(), f"{name}: no visible heading"
    bad_images = driver.execute_script(
        "return Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
    )
    assert not bad_images, f"{name}: images that did not load: {bad_images}"
    hrefs = driver.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    missing = [h for h in hrefs if h.startswith("file://") and not Path(unquote(urlsplit(h).path)).exists()]
    assert not missing, f"{name}: links to missing files: {missing}"
    text = driver.execute_script("return document.body.innerText")
    for what, pattern in FORBIDDEN.items():
        assert not pattern.search(text), f"{name} shows {what}"
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    # MathJax probes font support with a font at about:blank, which a file:// page may not load: that is not the site's
    signs = ("Failed to load", "net::ERR", "Uncaught", "CORS")
    failed = [m for m in errors if any(w in m for w in signs) and "about:blank" not in m]
    assert not failed, f"{name}: the browser reported {failed}"
    return text


def test_home_paper_page_ledger_notebook_and_search_work_in_chromium(site, browser):
    shots = []
    _open(browser, site / "index.html")
    text = _check_rendered(browser, site, "index")
    assert "Results at a glance" in text and "all papers" in text
    shots += _screenshot(browser, "index")

    _open(browser, site / "papers" / "lgmix.html", math=True)
    text = _check_rendered(browser, site, "papers/lgmix")
    table, _ = C.read_claims(ROOT / "figures" / "lgmix" / "claims.csv")
    rows = browser.execute_script("return document.querySelectorAll('table.pflnb-claims tbody tr').length")
    assert rows == len(table)
    colours = browser.execute_script(
        "const c = s => { const e = document.querySelector(s); return e ? getComputedStyle(e).backgroundColor : null; };"
        "return [c('.pflnb-v-reproduced'), c('.pflnb-v-contradicted'), c('.pflnb-v-inconclusive')]"
    )
    assert None not in colours and len(set(colours)) == 3 and "rgba(0, 0, 0, 0)" not in colours, colours
    assert re.search(r"\[[+\-−]?\d", text), "the intervals are shown"
    shots += _screenshot(browser, "paper-lgmix")

    _open(browser, site / "ledger.html")
    text = _check_rendered(browser, site, "ledger")
    for name in C.PAPERS.values():
        assert name in text
    shots += _screenshot(browser, "ledger")

    _open(browser, site / "notebooks" / "01_lgmix.html", math=True)
    _check_rendered(browser, site, "notebooks/01_lgmix")
    figures = browser.execute_script("return document.querySelectorAll('.cell_output img').length")
    assert figures > 0, "the notebook's figures are shown inline"
    shots += _screenshot(browser, "notebook-01_lgmix")

    # search works from the files too (the index is a script the page loads): a method name finds pages
    browser.get((site / "search.html").as_uri() + "?q=FedBN")
    deadline, found = time.time() + 30, 0
    while time.time() < deadline and not found:
        time.sleep(0.5)
        found = browser.execute_script("return document.querySelectorAll('#search-results li, ul.search li').length")
    assert found > 0, "searching the site for FedBN found nothing"

    for shot in shots:
        assert shot.stat().st_size > 10_000, f"{shot} looks empty"
