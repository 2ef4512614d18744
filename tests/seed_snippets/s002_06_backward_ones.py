# Seed 002_240437ffb10e9e85.txt - "Function" (fix 2: backward with torch.ones)
import torch

# setup from the erroring snippet in the document (non-scalar L)
a = torch.randn((3,3), requires_grad = True)
w1 = torch.randn((3,3), requires_grad = True)
w2 = torch.randn((3,3), requires_grad = True)
w3 = torch.randn((3,3), requires_grad = True)
w4 = torch.randn((3,3), requires_grad = True)
b = w1*a
c = w2*a
d = w3*b + w4*c
L = (10 - d)

# Replace L.backward() with
L.backward(torch.ones(L.shape))
