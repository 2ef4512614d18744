# Seed 002_240437ffb10e9e85.txt - "Function" (backward on a vector-valued tensor errors)
import torch
a = torch.randn((3,3), requires_grad = True)
w1 = torch.randn((3,3), requires_grad = True)
w2 = torch.randn((3,3), requires_grad = True)
w3 = torch.randn((3,3), requires_grad = True)
w4 = torch.randn((3,3), requires_grad = True)
b = w1*a
c = w2*a
d = w3*b + w4*c
L = (10 - d)
try:
    L.backward()
except Exception as e:
    print(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
