"""Prune, fine-tune, then make pruning permanent with prune.remove."""
import torch
import torch.nn as nn
import torch.nn.utils.prune as prune

torch.manual_seed(9)
model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
x, y = torch.randn(20, 6), torch.randn(20, 2)
prune.l1_unstructured(model[0], name="weight", amount=0.5)
prune.random_unstructured(model[2], name="bias", amount=1)
prune.ln_structured(model[2], name="weight", amount=0.25, n=2, dim=0)
print([n for n, _ in model.named_parameters()])
print([n for n, _ in model.named_buffers()])
print(model[0]._forward_pre_hooks)
print(int((model[0].weight == 0).sum()), model[2].weight_mask)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
print(prune.is_pruned(model), int((model[0].weight == 0).sum()))
params = [(model[0], "weight"), (model[2], "weight")]
prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=10)
print(int((model[0].weight == 0).sum()), int((model[2].weight == 0).sum()))
hook = next(iter(model[0]._forward_pre_hooks.values()))
print(type(hook).__name__, [type(h).__name__ for h in hook] if hasattr(hook, "__iter__") else None)
for m, n in params:
    prune.remove(m, n)
prune.remove(model[2], "bias")
print([n for n, _ in model.named_parameters()], list(model.named_buffers()))
print(prune.is_pruned(model), model[0].weight)
try:
    prune.remove(model[0], "weight")
except ValueError as e:
    print("ValueError:", e)
try:
    prune.l1_unstructured(model[0], "weight", amount=1.5)
except ValueError as e:
    print("ValueError:", e)
prune.identity(model[0], "bias")
print(model[0].bias_mask)
print(model.state_dict().keys())
