"""The HTML report in a real headless browser (Chromium): every page loads with no console message,
every table-of-contents and cross-page link resolves to an element that exists, and every image
file exists. Skipped, with the reason, when no Chromium is installed (Debian: ``apt-get install
chromium``; ``.ci/run`` installs it when it runs as root)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from perceptron_lab.report.tables import write_report

ROOT = Path(__file__).resolve().parents[2]
BROWSER = os.environ.get("PLAB_CHROMIUM") or next(
    (b for b in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable") if shutil.which(b)), None)
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (Debian: apt-get install chromium; "
                                                           "or set PLAB_CHROMIUM to a Chromium executable)")
CONSOLE = re.compile(r":CONSOLE(?:\(\d+\))?:|Uncaught ")


class _Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links, self.images, self.duplicate_ids = set(), [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            if a["id"] in self.ids:
                self.duplicate_ids.append(a["id"])
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "img" and a.get("src"):
            self.images.append(a["src"])


def load(page: Path, tmp: Path) -> tuple[_Dom, list[str]]:
    """The DOM Chromium built for ``page`` after loading it, and the console lines it logged."""
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--enable-logging=stderr",
           "--v=0", f"--user-data-dir={tmp / 'profile'}", "--virtual-time-budget=3000", "--dump-dom",
           page.resolve().as_uri()]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    dom = _Dom()
    dom.feed(p.stdout)
    assert dom.ids or dom.links, f"{page}: Chromium returned an empty document"
    return dom, [line for line in p.stderr.splitlines() if CONSOLE.search(line)]


def check_pages(index: Path, tmp: Path) -> list[str]:
    """Every problem found on the landing page and the pages it links: console messages, links to
    a missing page or anchor, images that are not there."""
    problems, doms, todo = [], {}, [index.resolve()]
    while todo:
        page = todo.pop()
        if page in doms:
            continue
        dom, console = load(page, tmp)
        doms[page] = dom
        problems += [f"{page.name}: console: {line}" for line in console]
        problems += [f"{page.name}: two elements with id {i}" for i in dom.duplicate_ids]
        for href in dom.links:
            u = urlsplit(href)
            if u.scheme or not u.path or not u.path.endswith(".html"):
                continue
            target = (page.parent / unquote(u.path)).resolve()
            if not target.is_file():
                problems.append(f"{page.name}: link to a missing page {href}")
            elif target not in doms:
                todo.append(target)
        problems += [f"{page.name}: missing image {src}" for src in dom.images
                     if not src.startswith("data:") and not (page.parent / unquote(src)).is_file()]
    for page, dom in doms.items():
        for href in dom.links:
            u = urlsplit(href)
            if u.scheme or not u.fragment:
                continue
            target = (page.parent / unquote(u.path)).resolve() if u.path else page
            if target in doms and u.fragment not in doms[target].ids:
                problems.append(f"{page.name}: link {href} names no element")
    return problems


@needs_browser
def test_report_pages_load_cleanly_and_links_resolve(tmp_path):
    """The report of the committed results (it reads the comparison CSVs; nothing is rerun)."""
    _, index = write_report([ROOT / "results"], tmp_path / "report")
    pages = sorted(p.name for p in index.parent.glob("*.html"))
    assert "index.html" in pages and {"fs1999.html", "kw2007.html", "gentile2001.html"} <= set(pages)
    assert check_pages(index, tmp_path) == []
    # the table of contents of each paper page lists its tables, and each entry resolved above
    dom, _ = load(index.parent / "fs1999.html", tmp_path)
    toc = [h for h in dom.links if h.startswith("#t-")]
    assert len(toc) >= 13 and all(h[1:] in dom.ids for h in toc)


@needs_browser
def test_the_check_finds_broken_pages(tmp_path):
    """The checks can fail: a script error, a dangling anchor, a missing page and a missing image."""
    (tmp_path / "index.html").write_text(
        "<!doctype html><html><body><a href='#nowhere'>x</a><a href='other.html#a'>y</a>"
        "<a href='gone.html'>z</a><img src='no.png'><p id='d'></p><p id='d'></p>"
        "<script>undefinedFunction();</script></body></html>")
    (tmp_path / "other.html").write_text("<!doctype html><html><body><p id='b'>b</p></body></html>")
    problems = "\n".join(check_pages(tmp_path / "index.html", tmp_path))
    assert "undefinedFunction" in problems
    assert "#nowhere names no element" in problems and "other.html#a names no element" in problems
    assert "missing page gone.html" in problems and "missing image no.png" in problems
    assert "two elements with id d" in problems
