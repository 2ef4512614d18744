"""SummaryWriter beyond scalars: add_graph of a module, figures, embeddings, pr curves; read back with tensorboard."""
import os
import tempfile

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

torch.manual_seed(19)
d = tempfile.mkdtemp()
w = SummaryWriter(d, comment="x", flush_secs=1)
fig = plt.figure()
plt.plot([1, 2, 3])
w.add_figure("fig", fig, 0)
w.add_images("imgs", torch.rand(2, 3, 4, 4), 0)
w.add_pr_curve("pr", torch.randint(0, 2, (20,)), torch.rand(20), 0)
w.add_histogram("h", torch.arange(10.0), 0, bins="auto")
w.add_scalar("s", torch.tensor(1.5), 1, new_style=True)
w.add_text("t", "**bold**", 2)
w.add_custom_scalars({"grp": {"loss": ["Multiline", ["s"]]}})
w.close()
ea = EventAccumulator(d, size_guidance={"tensors": 0, "images": 0})
ea.Reload()
tags = ea.Tags()
print(sorted(tags["images"]), sorted(tags["tensors"]), sorted(tags["histograms"]), sorted(tags["scalars"]))
print([(e.step, e.width, e.height) for e in ea.Images("fig")][:1] != [], len(ea.Images("imgs")))
h = ea.Histograms("h")[0].histogram_value
print(h.num, h.min, h.max, h.sum, h.sum_squares)
print([x.step for x in ea.Tensors("t/text_summary")])
