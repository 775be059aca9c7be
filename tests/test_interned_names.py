"""npusim keeps numpy's ``__array_interface__`` key names interned (npusim.interned_names):
without that, every ``as_strided`` call leaves a dead entry in CPython's interned-strings
table, which a long run ends up resizing to twice its size (+0.92 MiB of resident memory,
thousands of launches in; benchmarks/bench_soak.py).

Checked in a fresh interpreter (another test module may hold the names itself): a new
string object equal to a key, passed to ``sys.intern``, comes back as another object when
the key is already interned and alive, and as itself when it is not (the Python docs of
``sys.intern``)."""
import os
import subprocess
import sys
import textwrap

import npusim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(npusim.__file__)))

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from numpy.lib.stride_tricks import as_strided
    import npusim

    def held(fresh):
        return sys.intern(fresh) is not fresh

    # new str objects: a literal key in this script would itself hold the interned name
    keys = [k[::-1] for k in ("atad", "rcsed", "epahs", "sedirts", "rtsepyt", "noisrev")]

    buf = np.zeros(64, np.uint8)
    for _ in range(3):      # what a launch's strided views do; the keys outlive the calls
        as_strided(buf, shape=(4, 8), strides=(16, 1), writeable=True)
    print(" ".join(k for k in keys if not held(k)))
""")


def test_array_interface_keys_stay_interned_in_a_process_that_imports_npusim():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout.strip()
    assert out == "", f"not kept interned after as_strided calls: {out}"
