"""What the README and docs/pyasc.md tell a user to install is what works: npusim comes
from its checkout (it is not on PyPI), and the pyasc extra does not pull torch, whose
default PyPI wheel is the CUDA build (several GB); torch for pyasc's tutorials is the CPU
build from PyTorch's index."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")      # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def test_the_pyasc_extra_installs_pyasc_without_torch():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    names = [re.split(r"[<>=;\[ ]", req, maxsplit=1)[0].lower() for req in extras["pyasc"]]
    assert "pyasc" in names and "torch" not in names


def test_docs_install_from_the_checkout_and_torch_from_the_cpu_index():
    for doc in ("README.md", "docs/pyasc.md"):
        text = (ROOT / doc).read_text()
        assert "npusim[" not in text, doc            # not on PyPI: `pip install '.[pyasc]'`
        assert "pip install '.[pyasc]'" in text, doc
        assert CPU_TORCH in text, doc
