"""The code blocks of the project's Markdown (README.md, docs/guide/*.md), and how the tests run them.

One reader for every document whose code is executed by the tests: ``code_blocks`` returns the
fenced blocks of a page in order, ``run_python`` executes a Python block in a namespace the page's
blocks share, and ``run_shell`` runs a ``bash`` (or ``console``, prompts stripped) block in the page's
working directory with the ``fdp`` command line and this interpreter first on ``PATH``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# A fence opens with ``` and a language word (anything after it on the line, e.g. MyST options, is
# ignored) and closes with ``` alone on a line.
_FENCE = re.compile(r"^```([A-Za-z][\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, its text, and the line of the page it starts on."""

    language: str
    code: str
    line: int


def code_blocks(path: Path, *languages: str) -> list[Block]:
    """The fenced code blocks of ``path`` in order (only those in ``languages`` if any are given)."""
    text = path.read_text(encoding="utf-8")
    blocks = [Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in _FENCE.finditer(text)]
    return [b for b in blocks if not languages or b.language in languages]


def run_python(block: Block, namespace: dict[str, Any], page: Path) -> None:
    """Executes a Python block in ``namespace`` (shared by the blocks of one page); a traceback names
    the page and the block's first line."""
    exec(compile(block.code, f"{page.name}:{block.line}", "exec"), namespace)


def cli() -> Path | None:
    """The ``fdp`` command line: ``FDP_CLI``, else the newest build in this checkout (a stale release
    build must not answer for the current code), else ``fdp`` on PATH."""
    explicit = os.environ.get("FDP_CLI")
    if explicit:
        return Path(explicit)
    builds = [ROOT / "target" / profile / "fdp" for profile in ("release", "debug")]
    built = [b for b in builds if b.exists()]
    if built:
        return max(built, key=lambda b: b.stat().st_mtime)
    found = shutil.which("fdp")
    return Path(found) if found else None


def shell_commands(block: Block) -> str:
    """The commands of a ``bash`` block as written, or of a ``console`` block (its ``$ `` lines,
    prompts stripped; the other lines are output)."""
    if block.language != "console":
        return block.code
    return "\n".join(line[2:] for line in block.code.splitlines() if line.startswith("$ "))


def run_shell(block: Block, cwd: Path, page: Path, env: dict[str, str] | None = None) -> str:
    """Runs a shell block with ``bash -euo pipefail`` in ``cwd``, with the ``fdp`` command line (see
    :func:`cli`) and this Python first on ``PATH``; returns its output, fails the test on a non-zero
    exit with the block's output."""
    binary = cli()
    path = [str(Path(sys.executable).parent)] + ([str(binary.resolve().parent)] if binary else [])
    environment = {**os.environ, **(env or {}), "PATH": os.pathsep.join(path + [os.environ.get("PATH", "")])}
    if binary is not None and binary.name != "fdp":  # the blocks call it by its name
        raise AssertionError(f"FDP_CLI={binary} must name a binary called fdp")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", shell_commands(block)],
        cwd=cwd, env=environment, capture_output=True, text=True, timeout=600,
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise AssertionError(f"{page.name}:{block.line}: the block exited with {done.returncode}:\n{block.code}\n--- output ---\n{output}")
    return output
