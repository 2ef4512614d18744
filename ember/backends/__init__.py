"""torch.backends: the switches PyTorch scripts set for cuDNN, CUDA and MPS. ember has only the NumPy
CPU backend, so these are plain attributes that report "not available" and change nothing."""
from . import cuda, cudnn, mps  # noqa: F401
