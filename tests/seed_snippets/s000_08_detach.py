# Seed 000_2a66a9701caa613b.txt - "2. tensor.detach()" (detach.py)
import torch

x = torch.tensor([2.0], requires_grad=True)
y = x ** 2

# Detach y from the graph
y_detached = y.detach()

print(y.requires_grad)         # True
print(y_detached.requires_grad)  # False
print(y_detached.grad_fn)        # None

# Common use: stop gradient flow in part of the network
def forward_with_stop_gradient(x):
    # First part: gradients flow
    h1 = self.layer1(x)

    # Stop gradients here
    h1_stopped = h1.detach()

    # Second part: no gradients to layer1
    h2 = self.layer2(h1_stopped)
    return h2
