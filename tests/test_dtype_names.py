"""The data type names of npusim.ascendc: both spellings, the table in docs/kernels.md, and
the builtins that ``from npusim.ascendc import *`` must leave alone."""
from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import npusim.ascendc as ascendc
from npusim.errors import DtypeError

ROOT = Path(__file__).resolve().parents[1]

# typed in from Ascend C's type list and numpy's names: (C++, numpy, numpy type, bytes)
EXPECTED = [("half", "float16", np.float16, 2), ("float", "float32", np.float32, 4),
            ("bfloat16_t", "bfloat16", ml_dtypes.bfloat16, 2), ("int8_t", "int8", np.int8, 1),
            ("uint8_t", "uint8", np.uint8, 1), ("int16_t", "int16", np.int16, 2),
            ("uint16_t", "uint16", np.uint16, 2), ("int32_t", "int32", np.int32, 4),
            ("uint32_t", "uint32", np.uint32, 4), ("int64_t", "int64", np.int64, 8),
            ("uint64_t", "uint64", np.uint64, 8), ("bool", "bool_", np.bool_, 1)]
BUILTINS = {"float", "bool"}


@pytest.mark.parametrize("cpp,npname,nptype,nbytes", EXPECTED, ids=[e[1] for e in EXPECTED])
def test_both_spellings_are_exported_and_equal(cpp, npname, nptype, nbytes):
    star: dict = {}
    exec("from npusim.ascendc import *", star)
    assert star[npname] == np.dtype(nptype) and star[npname].itemsize == nbytes
    if cpp in BUILTINS:
        assert cpp not in star               # Python's float / bool stay the builtins
    else:
        assert star[cpp] == star[npname]


def test_star_import_leaves_python_builtins_alone():
    star: dict = {}
    exec("from npusim.ascendc import *\nr = (float('1.5'), bool(0), int(2.7))", star)
    assert star["r"] == (1.5, False, 2)


def test_docs_table_lists_every_type_with_its_bytes():
    text = (ROOT / "docs" / "kernels.md").read_text()
    rows = re.findall(r"^\| `(\w+)`[^|]*\| `(\w+)` \| (\d+) \|$", text, flags=re.M)
    assert rows == [(c, n, str(b)) for c, n, _, b in EXPECTED]
    assert list(ascendc.types.DTYPE_NAMES) == [(c, n) for c, n, _, _ in EXPECTED]


def test_python_float_as_a_tensor_type_is_a_dtype_error():
    with pytest.raises(DtypeError, match=r"GlobalTensor.*float32"):
        ascendc.GlobalTensor(float)
    assert ascendc.GlobalTensor(ascendc.float32).dtype == np.float32
