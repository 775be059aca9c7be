"""torch on device "npu": a matmul and a softmax run as aclnn operators on the simulated NPU.

    pip install '.[torch]' --extra-index-url https://download.pytorch.org/whl/cpu
    python examples/torch_npu_matmul.py

Ordinary torch code; only the device name says where it runs. ``x @ w`` runs aclnnMm and
``torch.softmax`` aclnnSoftmax on the device's memory; the msprof-style op summary at the
end lists the kernels that ran, with their simulated times.
"""
import torch

import aclnn.torch_npu

aclnn.torch_npu.enable("Ascend910B1")

torch.manual_seed(0)
x = torch.randn(256, 512, dtype=torch.float16, device="npu")
w = torch.randn(512, 128, dtype=torch.float16).npu()
probs = torch.softmax(x @ w, dim=-1)           # aclnnMm, then aclnnSoftmax
torch.npu.synchronize()

expect = torch.softmax((x.cpu().float() @ w.cpu().float()), dim=-1)
print("max |npu - cpu|:", (probs.cpu().float() - expect).abs().max().item())
print(aclnn.torch_npu.op_summary())
