# Seed 002_240437ffb10e9e85.txt - "Function" (update with an optimisation rule)
import torch

# setup from the document's earlier snippet (gradients computed via L.sum().backward());
# learning_rate is not defined in the document, pick a value
a = torch.randn((3,3), requires_grad = True)
w1 = torch.randn((3,3), requires_grad = True)
w2 = torch.randn((3,3), requires_grad = True)
w3 = torch.randn((3,3), requires_grad = True)
w4 = torch.randn((3,3), requires_grad = True)
b = w1*a
c = w2*a
d = w3*b + w4*c
L = (10 -d).sum()
L.backward()
learning_rate = 0.01

w1 = w1 - learning_rate * w1.grad
