# Seed 002_240437ffb10e9e85.txt - "How are PyTorch's graphs different from TensorFlow graphs"
import torch

a = torch.randn((3,3), requires_grad = True) #No graph yet, as a is a leaf
w1 = torch.randn((3,3), requires_grad = True) #Same logic as above
b = w1*a #Graph with node `mulBackward` is created.
