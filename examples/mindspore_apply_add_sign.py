"""The example of MindSpore's ``ops.ApplyAddSign`` document, run on the simulated NPU.

The code is the document's (the MindSpore API document mindspore.ops.ApplyAddSign (mindspore.cn), 样例) with one
import changed: ``mindspore`` -> ``aclnn.mindspore``; the statements after the class are in
``main`` so that the test suite can run them. It prints what the document prints::

    (Tensor(shape=[2, 2], dtype=Float32, value=
    [[ 5.99403024e-01,  3.98607016e-01],
     [ 9.98010039e-02,  4.98407990e-01]]), Tensor(shape=[2, 2], dtype=Float32, value=
    [[ 5.70000052e-01,  5.19999981e-01],
     [ 1.89999998e-01,  6.20000064e-01]]))

``ops.ApplyAddSign`` runs ``aclnnApplyAddSign`` on the simulated device (device 0 of a
default Ascend910B1 runtime, as nothing set one). Run: ``python
examples/mindspore_apply_add_sign.py``
"""
import numpy as np
from aclnn.mindspore import Tensor, Parameter, nn, ops


class Net(nn.Cell):
    def __init__(self):
        super(Net, self).__init__()
        self.apply_add_sign = ops.ApplyAddSign()
        self.var = Parameter(Tensor(np.array([[0.6, 0.4],
                                              [0.1, 0.5]]).astype(np.float32)), name="var")
        self.m = Parameter(Tensor(np.array([[0.6, 0.5],
                                            [0.2, 0.6]]).astype(np.float32)), name="m")
        self.lr = 0.001
        self.alpha = 1.0
        self.sign_decay = 0.99
        self.beta = 0.9

    def construct(self, grad):
        out = self.apply_add_sign(self.var, self.m, self.lr, self.alpha, self.sign_decay, self.beta, grad)  # noqa: E501
        return out


def main(argv=None):
    net = Net()
    grad = Tensor(np.array([[0.3, 0.7], [0.1, 0.8]]).astype(np.float32))
    output = net(grad)
    print(output)
    return net, output


if __name__ == "__main__":
    main()
