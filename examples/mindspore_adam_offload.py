"""The example of MindSpore's ``nn.AdamOffload`` document, on the simulated NPU.

The document's example (the MindSpore API document mindspore.nn.AdamOffload (mindspore.cn), 样例) builds the
optimizer twice over a LeNet5 -- (1) all parameters alike, (2) parameter groups -- and hands
it to ``ms.Model``. This front end has no layers, no loss and no ``Model``, so here
``LeNet5`` is a Cell holding LeNet5's parameters (their names and shapes), the two
constructions are the document's lines with ``nn`` from ``aclnn.mindspore``, and the
training step that ``Model`` would run is one call of the optimizer on given gradients::

    optim(gradients)      # gradients: a tuple of Tensors in optim.parameters order

Group 1 (the conv parameters) then moves with the default learning rate 0.1 and weight
decay 0.01, group 2 with learning rate 0.01 and no decay. The script prints each
parameter's mean |change| and the host/device timeline of the step
(:class:`aclnn.optim.AdamOffload`). Run: ``python examples/mindspore_adam_offload.py``
"""
import numpy as np
from aclnn.mindspore import Tensor, Parameter, nn


class LeNet5(nn.Cell):
    """LeNet5's trainable parameters (MindSpore's lenet.py: conv1, conv2, fc1, fc2, fc3)."""

    def __init__(self, num_class=10, num_channel=1):
        super(LeNet5, self).__init__()
        rng = np.random.default_rng(0)
        shapes = {"conv1.weight": (6, num_channel, 5, 5), "conv2.weight": (16, 6, 5, 5),
                  "fc1.weight": (120, 400), "fc1.bias": (120,), "fc2.weight": (84, 120),
                  "fc2.bias": (84,), "fc3.weight": (num_class, 84), "fc3.bias": (num_class,)}
        for name, shape in shapes.items():
            value = (0.1 * rng.standard_normal(shape)).astype(np.float32)
            setattr(self, name.replace(".", "_"), Parameter(Tensor(value), name=name))


def main(argv=None):
    net = LeNet5()
    #1) All parameters use the same learning rate and weight decay
    optim = nn.AdamOffload(params=net.trainable_params())

    #2) Use parameter groups and set different values
    conv_params = list(filter(lambda x: 'conv' in x.name, net.trainable_params()))
    no_conv_params = list(filter(lambda x: 'conv' not in x.name, net.trainable_params()))
    group_params = [{'params': conv_params, 'weight_decay': 0.01},
                    {'params': no_conv_params, 'lr': 0.01},
                    {'order_params': net.trainable_params()}]
    optim = nn.AdamOffload(group_params, learning_rate=0.1, weight_decay=0.0)
    # The conv_params's parameters will use default learning rate of 0.1 and weight decay of 0.01.
    # The no_conv_params's parameters will use learning rate of 0.01 and default weight decay of 0.0.
    # The final parameters order in which the optimizer will be followed is the value of 'order_params'.

    # one training step, in place of ms.Model(net, loss_fn=loss, optimizer=optim)
    rng = np.random.default_rng(1)
    before = [p.asnumpy() for p in optim.parameters]
    gradients = tuple(Tensor(rng.standard_normal(p.shape).astype(np.float32))
                      for p in optim.parameters)
    print(optim(gradients))
    for p, old in zip(optim.parameters, before):
        print(f"{p.name:<14} mean |change| {np.abs(p.asnumpy() - old).mean():.6f}")
    print(optim.offload.timeline_text())
    return net, optim, before, gradients


if __name__ == "__main__":
    main()
