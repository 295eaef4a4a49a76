"""The user guide (docs/guide/*.md): every code block runs as written, page by page.

The blocks of one page run in order, in one Python namespace and one temporary working directory
(shell blocks in the same directory), as a reader would run them. ``python`` blocks are executed,
``bash`` and ``console`` blocks are run by bash with the ``fdp`` command line on ``PATH``; the only
other fences are ``sh`` (installing and building: what .ci/run itself does) and ``text`` (output).

Pages that read a real dataset (they mention ``FDP_DATA_DIR``) are skipped, with the reason, when the
data directory is missing, unless ``FDP_REQUIRE_DATA=1``; pages that use Spark likewise unless
``FDP_REQUIRE_SPARK=1``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from docblocks import ROOT, cli, code_blocks, run_python, run_shell

GUIDE = ROOT / "docs" / "guide"
PAGES = sorted(GUIDE.glob("*.md"))
EXECUTED = {"python", "bash", "console"}
NOT_EXECUTED = {"sh", "text", "r"}  # r: run by the R package's tests (r/tests/testthat/test-docs.R)

# What a page leaves in its working directory: the tutorial's report folder, the CLI's release.
PRODUCES = {
    "tutorial.md": ["dti-report/report.md", "dti-report/release.json", "dti-report/curves.svg", "dti-report/ledger.json", "dti_mean.png"],
    "cli.md": ["dti-release/report.md", "dti-release/release.json", "dti-release/curves.svg", "ledger.json", "humidity/report.md"],
}


def data_dir() -> Path:
    """Where the real datasets are: ``FDP_DATA_DIR``, else ``../shared/data`` beside the clone (as
    ``fdp::data::data_dir`` reads them from the clone's root)."""
    explicit = os.environ.get("FDP_DATA_DIR")
    return Path(explicit) if explicit else ROOT.parent / "shared" / "data"


def test_the_guide_has_pages_and_only_known_fences() -> None:
    assert {p.name for p in PAGES} >= {"index.md", "installation.md", "tutorial.md", "cli.md", "spark.md", "ledger.md"}
    for page in PAGES:
        for block in code_blocks(page):
            assert block.language in EXECUTED | NOT_EXECUTED, f"{page.name}:{block.line}: fence ```{block.language}"


def test_the_readme_is_a_front_page_whose_links_resolve() -> None:
    """The README links into the guide, and every relative link of it names a file of the clone."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = [link for link in re.findall(r"\]\(([^)\s#]+)[^)]*\)", text) if "://" not in link]
    assert {f"docs/guide/{page}.md" for page in ("index", "installation", "tutorial", "cli", "spark")} <= set(links)
    for link in links:
        assert (ROOT / link).exists(), f"README.md links to {link}, which does not exist"


@pytest.mark.parametrize("page", [p for p in PAGES if any(b.language in EXECUTED for b in code_blocks(p))], ids=lambda p: p.name)
def test_every_block_of_the_page_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = page.read_text(encoding="utf-8")
    if "FDP_DATA_DIR" in text:
        directory = data_dir()
        if not directory.is_dir():
            message = f"{page.name} reads a real dataset and {directory} is not there (set FDP_DATA_DIR)"
            if os.environ.get("FDP_REQUIRE_DATA") == "1":
                pytest.fail(message + ", and FDP_REQUIRE_DATA=1")
            pytest.skip(message)
        monkeypatch.setenv("FDP_DATA_DIR", str(directory.resolve()))
    if "pyspark" in text and os.environ.get("FDP_REQUIRE_SPARK") != "1":
        for module in ("pyspark", "pyarrow"):
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"{page.name} uses Spark and {module} is not installed (pip install '.[spark]')")
    blocks = [b for b in code_blocks(page) if b.language in EXECUTED]
    if any(b.language != "python" for b in blocks) and cli() is None:
        pytest.skip(f"{page.name} runs the fdp command line, which is not built (cargo build -p fdp-cli) and FDP_CLI is not set")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # Spark's workers run this Python (with fdp)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for block in blocks:
        if block.language == "python":
            run_python(block, namespace, page)
        else:
            run_shell(block, tmp_path, page)
    for produced in PRODUCES.get(page.name, []):
        assert (tmp_path / produced).is_file(), f"{page.name} did not produce {produced}"
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
