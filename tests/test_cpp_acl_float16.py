"""aclFloat16 in npusim's stand-in acl.h (npusim/cpp/include/acl/acl.h): CANN's acl_base.h
types it as the IEEE binary16 bits (uint16_t) with aclFloat16ToFloat / aclFloatToFloat16,
which the Matmul samples' host code uses to print half data. Checked against numpy's
float16 conversions (round to nearest, ties to even; overflow to inf; NaN stays NaN)."""
import subprocess
from pathlib import Path

import numpy as np
import pytest

from test_cpp import _compiler, needs_compiler

INCLUDE = Path(__file__).resolve().parents[1] / "npusim" / "cpp" / "include"
PROGRAM = r"""
#include "acl/acl.h"
#include <cstdio>
int main() {
    /* every half -> float -> half; then the floats on stdin -> half bits on stdout */
    static uint16_t back[65536];
    for (uint32_t h = 0; h < 65536; ++h) back[h] = aclFloatToFloat16(aclFloat16ToFloat(h));
    fwrite(back, 2, 65536, stdout);
    float v;
    while (fread(&v, 4, 1, stdin) == 1) { uint16_t b = aclFloatToFloat16(v); fwrite(&b, 2, 1, stdout); }
    return 0;
}
"""


@needs_compiler
def test_acl_float16_conversions_round_as_ieee_half(tmp_path):
    src, exe = tmp_path / "f16.cpp", tmp_path / "f16"
    src.write_text(PROGRAM)
    subprocess.run([_compiler(), "-std=c++17", "-O1", f"-I{INCLUDE}", str(src), "-o", str(exe)],
                   check=True)
    r = np.random.default_rng(7)
    floats = np.concatenate([
        r.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32),
        (r.standard_normal(200_000) * np.exp2(r.integers(-30, 18, 200_000))).astype(np.float32),
        np.array([65504, 65519.99, 65520, 1e9, 6.1e-5, 5.96e-8, 2.9802322e-08, 2.9802326e-08,
                  8.94e-8, 0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)])
    out = subprocess.run([str(exe)], input=floats.tobytes(), capture_output=True, check=True).stdout
    got = np.frombuffer(out, np.uint16)
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    nan_h = np.isnan(halves.view(np.float16))
    assert np.array_equal(got[:65536][~nan_h], halves[~nan_h])       # exact both ways
    assert np.isnan(got[:65536][nan_h].view(np.float16)).all()
    with np.errstate(all="ignore"):
        want = floats.astype(np.float16)
    conv = got[65536:].view(np.float16)
    nan = np.isnan(floats)
    assert np.array_equal(conv[~nan].view(np.uint16), want[~nan].view(np.uint16))
    assert np.isnan(conv[nan]).all()
