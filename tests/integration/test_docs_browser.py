"""The documentation site as a reader sees it: built strictly, then loaded from disk in headless
Chromium (the landing page, a paper page and an API page), each with its content, every image
loaded (non-zero natural size) and no script error; screenshots are saved (to the folder named by
``PLAB_DOCS_SCREENSHOTS``, e.g. ``make docs-screenshots`` writes ``results/docs/``).

Skipped, with the reason, without mkdocs (``pip install -e '.[docs]'``) or Chromium (Debian:
``apt-get install chromium``; ``.ci/run`` installs both)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
BROWSER = os.environ.get("PLAB_CHROMIUM") or next(
    (b for b in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable") if shutil.which(b)), None)
try:
    import mkdocs  # noqa: F401
    import material  # noqa: F401
    import mkdocstrings  # noqa: F401
    HAVE_MKDOCS = True
except ImportError:
    HAVE_MKDOCS = False
pytestmark = [
    pytest.mark.skipif(not HAVE_MKDOCS, reason="mkdocs is not installed (pip install -e '.[docs]')"),
    pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (Debian: apt-get install chromium; "
                                               "or set PLAB_CHROMIUM to a Chromium executable)"),
]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--hide-scrollbars"]
CONSOLE = re.compile(r":CONSOLE(?:\(\d+\))?:|Uncaught ")
#: Appended to a copy of each page: after the load event, the images that did not load.
PROBE = ("<script>window.addEventListener('load', function () { var bad = [], imgs = document.images;"
         " for (var i = 0; i < imgs.length; i++) { if (!imgs[i].complete || imgs[i].naturalWidth === 0)"
         " bad.push(imgs[i].getAttribute('src')); }"
         " document.documentElement.setAttribute('data-images', String(imgs.length));"
         " document.documentElement.setAttribute('data-broken', bad.join(' ')); });</script>")


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.text, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self.skip -= tag in ("script", "style") and self.skip > 0

    def handle_data(self, data):
        if not self.skip:
            self.text.append(data)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return out


def render(page: Path, tmp: Path, shot: Path, at: str = "") -> tuple[str, str, int, list[str], list[str]]:
    """(the page's visible text, its HTML, its image count, the images that did not load, the
    console lines) after Chromium loaded it from disk; the screenshot goes to ``shot``, scrolled to
    the element whose id is ``at`` when given."""
    probe = page.with_name(page.stem + ".probe.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    common = [BROWSER, *FLAGS, f"--user-data-dir={tmp / 'profile'}", "--virtual-time-budget=5000"]
    try:
        p = subprocess.run(common + ["--enable-logging=stderr", "--v=0", "--dump-dom", probe.resolve().as_uri()],
                           capture_output=True, text=True, timeout=180)
    finally:
        probe.unlink()
    assert p.returncode == 0, p.stderr[-2000:]
    dom = p.stdout
    m = re.search(r'data-images="(\d+)"', dom)
    assert m, f"{page.name}: the load event never fired"
    broken = re.search(r'data-broken="([^"]*)"', dom).group(1).split()
    view = page
    if at:   # a copy showing the page's title, then the content from the element on
        view = page.with_name(page.stem + ".view.html")
        view.write_text(page.read_text(encoding="utf-8").replace(
            "</body>", f"<script>var n = document.getElementById('{at}').previousElementSibling;"
                       " while (n) {{ var p = n.previousElementSibling; if (n.tagName !== 'H1') n.remove(); n = p; }}"
                       "</script></body>"), encoding="utf-8")
    try:
        s = subprocess.run(common + [f"--screenshot={shot}", "--window-size=1280,1400", view.resolve().as_uri()],
                           capture_output=True, text=True, timeout=180)
    finally:
        if at:
            view.unlink()
    assert s.returncode == 0 and shot.is_file(), s.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as im:
        assert len(im.convert("L").getcolors(1 << 16) or range(2)) > 8, f"{shot.name}: a blank screenshot"
    t = _Text()
    t.feed(dom)
    text = re.sub(r"\s+", " ", " ".join(t.text))
    return text, dom, int(m.group(1)), broken, [ln for ln in p.stderr.splitlines() if CONSOLE.search(ln)]


def _shots(tmp_path: Path) -> Path:
    keep = os.environ.get("PLAB_DOCS_SCREENSHOTS")
    d = (ROOT / keep) if keep and not Path(keep).is_absolute() else Path(keep) if keep else tmp_path
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_landing_page(site, tmp_path):
    text, dom, n_img, broken, console = render(site / "index.html", tmp_path, _shots(tmp_path) / "docs_landing.png")
    assert console == [] and broken == []
    assert "Where the reproduction stands" in text and "The headline table" in text
    # the headline table is the committed run's: its random-rule row, cell by cell
    layout = pd.read_csv(ROOT / "results/fs1999/d4/fs1999_table1_d4.csv", dtype=str, keep_default_na=False)
    rand = layout[layout.iloc[:, 1] == "Rand unnorm"].iloc[0, 2:].tolist()
    assert all(cell in text for cell in rand), rand
    assert 'href="papers/fs1999.html"' in dom and 'href="api.html"' in dom


def test_paper_page(site, tmp_path):
    page = site / "papers" / "fs1999.html"
    text, dom, n_img, broken, console = render(page, tmp_path, _shots(tmp_path) / "docs_paper_fs1999.png")
    assert console == [] and broken == []
    assert n_img >= 1 and "fs1999_figure2.png" in dom
    for needed in ("Regenerating this page", "Protocol, assumptions and variants", "Freund & Schapire Table 1, d4",
                   "Freund & Schapire Table 3, d4", "within tolerance"):
        assert needed in text, needed
    assert dom.count('class="plab-grid"') >= 13 and 'class="st-within"' in dom
    # the grid shows the committed layout's cells (our mean at full precision, not re-rounded), the
    # mean ± std kept on one line by no-break spaces
    layout = pd.read_csv(ROOT / "results/fs1999/d4/fs1999_table1_d4.csv", dtype=str, keep_default_na=False)
    missing = [c for c in layout.iloc[:, 2:].values.ravel() if f">{c.replace(' ± ', '&nbsp;±&nbsp;')}<" not in dom]
    assert missing == [], missing
    render(page, tmp_path, _shots(tmp_path) / "docs_paper_fs1999_table1_d4.png", at="t-fs1999-table1-d4-d4")
    render(page, tmp_path, _shots(tmp_path) / "docs_paper_fs1999_figures.png", at="figures")


def test_paper_page_with_causes(site, tmp_path):
    """Khardon & Wachman: cells outside tolerance, each listed with its cause and evidence."""
    page = site / "papers" / "kw2007.html"
    text, dom, n_img, broken, console = render(page, tmp_path, _shots(tmp_path) / "docs_paper_kw2007_table7.png",
                                               at="t-kw2007-table7-table7-mnist")
    assert console == [] and broken == [] and n_img >= 1
    for needed in ("Outside tolerance", "paper-inconsistent", "Protocol, assumptions and variants", "Variant counts",
                   "table5_raw_units"):
        assert needed in text, needed
    assert 'id="t-kw2007-table7-table7-mnist"' in dom


def test_api_page(site, tmp_path):
    text, dom, n_img, broken, console = render(site / "api.html", tmp_path, _shots(tmp_path) / "docs_api.png")
    assert console == [] and broken == []
    for needed in ("VotedPerceptron", "MarginPerceptron", "ALMA", "Parameters", "partial_fit", "tau",
                   "load_user_data", "DatasetError"):
        assert needed in text, needed


def test_the_probe_finds_a_broken_image(tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<!doctype html><html><body><p>x</p><img src='missing.png'></body></html>")
    _, _, n_img, broken, _ = render(page, tmp_path, tmp_path / "p.png")
    assert n_img == 1 and broken == ["missing.png"]


#: Appended to a copy of a page: after the load event, how far each table's last column reaches past
#: the right edge of its box or of the window (0 or less: in view), as ``data-overflow="th: px; ..."``.
WIDTH_PROBE = ("<script>window.addEventListener('load', function () { var out = [];"
               " document.querySelectorAll('.md-typeset__scrollwrap, .plab-scroll').forEach(function (box) {"
               " var t = box.querySelector('table'); if (!t) return;"
               " var last = t.querySelector('tr').lastElementChild.getBoundingClientRect().right;"
               " var w = Math.round(last - Math.min(box.getBoundingClientRect().right, window.innerWidth));"
               " out.push(t.querySelector('th').textContent.trim() + ': ' + w); });"
               " document.documentElement.setAttribute('data-overflow', out.join('; ')); });</script>")


def _overflow(page: Path, tmp: Path, width: int = 1280) -> list[tuple[str, int]]:
    """(first header cell, pixels hidden to the right) of every table of ``page`` in a window
    ``width`` pixels wide (a laptop screen)."""
    probe = page.with_name(page.stem + ".width.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", WIDTH_PROBE + "</body>"), encoding="utf-8")
    try:
        p = subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={tmp / 'profile'}", "--virtual-time-budget=5000",
                            f"--window-size={width},900", "--dump-dom", probe.resolve().as_uri()],
                           capture_output=True, text=True, timeout=180)
    finally:
        probe.unlink()
    m = re.search(r'data-overflow="([^"]*)"', p.stdout)
    assert m, p.stderr[-2000:]
    return [(k, int(v)) for k, _, v in (x.rpartition(": ") for x in m.group(1).split("; ") if x)]


def test_wide_tables_fit_a_laptop_screen(site, tmp_path):
    """The landing page's headline table shows its T = 30 column, and Freund & Schapire's grids every
    column, in a window 1280 pixels wide, without scrolling sideways."""
    landing = dict(_overflow(site / "index.html", tmp_path))
    assert landing["d = 4, T ="] <= 0
    grids = _overflow(site / "papers" / "fs1999.html", tmp_path)
    assert len(grids) >= 13 and [g for g in grids if g[1] > 0] == []
    shots = _shots(tmp_path)
    render(site / "index.html", tmp_path, shots / "docs_landing_headline.png", at="the-headline-table")


def test_search_works_from_disk(site, tmp_path):
    """Opened from disk (file://), the site's search finds pages: the index is inlined
    (search/search_index.js) and the search worker runs through docs/javascripts/iframe-worker.js,
    with nothing fetched from the internet."""
    assert (site / "search" / "search_index.js").is_file()
    html = (site / "index.html").read_text()
    assert "unpkg.com" not in html and "iframe-worker.js" in html
    url = (site / "index.html").resolve().as_uri() + "?q=perceptron"
    common = [BROWSER, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=8000",
              "--window-size=1280,900"]
    p = subprocess.run(common + ["--enable-logging=stderr", "--v=0", "--dump-dom", url], capture_output=True,
                       text=True, timeout=180)
    m = re.search(r'class="md-search-result__meta">(\d+) matching document', p.stdout)
    assert m and int(m.group(1)) > 0, p.stdout[-2000:]
    assert p.stdout.count('class="md-search-result__item"') > 0
    assert [ln for ln in p.stderr.splitlines() if CONSOLE.search(ln)] == []
    shot = _shots(tmp_path) / "docs_search_offline.png"
    s = subprocess.run(common + [f"--screenshot={shot}", url], capture_output=True, text=True, timeout=180)
    assert s.returncode == 0 and shot.is_file()
