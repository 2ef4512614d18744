"""Model ensembling: stack_module_state + vmap(functional_call) over 10 MLPs, with different minibatches and the
same minibatch, against a loop over the models; then one vectorised SGD step of the whole ensemble."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, stack_module_state, vmap


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 20)
        self.fc2 = nn.Linear(20, 20)
        self.fc3 = nn.Linear(20, 4)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.silu(self.fc2(x))
        return self.fc3(x)


torch.manual_seed(4)
n_models = 10
models = [MLP().double() for _ in range(n_models)]
data = torch.randn(n_models, 8, 12, dtype=torch.float64)     # one minibatch of 8 per model
targets = torch.randint(0, 4, (n_models, 8))
shared = data[0]

params, buffers = stack_module_state(models)
print("stacked:", {k: tuple(v.shape) for k, v in params.items()}, "buffers:", len(buffers))
print("stacked params are leaves that require grad:", all(v.is_leaf and v.requires_grad for v in params.values()))

# a stateless copy of the architecture; its own weights are never used
base = copy.deepcopy(models[0]).to("meta")
print("base weight device:", base.fc1.weight.device)


def run_one(p, b, x):
    return functional_call(base, (p, b), (x,))


# different minibatch per model
out_diff = vmap(run_one)(params, buffers, data)
loop_diff = torch.stack([m(x) for m, x in zip(models, data)])
print("different minibatches:", tuple(out_diff.shape), torch.allclose(out_diff, loop_diff, atol=1e-12))

# one minibatch shared by every model: do not map over the data
out_same = vmap(run_one, in_dims=(0, 0, None))(params, buffers, shared)
loop_same = torch.stack([m(shared) for m in models])
print("same minibatch:", tuple(out_same.shape), torch.allclose(out_same, loop_same, atol=1e-12))
print("predictions of each model on sample 0:", out_same[:, 0].argmax(-1).tolist())
print("ensemble mean logits of samples 0..2:")
print(out_same.mean(0)[:3].detach())
votes = out_same.argmax(-1)
counts = F.one_hot(votes, 4).sum(0)
print("vote counts of sample 0:", counts[0].tolist(), "majority:", counts.argmax(-1).tolist())

# outputs keep the autograd graph to the stacked parameters
out_same.pow(2).mean().backward()
print("grad of stacked fc3.bias:", tuple(params["fc3.bias"].grad.shape),
      f"{params['fc3.bias'].grad.abs().sum().item():.8f}")

# train the ensemble: per-model gradients with vmap(grad(...)), one SGD step for all ten at once
detached = {k: v.detach() for k, v in params.items()}


def loss_one(p, b, x, y):
    return F.cross_entropy(run_one(p, b, x), y)


lr = 0.5
for step in range(3):
    losses = vmap(loss_one)(detached, buffers, data, targets)
    grads = vmap(grad(loss_one))(detached, buffers, data, targets)
    detached = {k: v - lr * grads[k] for k, v in detached.items()}
    print(f"step {step} losses {[f'{v:.6f}' for v in losses.tolist()]}")

# the same three steps by a loop over the models with their own optimisers
for m, x, y in zip(models, data, targets):
    opt = torch.optim.SGD(m.parameters(), lr=lr)
    for step in range(3):
        opt.zero_grad()
        F.cross_entropy(m(x), y).backward()
        opt.step()
restacked, _ = stack_module_state(models)
print("vectorised training == loop:", all(torch.allclose(detached[k], restacked[k].detach()) for k in detached))
print(f"fc1.weight sum after training: {detached['fc1.weight'].sum().item():.8f}")

# chunk_size trades memory for speed and gives the same answer
out_chunked = vmap(run_one, in_dims=(0, 0, None), chunk_size=3)(detached, buffers, shared)
out_whole = vmap(run_one, in_dims=(0, 0, None))(detached, buffers, shared)
print("chunked == unchunked:", torch.allclose(out_chunked, out_whole))
