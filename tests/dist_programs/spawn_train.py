"""PyTorch's tutorial pattern: ``mp.spawn(run, args=(world_size,), nprocs=world_size)`` with ``init_process_group``
inside ``run``; an all_reduce and two data-parallel SGD steps of a small linear model (gradients all-reduced and
averaged). Run with LIB=ember or LIB=torch (gloo); every rank writes OUT/spawn{k}_rank{r}.json. Under ember a
second spawn checks that it starts on MPI at once, and a third that a child raising after init_process_group
gives ProcessRaisedException in the parent, and a fourth that a tensor in shared memory passed as an argument
is written by the MPI children in place."""
import json
import os

if os.environ.get("LIB", "ember") == "torch":
    import torch
else:
    import ember as torch
dist = torch.distributed
mp = torch.multiprocessing


def run(rank, world_size, k):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ.get("PORT", "29512")
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    t = torch.arange(4, dtype=torch.float32) * (rank + 1)
    dist.all_reduce(t)
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.1, -0.2, 0.3], [0.05, 0.4, -0.1]]))
        model.bias.copy_(torch.tensor([0.01, -0.02]))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.arange(12, dtype=torch.float32).reshape(4, 3) / 10 + rank
    y = torch.ones(4, 2) * (rank - 0.5)
    losses = []
    for _ in range(2):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world_size
        opt.step()
        losses.append(loss.item())
    res = {"all_reduce": t.tolist(), "losses": losses, "weight": model.weight.tolist(), "bias": model.bias.tolist(),
           "world": [dist.get_rank(), dist.get_world_size()], "mpi": "OMPI_COMM_WORLD_RANK" in os.environ}
    dist.barrier()   # (torch's gloo aborts at exit when a peer's group goes away first)
    dist.destroy_process_group()
    with open(os.path.join(os.environ["OUT"], f"spawn{k}_rank{rank}.json"), "w") as f:
        json.dump(res, f)


def fail(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    if rank == 1:
        raise ValueError("boom on rank 1")
    dist.barrier()


def write_shared(rank, t):
    dist.init_process_group("gloo", rank=rank, world_size=2)
    t[rank] = rank + 1.0   # into the parent's shared memory (the argument travelled as a descriptor)
    dist.barrier()


if __name__ == "__main__":
    world_size = 2
    mp.spawn(run, args=(world_size, 0), nprocs=world_size, join=True)
    if os.environ.get("LIB", "ember") == "ember":
        mp.spawn(run, args=(world_size, 1), nprocs=world_size, join=True)
        try:
            mp.spawn(fail, args=(world_size,), nprocs=world_size, join=True)
        except mp.ProcessRaisedException as e:
            with open(os.path.join(os.environ["OUT"], "fail.json"), "w") as f:
                json.dump([type(e).__name__, e.error_index, str(e)], f)
        shared = torch.zeros(2).share_memory_()
        mp.spawn(write_shared, args=(shared,), nprocs=world_size, join=True)
        with open(os.path.join(os.environ["OUT"], "shared.json"), "w") as f:
            json.dump(shared.tolist(), f)
