"""Checks run under ``mpiexec -n N python checks.py NAME ...`` by tests/test_distributed.py.

Each check raises AssertionError on failure; rank 0 prints ``OK <name>`` after each check passed
on every rank. The references are computed in the same process, one rank's work replayed
locally on the whole batch, never hard-coded.
"""
import sys

import numpy as np

import minitorch_edge as mte
from minitorch_edge import distributed as dist, nn
from minitorch_edge.data import DataLoader, DistributedSampler, TensorDataset


def flat_params(model):
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


def same_on_all_ranks(model):
    """Every rank holds exactly rank 0's parameters."""
    mine = mte.tensor(flat_params(model))
    theirs = [mte.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(theirs, mine)
    for r, t in enumerate(theirs):
        assert np.array_equal(t.numpy(), mine.numpy()), f"rank {r}'s parameters differ"


def mlp(seed=0, bn=False):
    mte.manual_seed(seed)
    layers = [nn.Linear(6, 9), nn.Tanh()]
    if bn:
        layers.append(nn.BatchNorm1d(9))
    layers.append(nn.Linear(9, 4))
    return nn.Sequential(*layers).double()


def dataset(n=23):
    rng = np.random.default_rng(5)
    return TensorDataset(mte.tensor(rng.standard_normal((n, 6))), mte.tensor(rng.integers(0, 4, n)))


def check_ddp_equals_one_process(accumulate):
    """N ranks on a sampler's shards == one process on the union of the shards, every step (two
    epochs, a smaller last batch, `accumulate` micro-batches per step under no_sync)."""
    W, rank = dist.get_world_size(), dist.get_rank()
    ds, batch = dataset(), 5
    model, ref = mlp(), mlp()
    if rank:                                          # construction must broadcast rank 0's
        with mte.no_grad():
            for p in model.parameters():
                p.add_(rank)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0005)
    assert len(ddp._buckets) > 1
    opt = mte.optim.SGD(ddp.parameters(), lr=0.2, momentum=0.9)
    opt_ref = mte.optim.SGD(ref.parameters(), lr=0.2, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    samplers = [DistributedSampler(ds, W, r, shuffle=True, seed=3) for r in range(W)]
    for epoch in range(2):
        for s in samplers:
            s.set_epoch(epoch)
        mine = DataLoader(ds, batch_size=batch, sampler=samplers[rank])
        shards = [list(DataLoader(ds, batch_size=batch, sampler=s)) for s in samplers]
        assert len(shards[0][-1][1]) < batch      # a smaller last batch
        for i, (x, y) in enumerate(mine):
            sync = (i + 1) % accumulate == 0 or i == len(mine) - 1
            if sync:
                loss_fn(ddp(x), y).backward()
            else:
                with ddp.no_sync():
                    loss_fn(ddp(x), y).backward()
            X = mte.cat([shards[r][i][0] for r in range(W)])
            Y = mte.cat([shards[r][i][1] for r in range(W)])
            loss_fn(ref(X), Y).backward()             # the mean over the union of the shards
            if sync:
                opt.step()
                opt.zero_grad()
                opt_ref.step()
                opt_ref.zero_grad()
                diff = np.abs(flat_params(model) - flat_params(ref)).max()
                assert diff < 1e-12, f"epoch {epoch} step {i}: DDP - one process = {diff}"
    same_on_all_ranks(model)


def check_ddp():
    check_ddp_equals_one_process(accumulate=1)
    check_ddp_equals_one_process(accumulate=3)


def check_buffers_broadcast():
    """BatchNorm statistics: rank 0's reach every rank at each forward."""
    model = mlp(bn=True)
    ddp = nn.parallel.DistributedDataParallel(model)
    x = mte.tensor(np.random.default_rng(dist.get_rank()).standard_normal((4, 6)))
    for _ in range(2):
        ddp(x).sum().backward()
    ddp.eval()
    ddp(x)                       # broadcast again (eval: this forward changes no statistics)
    bn = model[2]
    stats = mte.tensor(np.concatenate([bn.running_mean.numpy(), bn.running_var.numpy()]))
    gathered = [mte.zeros_like(stats) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, stats)
    for g in gathered:
        assert np.array_equal(g.numpy(), gathered[0].numpy())


def check_trainer():
    """The Trainer with a DDP model: gradient accumulation over an odd number of batches (the
    last step syncs a partial accumulation), replicas identical after, rank 0 alone logs."""
    import io
    from contextlib import redirect_stdout
    from minitorch_edge.train import Trainer
    ds = dataset(20)
    model = mlp()
    ddp = nn.parallel.DistributedDataParallel(model)
    loader = DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds, seed=4))
    printed = io.StringIO()
    with redirect_stdout(printed):
        trainer = Trainer(ddp, mte.optim.SGD(ddp.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                          grad_accum_steps=2, verbose=1)
        trainer.fit(loader, epochs=2)
    assert len(loader) % 2 == 1
    assert bool(printed.getvalue().strip()) == (dist.get_rank() == 0), printed.getvalue()
    assert trainer.is_main_process == (dist.get_rank() == 0)
    same_on_all_ranks(model)


def check_collectives():
    W, rank = dist.get_world_size(), dist.get_rank()
    base = np.arange(6, dtype=np.float64).reshape(2, 3)
    for op, fn in [(dist.ReduceOp.SUM, sum), (dist.ReduceOp.MAX, np.maximum.reduce),
                   (dist.ReduceOp.MIN, np.minimum.reduce),
                   (dist.ReduceOp.AVG, lambda xs: sum(xs) / len(xs))]:
        t = mte.tensor(base * (rank + 1))
        dist.all_reduce(t, op=op)
        assert np.allclose(t.numpy(), fn([base * (r + 1) for r in range(W)])), op
    t = mte.tensor(base * (rank + 1))
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    assert np.allclose(t.numpy(), base * W * (W + 1) / 2)
    t = mte.tensor(np.full(3, float(rank)))
    dist.broadcast(t, src=W - 1)
    assert np.all(t.numpy() == W - 1)
    out = [mte.zeros(2) for _ in range(W)]
    dist.all_gather(out, mte.tensor([rank, 10.0 * rank]))
    assert [o.tolist() for o in out] == [[r, 10.0 * r] for r in range(W)]
    out = mte.zeros(2)
    dist.reduce_scatter(out, [mte.tensor([r + rank, 1.0]) for r in range(W)])
    assert out.tolist() == [W * rank + W * (W - 1) / 2, W]
    t = mte.tensor([float(rank)])
    dist.reduce(t, dst=0)
    if rank == 0:
        assert t.item() == W * (W - 1) / 2
    g = [mte.zeros(1) for _ in range(W)] if rank == 0 else None
    dist.gather(mte.tensor([rank * 2.0]), g, dst=0)
    if rank == 0:
        assert [x.item() for x in g] == [2.0 * r for r in range(W)]
    t = mte.zeros(1)
    dist.scatter(t, [mte.tensor([r + 0.5]) for r in range(W)] if rank == 0 else None, src=0)
    assert t.item() == rank + 0.5
    dist.barrier()


def check_hooks():
    """Each hook: error feedback conserves (sent + residual == gradient + old residual), the
    hook's output is the ranks' average of what they sent, and bytes are counted."""
    from minitorch_edge.distributed.algorithms.ddp_comm_hooks import HOOK_NAMES, make_hook
    ds = dataset(40)
    for name in HOOK_NAMES:
        model = mlp()
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0005)
        state, hook = make_hook(name, ratio=0.2) if name == "topk" else make_hook(name)
        ddp.register_comm_hook(state, hook)
        residuals = {}
        loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds, seed=1))
        for x, y in loader:
            model.zero_grad()
            local = {}                                # the local gradient each bucket's hook sees
            orig = ddp._launch

            def spy(b, orig=orig, local=local):
                local[b.index] = np.concatenate([p.grad.numpy().ravel() for p in b.params])
                orig(b)
            ddp._launch = spy
            nn.CrossEntropyLoss()(ddp(x), y).backward()
            del ddp._launch
            if name == "allreduce":
                continue
            sent_store = state.compressor.last_sent if hasattr(state, "compressor") else \
                state.last_sent
            res_store = state.compressor.residuals if hasattr(state, "compressor") else \
                state.residuals
            for b in ddp._buckets:
                wanted = local[b.index] + residuals.get(b.index, 0)
                sent, res = sent_store[b.index], res_store[b.index]
                assert np.allclose(sent + res, wanted, rtol=0, atol=1e-12), name
                residuals[b.index] = res.copy()
                avg = mte.tensor(sent.copy())
                dist.all_reduce(avg, op=dist.ReduceOp.AVG)
                out = np.concatenate([p.grad.numpy().ravel() for p in b.params])
                assert np.allclose(out, avg.numpy(), atol=1e-12), name
        stats = ddp.comm_stats()
        assert stats["bytes_per_step"] > 0 and stats["steps"] == len(loader), (name, stats)
        same_on_all_ranks(model)
        if dist.get_rank() == 0:
            print(f"  {name}: {stats['bytes_per_step']} bytes/step")


def check_converges():
    """The compressed hooks with error feedback still learn Digits (3 epochs, > 85 %)."""
    from minitorch_edge.data.datasets import Digits
    from minitorch_edge.distributed.algorithms.ddp_comm_hooks import make_hook
    train, test = Digits(train=True), Digits(train=False)
    Xt = mte.tensor(test.data.numpy().reshape(len(test), -1) / 16.0, dtype=mte.float32)
    for name in ("sign", "int4", "topk", "powersgd"):
        mte.manual_seed(0)
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
        ddp = nn.parallel.DistributedDataParallel(model)
        ddp.register_comm_hook(*make_hook(name))
        opt = mte.optim.SGD(ddp.parameters(), lr=0.3)   # (error feedback + momentum 0.9: worse)
        sampler = DistributedSampler(train, seed=0)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x, y in DataLoader(train, batch_size=32 // dist.get_world_size(), sampler=sampler):
                opt.zero_grad()
                nn.CrossEntropyLoss()(ddp(x), y).backward()
                opt.step()
        with mte.no_grad():
            acc = (model(Xt).argmax(1).numpy() == test.targets.numpy()).mean()
        assert acc > 0.85, f"{name}: accuracy {acc:.3f} after 3 epochs"
        if dist.get_rank() == 0:
            print(f"  {name}: accuracy {acc:.3f}")


def check_parameter_server():
    """Staleness 0 == synchronous SGD on the union of the workers' batches (rank 0 serves);
    staleness 2 with int8 pushes runs, and its recorded staleness stays bounded."""
    from minitorch_edge.distributed.parameter_server import ParameterServer
    W, rank = dist.get_world_size(), dist.get_rank()
    workers = W - 1
    ds = dataset(8 * workers * 3)
    loss_fn = nn.CrossEntropyLoss()

    def batches(w):                                   # worker w's batches, as every rank knows
        return list(DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, workers, w,
                                                                            shuffle=False)))
    for staleness, compression in ((0, None), (2, "int8")):
        model = mlp()
        opt = mte.optim.SGD(model.parameters(), lr=0.3) if rank == 0 else None
        ps = ParameterServer(model, opt, staleness=staleness, compression=compression)
        if rank == 0:
            summary = ps.serve()
            assert summary["pushes"] == workers * 3
            if staleness == 0:
                ref = mlp()
                ref_opt = mte.optim.SGD(ref.parameters(), lr=0.3)
                for i in range(3):
                    X = mte.cat([batches(w)[i][0] for w in range(workers)])
                    Y = mte.cat([batches(w)[i][1] for w in range(workers)])
                    ref_opt.zero_grad()
                    loss_fn(ref(X), Y).backward()
                    ref_opt.step()
                diff = np.abs(flat_params(model) - flat_params(ref)).max()
                assert diff < 1e-12, f"staleness 0 differs from synchronous SGD by {diff}"
                assert summary["max_staleness"] <= workers - 1
            print(f"  staleness={staleness} compression={compression}: {summary}")
        else:
            for x, y in batches(rank - 1):
                ps.pull()
                model.zero_grad()
                loss_fn(model(x), y).backward()
                ps.push()
            ps.close()
            if compression:
                assert ps.bytes_pushed < 3 * sum(p.numel() for p in model.parameters()) * 8 / 7
        dist.barrier()


def check_fail_raise():
    """Rank 1 raises in the middle of training: all ranks must stop, naming rank 1."""
    if dist.get_rank() == 1:
        raise ValueError("boom from the test")
    t = mte.ones(3)
    dist.all_reduce(t)


def check_fail_die():
    """Rank 1 is killed in the middle of training (after a first collective)."""
    import os
    dist.all_reduce(mte.ones(3))
    if dist.get_rank() == 1:
        os.kill(os.getpid(), 9)          # as the OOM killer would
    dist.all_reduce(mte.ones(3))


def check_fail_timeout():
    """Rank 1 skips a collective (and idles): rank 0's all_reduce must time out, not hang."""
    import time
    if dist.get_rank() == 1:
        time.sleep(30)
        return
    dist.all_reduce(mte.ones(3))


CHECKS = {name[6:]: fn for name, fn in globals().items() if name.startswith("check_")}

if __name__ == "__main__":
    dist.init_process_group("mpi")
    for name in sys.argv[1:]:
        CHECKS[name]()
        dist.barrier()
        if dist.get_rank() == 0:
            print(f"OK {name}", flush=True)
    dist.destroy_process_group()
