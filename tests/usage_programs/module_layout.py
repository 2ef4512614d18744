"""Where classes live (what pickles and safe_globals lists name): __module__ and reprs of common classes."""
import torch
import torch.nn as nn
import torch.optim as optim
import torch.distributions as D
import torch.utils.data as data

classes = [nn.Linear, nn.Conv2d, nn.LSTM, nn.GRU, nn.Embedding, nn.Dropout, nn.Sequential, nn.ModuleList, nn.LayerNorm,
           nn.BatchNorm1d, nn.TransformerEncoderLayer, nn.MultiheadAttention, nn.ReLU, nn.GELU, nn.CrossEntropyLoss,
           nn.MaxPool2d, nn.Module, nn.Parameter, nn.Identity, nn.Flatten, nn.modules.linear.NonDynamicallyQuantizableLinear,
           optim.SGD, optim.Adam, optim.AdamW, optim.lr_scheduler.StepLR, optim.lr_scheduler.OneCycleLR,
           D.Normal, D.Categorical, D.MultivariateNormal, D.TransformedDistribution, D.transforms.ExpTransform,
           data.DataLoader, data.TensorDataset, data.Dataset, torch.Tensor, torch.Size, type(torch.float32),
           torch.autograd.Function, torch.no_grad, torch.enable_grad]
for c in classes:
    print(c.__module__, c.__qualname__, c)
print(nn.modules.rnn.LSTM is nn.LSTM, nn.modules.activation.MultiheadAttention is nn.MultiheadAttention,
      nn.modules.container.Sequential is nn.Sequential, nn.modules.sparse.Embedding is nn.Embedding)
# (torch.Generator is torch._C.Generator, F.relu's module torch.nn.functional: ember's are its own modules)
print(torch.optim.Optimizer.__module__, type(torch.float32).__module__)
print(type(torch.ones(1).grad_fn), type((torch.ones(1, requires_grad=True) * 2).grad_fn).__name__)
