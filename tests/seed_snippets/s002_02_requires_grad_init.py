# Seed 002_240437ffb10e9e85.txt - "Tensor" (ways to set requires_grad)
import torch

t1 = torch.randn((3,3), requires_grad = True)
t2 = torch.FloatTensor(3,3) # No way to specify requires_grad while initiating
t2.requires_grad = True
