"""How the Matmul API reads a TCubeTiling's step and double-buffer fields, including the
values the host tiling never produces (a TCubeTiling built by hand, e.g. in a pyasc kernel,
that sets only the base, single-core, depth and stepM/stepN fields and leaves ``stepKa``,
``stepKb`` and ``dbL0A/B/C`` at 0).

Source: the library's own implementation in asc-devkit (``impl/adv_api/detail/matmul``,
the snapshot npusim's reference notes use). What it does with these fields, in our words:

* ``dbL0A`` / ``dbL0B``: one flag for both L0A and L0B
  (``resource/l0_buffer/tbuf_pool_l0_base.h``, ``TBufPoolL0Base::Init``): the ping-pong
  halves are used unless ``(dbL0A - 1) & (dbL0B - 1)`` is zero on the int32 fields, i.e.
  single-buffered exactly when either field is 1. So 1/1 gives one buffer, 2/2 two, 2/1
  one, and 0/0 (``-1 & -1``) two.
* ``dbL0C`` (``resource/cube_out_buffer/cube_out_buffer_no_unit_flag.h``,
  ``CubeOutBuffer::Init``): two CO1 buffers when it equals 2, one for any other value.
  (With the unit flag, ``cube_out_buffer_unit_flag.h`` does not read it: one buffer.)
* ``stepKa`` / ``stepKb`` under the NORM template with half, bfloat16 or float operands:
  not read. NORM walks K one ``baseK`` at a time (``scheduler/iterator/k_loop/
  k_loop_norm.h``), brings each ``baseM x baseK`` (``baseK x baseN``) base block into L1
  on its own (``stage/copy_cube_in/base/copy_cube_in_norm.h`` ``LoadData``, a cache sized
  by ``depthA1``/``depthB1`` in ``resource/cube_in_buffer/cube_in_buffer_normal.h``) and
  passes the step only to the int8 ND -> NZ copy (``copy_tile_to_cube_common.h``
  ``CopyND2NZForInt8``); its shape checks (``param/matmul_shape_tiling.h``
  ``NumericalValidCheck``, CPU debug) ask depthA1/B1 and stepM/N to be > 0, not the K
  steps. npusim's data path loads L1 in chunks of ``stepKa`` base blocks along K; for a
  NORM step the library does not read, the chunk is NORM's own: one base block.
* ``stepKa`` / ``stepKb`` under MDL (and for int8 operands): read as divisors
  (``k_loop_mdl_base.h`` sets the outer K loop to ``Ceil(singleCoreK, baseK * stepKa)``),
  so 0 divides by zero on the device: refused.
"""
from __future__ import annotations

from npusim.errors import KernelError

#: the Matmul data path's element types whose NORM L1 copy ignores stepKa / stepKb
_STEP_FREE_ITEMSIZES = (2, 4)


def norm_reads_k_steps(template: str, itemsize: int) -> bool:
    """Whether the library reads stepKa / stepKb for this template and operand size."""
    return template != "NORM" or itemsize not in _STEP_FREE_ITEMSIZES


def k_steps(template: str, itemsize: int, step_ka: int, step_kb: int) -> tuple[int, int]:
    """(stepKa, stepKb) npusim's L1 chunks use: the tiling's, or one base block each where
    the library does not read them (NORM with 16/32-bit operands) and they are not >= 1."""
    if norm_reads_k_steps(template, itemsize):
        return step_ka, step_kb
    return (step_ka if step_ka >= 1 else 1), (step_kb if step_kb >= 1 else 1)


def l0ab_buffers(db_l0a: int, db_l0b: int) -> int:
    """L0A and L0B buffers (both): 2 unless ``(dbL0A - 1) & (dbL0B - 1)`` is 0."""
    return 2 if (int(db_l0a) - 1) & (int(db_l0b) - 1) else 1


def l0c_buffers(db_l0c: int) -> int:
    """CO1 (L0C) buffers: 2 when dbL0C is 2, else 1."""
    return 2 if int(db_l0c) == 2 else 1


def check(name: str, t, template: str, itemsize: int) -> None:
    """KernelError naming the fields the library reads and cannot use: a base, stepM/N or
    depth field <= 0 (sizes and divisors everywhere), a K step <= 0 where it is read."""
    fields = {"baseM": t.baseM, "baseN": t.baseN, "baseK": t.baseK, "stepM": t.stepM,
              "stepN": t.stepN, "depthA1": t.depthA1, "depthB1": t.depthB1}
    if norm_reads_k_steps(template, itemsize):
        fields.update(stepKa=t.stepKa, stepKb=t.stepKb)
    bad = [k for k, v in fields.items() if v <= 0]
    if not bad:
        return
    why = ""
    if "stepKa" in bad or "stepKb" in bad:
        why = (" (the MDL template divides by stepKa/stepKb)" if template != "NORM" else
               " (NORM's int8 ND -> NZ copy reads stepKa/stepKb)")
    listed = ", ".join(f"{k} = {fields[k]}" for k in bad)
    raise KernelError(name, f"the tiling has {listed}: the {template} template needs it > 0"
                      f"{why} (TCubeTiling; was GetTiling's result -1?)")
