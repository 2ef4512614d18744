"""ember.utils.tensorboard: PyTorch's ``torch.utils.tensorboard`` -- ``SummaryWriter`` writes TensorBoard event
files (scalars, histograms, images, figures, text, hparams, embeddings, PR curves, and a module's graph built from
ember's own autograd graph). Needs the ``tensorboard`` package (``pip install ember[tensorboard]``), as PyTorch's;
images are encoded as PNG with pillow."""
import tensorboard

if not hasattr(tensorboard, "__version__") or \
        tuple(int(p) for p in tensorboard.__version__.split(".")[:2] if p.isdigit()) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
