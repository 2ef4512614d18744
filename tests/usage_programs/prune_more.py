"""Pruning a CNN: structured pruning on conv channels, custom masks, saving/loading pruned state."""
import io

import torch
import torch.nn as nn
import torch.nn.utils.prune as prune

torch.manual_seed(20)
net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
prune.ln_structured(net[0], "weight", amount=2, n=1, dim=0)
prune.random_structured(net[3], "weight", amount=0.5, dim=1)
prune.custom_from_mask(net[0], "bias", mask=torch.tensor([1.0, 0.0, 1.0, 1.0]))
print(net[0].weight.abs().sum(dim=(1, 2, 3)) == 0, net[0].bias)
print(int(net[3].weight_mask.sum()), net[3].weight_mask.shape)
prune.l1_unstructured(net[0], "weight", amount=0.3)
hook = [h for h in net[0]._forward_pre_hooks.values() if getattr(h, "_tensor_name", "") == "weight"][0]
print(type(hook).__name__, hook._tensor_name, [type(m).__name__ for m in hook._pruning_methods])
print(int((net[0].weight == 0).sum()))
sd = net.state_dict()
print(list(sd.keys()))
buf = io.BytesIO()
torch.save(sd, buf)
buf.seek(0)
net2 = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
prune.identity(net2[0], "weight")
prune.identity(net2[0], "bias")
prune.identity(net2[3], "weight")
print(net2.load_state_dict(torch.load(buf)))
x = torch.randn(3, 1, 6, 6)
print(torch.equal(net(x), net2(x)))
net(x).sum().backward()
print(net[0].weight_orig.grad.abs().sum(dim=(1, 2, 3)) == 0)
print(prune.L1Unstructured.PRUNING_TYPE, prune.LnStructured.PRUNING_TYPE, prune.RandomUnstructured(0.2).amount)
m = prune.L1Unstructured(amount=0.5)
print(m.compute_mask(torch.tensor([1.0, -3.0, 0.5, 2.0]), default_mask=torch.ones(4)))
print(m.prune(torch.tensor([1.0, -3.0, 0.5, 2.0])))
for bad in (lambda: prune.ln_structured(net2[3], "weight", amount=0.5, n=2, dim=5),
            lambda: prune.l1_unstructured(net2[3], "nonexistent", amount=0.5),
            lambda: prune.global_unstructured([(net2[3], "weight")], pruning_method=prune.LnStructured, amount=0.5),
            lambda: prune.random_unstructured(net2[3], "bias", amount=-1)):
    try:
        bad()
        print("no error")
    except Exception as e:
        print(type(e).__name__, str(e)[:200])
