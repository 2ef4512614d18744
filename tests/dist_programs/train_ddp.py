"""A torchrun-style training script, as users write them: init_process_group("gloo"), DistributedSampler,
DistributedDataParallel, rank-0 checkpointing. Runs unchanged under torchrun (LIB=torch) and ember's launcher
(LIB=ember); prints each step's loss (averaged over the ranks) and the final parameters; tests/test_ddp.py
compares the two."""
import os

if os.environ.get("LIB", "ember") == "ember":
    import ember as torch
else:
    import torch
dist = torch.distributed
nn = torch.nn
DDP = nn.parallel.DistributedDataParallel
DataLoader = torch.utils.data.DataLoader
TensorDataset = torch.utils.data.TensorDataset
DistributedSampler = torch.utils.data.distributed.DistributedSampler


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    x = torch.randn(64, 5)
    y = (x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0], [0.0]]) + 0.1 * torch.randn(64, 1))
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, shuffle=True, seed=42)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    step = 0
    log = []   # the lines rank 0 prints
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.mse_loss(ddp(xb), yb)
            loss.backward()
            opt.step()
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            if rank == 0:
                line = f"epoch {epoch} step {step} loss {avg.item() / world:.6f}"
                print(line, flush=True)
                log.append(line + "\n")
            step += 1
        path = os.path.join(os.environ.get("OUT", "."), "checkpoint.pt")
        if rank == 0:
            torch.save({"epoch": epoch, "model": ddp.module.state_dict(), "optim": opt.state_dict()}, path)
        dist.barrier()
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
    # each rank's final parameters in a file of its own (the launchers merge the ranks' output streams at any byte)
    with open(os.path.join(os.environ.get("OUT", "."), f"params_rank{rank}.txt"), "w") as f:
        f.writelines(log)   # (rank 0's losses, as printed)
        for name, p in model.state_dict().items():
            values = [f"{v:.6f}" for v in p.reshape(-1).tolist()]
            for k in range(0, len(values), 16):
                f.write(f"rank {rank} {name} {k} " + " ".join(values[k:k + 16]) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
