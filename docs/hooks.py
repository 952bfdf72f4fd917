"""mkdocs hook: the figures under results/ become files of the site, at the same relative path, and
the repository's CHANGELOG.md becomes its page changelog.md.

Pages in docs/ link a figure as ``results/<...>.png`` (relative to docs/), so a figure is shown
from the file ``make reproduce`` wrote, never from a copy that could go stale.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]


def _figures():
    res = ROOT / "results"
    for p in sorted(res.rglob("*.png")):
        parts = p.relative_to(res).parts
        if "parts" in parts or "golden" in parts or parts[0] == "report" or parts[0] == "docs":
            continue
        # the papers' figures, the budget study's, the benchmarks' and compare's calibration
        if "_figure" in p.name or parts[0] in ("budget", "bench", "compare"):
            yield p


def on_files(files, config):
    # the changelog is kept in one file, CHANGELOG.md at the repository's root (where packaging tools
    # and readers of the sdist look); the site shows it as changelog.md
    files.append(File.generated(config, "changelog.md", abs_src_path=str(ROOT / "CHANGELOG.md")))
    for p in _figures():
        files.append(File(p.relative_to(ROOT).as_posix(), src_dir=str(ROOT), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files
