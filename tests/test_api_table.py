"""docs/ascendc_api.md is generated from the live npusim.ascendc namespace
(npusim_tools/api_table.py): it is up to date, lists every exported name, and the dtypes it
claims for the element-wise vector instructions are the ones they run with."""
from pathlib import Path

import numpy as np
import pytest

import npusim.ascendc as asc
from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import TBuf, TPipe
from npusim.errors import DtypeError
from npusim_tools import api_table

DOC = Path(__file__).resolve().parents[1] / "docs" / "ascendc_api.md"
ROWS = {r["name"]: r for r in api_table.rows()}
NP = {"half": np.float16, "float": np.float32, "int16": np.int16, "int32": np.int32}


def test_the_table_is_up_to_date():
    assert DOC.read_text() == api_table.render(), \
        "docs/ascendc_api.md is stale: run python -m npusim_tools.api_table"


def test_the_command_checks_without_writing_and_takes_options_as_options(tmp_path, capsys):
    stale = tmp_path / "api.md"
    stale.write_text("old")
    assert api_table.main(["--check", str(stale)]) == 1          # out of date, left as is
    assert stale.read_text() == "old"
    assert api_table.main([str(stale)]) == 0                     # written
    assert api_table.main(["--check", str(stale)]) == 0
    assert stale.read_text() == api_table.render()
    with pytest.raises(SystemExit) as e:                          # an option, not a path
        api_table.main(["--help"])
    assert e.value.code == 0 and not Path("--help").exists()


def test_every_exported_name_has_a_row_and_every_function_a_family():
    text = DOC.read_text()
    for name in asc.__all__:
        assert f"| `{name}` |" in text, name
    loose = [r["name"] for r in ROWS.values()
             if r["kind"] == "function" and r["family"].startswith("Types")]
    assert loose == [], f"functions with no family in npusim_tools/api_table.py: {loose}"


def _runs(op, dtype, unary) -> bool:
    def kernel():
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 3 * 256)
        a = buf.Get(dtype)
        n = 256 // np.dtype(dtype).itemsize
        asc.Duplicate(a, dtype(1), 3 * n) if np.dtype(dtype).itemsize in (2, 4) else None
        if unary:
            op(a[n], a, n)
        else:
            op(a[2 * n], a, a[n], n)
    soc = get_soc("Ascend910B1")
    try:
        run_kernel(kernel, 1, (), soc=soc, gm=GlobalMemory(soc.memory_size))
    except DtypeError:
        return False
    return True


@pytest.mark.parametrize("name,unary", [("Add", False), ("Sub", False), ("Mul", False),
                                        ("Max", False), ("Min", False), ("Div", False),
                                        ("Sqrt", True), ("Exp", True), ("Ln", True),
                                        ("Abs", True), ("Reciprocal", True), ("Relu", True)])
def test_the_claimed_dtypes_are_the_ones_that_run(name, unary):
    claimed = {d.strip() for d in ROWS[name]["dtypes"].split(",")}
    for dname, dt in NP.items():
        assert _runs(getattr(asc, name), dt, unary) == (dname in claimed), (name, dname)
