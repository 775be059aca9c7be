"""docs/tutorial.md and docs/kernels.md cannot drift: each code block stands, line for
line, in the example it names, and every example they name is run by the test suite
(tensor_views.py and row_softmax_kernel.py here)."""
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from aclnn_helpers import load_example, run_example

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = (ROOT / "docs" / "tutorial.md").read_text()
_BLOCK = r"<!-- from (\S+) -->\n```python\n(.*?)\n```"
BLOCKS = re.findall(_BLOCK, TUTORIAL, flags=re.S)
KERNEL_BLOCKS = re.findall(_BLOCK, (ROOT / "docs" / "kernels.md").read_text(), flags=re.S)


def _contains(source: str, block: str) -> bool:
    lines, want = source.split("\n"), block.split("\n")
    for i in range(len(lines) - len(want) + 1):
        if textwrap.dedent("\n".join(lines[i:i + len(want)])) == block:
            return True
    return False


def test_the_tutorial_has_blocks_from_several_examples():
    assert len(BLOCKS) >= 8
    assert {path for path, _ in BLOCKS} >= {"examples/apply_fused_ema_adam_sample.py",
                                            "examples/tensor_views.py",
                                            "examples/train_next_word.py"}


@pytest.mark.parametrize("path,block", BLOCKS + KERNEL_BLOCKS,
                         ids=[f"{p}:{i}" for i, (p, _) in enumerate(BLOCKS + KERNEL_BLOCKS)])
def test_each_block_stands_in_its_example(path, block):
    assert _contains((ROOT / path).read_text(), block), f"block not found in {path}"


def test_tensor_views_example(capsys):
    result = run_example("tensor_views")
    np.testing.assert_array_equal(result, np.arange(8, dtype=np.float32).reshape(2, 4).T + 1)
    out = capsys.readouterr().out
    assert "transposed contiguous? False" in out and "Task Duration" in out and "bound:" in out


def test_row_softmax_kernel_example():
    """The level-0 row softmax of docs/kernels.md: right to float32 rounding, and it runs
    as one instruction per step for the whole tile (repeatTime = rows)."""
    assert KERNEL_BLOCKS
    module = load_example("row_softmax_kernel")
    y, err, profile = module.main(blocks=2, rows_per_block=16)
    assert err < 1e-6 and y.shape == (32, 64)
    # a small launch: the scalar unit's kernel entry can be its largest pipe time
    assert profile.bound in ("vector", "latency", "scalar")
