"""ZeroRedundancyOptimizer on every rank of a job (LIB=ember under ember's launcher, LIB=torch under torchrun with
gloo): the partition of a set of parameter shapes (one group, two groups), and for SGD (momentum) and Adam, with
and without parameters_as_bucket_view, three steps on gradients made equal across ranks (all_reduce) compared with
the plain optimizer; the consolidated state_dict against the plain optimizer's, loaded into a plain optimizer and
into a new ZeroRedundancyOptimizer on every rank, each then stepping as the plain one. Writes OUT/rank{r}.json."""
import copy
import json
import os

if os.environ.get("LIB", "ember") == "torch":
    import torch
    from torch.distributed.optim import ZeroRedundancyOptimizer
else:
    import ember as torch
    ZeroRedundancyOptimizer = torch.distributed.optim.ZeroRedundancyOptimizer
dist = torch.distributed

SHAPES = [(4, 3), (3,), (6, 5), (6,), (2, 6), (2,), (5, 5), (1,), (3, 3), (12,)]


def make_params():
    out = []
    for i, s in enumerate(SHAPES):
        n = 1
        for d in s:
            n *= d
        out.append(torch.nn.Parameter((torch.arange(n, dtype=torch.float32).reshape(s) - n / 2) / (n + i)))
    return out


def set_grads(params, step, rank, ws):
    for i, p in enumerate(params):
        g = torch.sin(torch.arange(p.numel(), dtype=torch.float32).reshape(p.shape) * (0.3 + i) + step + rank)
        dist.all_reduce(g)
        p.grad = g / ws


def same(a, b):
    if torch.is_tensor(a):
        return torch.is_tensor(b) and a.shape == b.shape and bool(torch.equal(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def indices(zero, params):
    where = {id(p): i for i, p in enumerate(params)}
    return [[[where[id(p)] for p in g["params"]] for g in groups] for groups in zero._partition_parameters()]


def main():
    dist.init_process_group("gloo")
    rank, ws = dist.get_rank(), dist.get_world_size()
    res = {}
    ps = make_params()
    res["partition_one_group"] = indices(ZeroRedundancyOptimizer(ps, torch.optim.SGD, lr=0.1), ps)
    ps = make_params()
    groups = [{"params": ps[:5]}, {"params": ps[5:], "lr": 0.5}]
    z = ZeroRedundancyOptimizer(groups, torch.optim.SGD, lr=0.1)
    res["partition_two_groups"] = indices(z, ps)
    z.add_param_group({"params": [torch.nn.Parameter(torch.zeros(7))], "lr": 0.2})
    res["partition_added_group"] = [[len(g["params"]) for g in gs] for gs in z._partition_parameters()]
    res["local_groups"] = [len(g["params"]) for g in z.optim.param_groups]
    for cls, kw in ((torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}), (torch.optim.Adam, {"lr": 0.01})):
        for bucket in (False, True):
            name = f"{cls.__name__}_{'bucket' if bucket else 'params'}"
            plain_ps, zero_ps = make_params(), make_params()
            plain = cls(plain_ps, **kw)
            zero = ZeroRedundancyOptimizer(zero_ps, cls, parameters_as_bucket_view=bucket, **kw)
            for step in range(3):
                set_grads(plain_ps, step, rank, ws)
                set_grads(zero_ps, step, rank, ws)
                plain.step()
                zero.step()
            r = {"equal_plain": all(bool(torch.equal(a, b)) for a, b in zip(plain_ps, zero_ps)),
                 "params": [p.detach().flatten().tolist() for p in zero_ps],
                 "local_state": sorted(len(zero.optim.state[p]) > 0 for p in zero_ps if p in zero.optim.state)}
            zero.consolidate_state_dict(to=0)
            sd = zero.state_dict() if rank == 0 else None
            if rank == 0:
                r["state_dict_equal_plain"] = same(sd, plain.state_dict())
            else:
                try:
                    zero.state_dict()
                except RuntimeError as e:
                    r["state_dict_error"] = str(e)
            box = [sd]
            dist.broadcast_object_list(box, src=0)
            sd = box[0]
            at3 = [p.detach().clone() for p in plain_ps]
            set_grads(plain_ps, 3, rank, ws)
            plain.step()
            fresh_ps = [torch.nn.Parameter(t.clone()) for t in at3]
            fresh = cls(fresh_ps, **kw)
            fresh.load_state_dict(copy.deepcopy(sd))   # (a loaded state shares sd's tensors)
            set_grads(fresh_ps, 3, rank, ws)
            fresh.step()
            r["plain_loaded_steps_as_plain"] = all(bool(torch.equal(a, b)) for a, b in zip(plain_ps, fresh_ps))
            z2_ps = [torch.nn.Parameter(t.clone()) for t in at3]
            z2 = ZeroRedundancyOptimizer(z2_ps, cls, parameters_as_bucket_view=bucket, **kw)
            z2.load_state_dict(copy.deepcopy(sd))
            set_grads(z2_ps, 3, rank, ws)
            z2.step()
            r["zero_loaded_steps_as_plain"] = all(bool(torch.equal(a, b)) for a, b in zip(plain_ps, z2_ps))
            res[name] = r
    dist.barrier()
    with open(os.path.join(os.environ["OUT"], f"rank{rank}.json"), "w") as f:
        json.dump(res, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
