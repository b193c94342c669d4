# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 16 · Distributed training: many processes, one model
#
# When one process is too slow, data-parallel training runs N copies of the model, each on its
# share of every batch, and averages their gradients before each optimizer step, so all copies
# take the same step and stay identical. `minitorch_edge.distributed` does this with PyTorch's
# names over MPI (mpi4py), the transport clusters already have:
#
#     mpiexec -n 2 python tutorials/16_distributed.py      # the real thing: 2 processes
#     python tutorials/16_distributed.py                   # a group of one, same code
#
# (`minitorch-edge train --nproc 2 ...` runs mpiexec for you.) We train on Digits with
# `DistributedDataParallel` (DDP), then shrink what crosses the wire with gradient compression
# (8/4-bit quantization, 1-bit SGD, top-k, PowerSGD), each with *error feedback*: what a step
# does not send is kept and added to the next step's gradient, so nothing is lost, only delayed.
#
# Read alongside: `minitorch_edge/distributed/process_group.py` (collectives with a timeout),
# `nn/parallel/distributed.py` (DDP), `distributed/compression.py` and
# `distributed/algorithms/ddp_comm_hooks.py` (the hooks), `distributed/parameter_server.py`.

# %%
import os

import numpy as np

import minitorch_edge as mte
from minitorch_edge import distributed as dist, nn
from minitorch_edge.data import DataLoader, DistributedSampler
from minitorch_edge.data.datasets import Digits

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
HAVE_MPI = dist.is_mpi_available()
say = print                              # rank 0 alone speaks once the group exists
if not HAVE_MPI:
    print("mpi4py is not installed: pip install 'minitorch_edge[distributed]' to run this "
          "chapter (mpi4py and the mpich wheel)")

# %% [markdown]
# ## 1. The process group
# `init_process_group("mpi")` joins the processes mpiexec started. Every process gets a rank
# (0 .. world_size - 1). Collectives such as `all_reduce` work in place on Tensors; each one
# waits with a timeout, so a rank that crashed makes the others fail loudly instead of hanging.

# %%
if HAVE_MPI:
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    say = print if rank == 0 else (lambda *a, **k: None)      # one voice for the job
    t = mte.tensor([float(rank + 1)])
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    say(f"{world} process(es); the sum of 1..{world} over the ranks: {t.item():g}")

# %% [markdown]
# ## 2. DDP on Digits
# Each rank reads its own shard (`DistributedSampler`: same size on every rank, a new shuffle
# per `set_epoch`). DDP broadcasts rank 0's weights at construction; during `backward` it
# all-reduces the gradients in buckets, started from gradient hooks as each bucket fills, and
# divides by the world size. The global batch is 32 whatever the number of processes.

# %%
def train(hook=None, epochs=3, seed=0):
    from minitorch_edge.distributed.algorithms.ddp_comm_hooks import make_hook
    train_set, test_set = Digits(train=True), Digits(train=False)
    if FAST:
        train_set = mte.data.Subset(train_set, range(0, len(train_set), 3))
    mte.manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    if hook is not None:
        ddp.register_comm_hook(*make_hook(hook))
    opt = mte.optim.SGD(ddp.parameters(), lr=0.2)
    sampler = DistributedSampler(train_set, seed=seed)
    loader = DataLoader(train_set, batch_size=max(1, 32 // world), sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(ddp(x), y).backward()
            opt.step()
    X = mte.tensor(test_set.data.numpy()[:, None] / 16.0, dtype=mte.float32)
    with mte.no_grad():
        accuracy = float((model(X).argmax(1).numpy() == test_set.targets.numpy()).mean())
    return model, accuracy, ddp.comm_stats()["bytes_per_step"]


if HAVE_MPI:
    EPOCHS = 1 if FAST else 3
    model, acc, plain_bytes = train(epochs=EPOCHS)
    say(f"DDP, no compression: test accuracy {acc:.3f}, {plain_bytes} bytes per step per rank")

# %% [markdown]
# Every rank now holds exactly the same weights (the averaged gradients were identical):

# %%
if HAVE_MPI:
    flat = mte.tensor(np.concatenate([p.detach().numpy().ravel() for p in model.parameters()]))
    copies = [mte.zeros_like(flat) for _ in range(world)]
    dist.all_gather(copies, flat)
    say("weights identical on all ranks:", all(np.array_equal(c.numpy(), flat.numpy())
                                               for c in copies))

# %% [markdown]
# ## 3. Gradient compression
# A communication hook replaces the all-reduce of each bucket. The float32 gradients cost 4
# bytes a value; int8 sends 1 byte (and one scale per bucket), int4 half a byte, 1-bit SGD one
# bit (and the mean of the positive and of the negative values), top-k 1 % of the values with
# their indices, PowerSGD a rank-1 factorisation P Q^T of each weight matrix. The compressed
# payloads are all-gathered and every rank decodes and averages them.

# %%
if HAVE_MPI:
    say(f"{'hook':9} {'bytes/step':>10} {'smaller':>8} {'accuracy':>8}")
    say(f"{'none':9} {plain_bytes:10d} {'1.0x':>8} {acc:8.3f}")
    for hook in (["sign", "powersgd"] if FAST else ["int8", "int4", "sign", "topk", "powersgd"]):
        _, acc_h, bytes_h = train(hook, epochs=EPOCHS)
        say(f"{hook:9} {bytes_h:10d} {plain_bytes / bytes_h:7.1f}x {acc_h:8.3f}")

# %% [markdown]
# Error feedback is what keeps 1-bit SGD learning. The compressor keeps a residual per bucket:
# `sent + residual == gradient + previous residual`, exactly. Without it, the sign of a small
# but steady gradient component would be lost every step.

# %%
from minitorch_edge.distributed.compression import SignCompressor  # noqa: E402

comp = SignCompressor()
rng = np.random.default_rng(0)
total, sent_total = np.zeros(8), np.zeros(8)
for step in range(50):
    g = rng.standard_normal(8) * 0.1 + np.linspace(-1, 1, 8)     # noise around a steady mean
    payload, sent = comp.compress("bucket", g)
    total, sent_total = total + g, sent_total + sent
say(f"1-bit payload: {payload.nbytes} bytes for 8 float64 values ({8 * 8} bytes)")
say("sent + residual == total:", np.allclose(sent_total + comp.residuals["bucket"], total))
say("mean sent per step  :", np.round(sent_total / 50, 2))
say("mean gradient       :", np.round(total / 50, 2))

# %% [markdown]
# ## 4. A parameter server (3+ processes)
# The seed article's other topology: rank 0 holds the weights and applies each worker's push as
# it arrives; workers pull, compute, push, at most `staleness` steps ahead of the slowest. With
# `staleness=0` it is synchronous SGD. Run with `mpiexec -n 3` or more to see it.

# %%
if HAVE_MPI and world >= 3:
    from minitorch_edge.distributed.parameter_server import ParameterServer
    train_set = Digits(train=True)
    mte.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    opt = mte.optim.SGD(model.parameters(), lr=0.2) if rank == 0 else None
    ps = ParameterServer(model, opt, staleness=2, compression="int8")
    if rank == 0:
        say("parameter server:", ps.serve())
    else:
        loader = DataLoader(train_set, batch_size=16,
                            sampler=DistributedSampler(train_set, world - 1, rank - 1))
        for x, y in loader:
            ps.pull()
            model.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            ps.push()
        ps.close()
elif HAVE_MPI:
    say("(the parameter server needs mpiexec -n 3 or more; skipped)")

# %%
if HAVE_MPI:
    dist.destroy_process_group()
