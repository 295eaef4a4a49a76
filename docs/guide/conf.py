"""Sphinx configuration of the fdp user guide (Markdown pages read by MyST-Parser).

Build: ``python -m sphinx -W --keep-going -b html docs/guide docs/guide/_build/html``. With ``-W``
every warning is an error, including a link to a page or a heading anchor that does not exist
(MyST resolves each internal link at build time), so the build is the internal link check. The code
blocks are executed by ``python/tests/test_guide.py``, not here.
"""

project = "fdp user guide"
author = "the fdp authors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "requirements.txt"]
# Heading anchors for links such as [the band](reading.md#the-band), checked at build time.
myst_heading_anchors = 3
html_theme = "alabaster"
html_static_path: list[str] = []
# No math extension: the pages write e^ε in plain text, so the HTML needs no MathJax from a CDN.
