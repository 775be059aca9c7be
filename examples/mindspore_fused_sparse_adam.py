"""The example of MindSpore's ``ops.FusedSparseAdam`` document, run on the simulated NPU.

The code is the document's (the MindSpore API document mindspore.ops.FusedSparseAdam (mindspore.cn), Examples)
with its imports changed: ``mindspore`` -> ``aclnn.mindspore``; the statements after the
class are in ``main`` so that the test suite can run them. The document prints::

    [[[0.9996963  0.9996977 ]]
     [[0.99970144 0.9996992 ]]
     [[0.99971527 0.99971527]]]

Row 2, which no index names, is 0.99971527 on every run (m and v decay, var moves: the
operator is not lazy); rows 0 and 1 depend on ``np.random.rand``, so they differ from run
to run (tests/test_mindspore_front_end.py finds gradients that give the printed values and
checks that they print them). ``ops.FusedSparseAdam`` runs ``aclnnFusedSparseAdam`` on the
simulated device. Run: ``python examples/mindspore_fused_sparse_adam.py``
"""
import numpy as np
import aclnn.mindspore.nn as nn
from aclnn.mindspore import Tensor, Parameter
from aclnn.mindspore.ops import operations as ops
import aclnn.mindspore.common.dtype as mstype


class Net(nn.Cell):
    def __init__(self):
        super(Net, self).__init__()
        self.sparse_apply_adam = ops.FusedSparseAdam()
        self.var = Parameter(Tensor(np.ones([3, 1, 2]).astype(np.float32)), name="var")
        self.m = Parameter(Tensor(np.ones([3, 1, 2]).astype(np.float32)), name="m")
        self.v = Parameter(Tensor(np.ones([3, 1, 2]).astype(np.float32)), name="v")

    def construct(self, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, indices):
        out = self.sparse_apply_adam(self.var, self.m, self.v, beta1_power, beta2_power, lr, beta1, beta2,  # noqa: E501
                                     epsilon, grad, indices)
        return out


def main(argv=None):
    net = Net()
    beta1_power = Tensor(0.9, mstype.float32)
    beta2_power = Tensor(0.999, mstype.float32)
    lr = Tensor(0.001, mstype.float32)
    beta1 = Tensor(0.9, mstype.float32)
    beta2 = Tensor(0.999, mstype.float32)
    epsilon = Tensor(1e-8, mstype.float32)
    gradient = Tensor(np.random.rand(2, 1, 2), mstype.float32)
    indices = Tensor([0, 1], mstype.int32)
    output = net(beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient, indices)
    print(net.var.asnumpy())
    return net, gradient, output


if __name__ == "__main__":
    main()
