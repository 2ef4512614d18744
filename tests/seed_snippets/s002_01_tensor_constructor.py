# Seed 002_240437ffb10e9e85.txt - "Tensor" (IPython session: torch.Tensor(3,5))
import torch
tsr = torch.Tensor(3,5)
# The session echoes `tsr`, whose contents are uninitialised memory (garbage that
# differs run to run and between libraries); print its shape and dtype instead.
print(tsr.shape, tsr.dtype)
