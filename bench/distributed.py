"""Data-parallel training over MPI: time and bytes per step, and accuracy, per compression hook.

    python bench/distributed.py [--nproc 1 2 4] [--epochs 3] [--models mlp small_cnn]
        [--hooks none int8 int4 sign topk powersgd] [--json out.json]

Without MTE_DIST_LAUNCHED the script launches itself once per process count with
``mpiexec -n N`` (minitorch_edge.distributed.launch) and prints one table. Under mpiexec each
process trains a DistributedDataParallel replica on its DistributedSampler shard of Digits
(the 80 % train split), the global batch fixed at --batch (32) so every process count takes
the same steps; SGD (--lr 0.2, --momentum 0: error feedback with momentum 0.9 learns worse).

Per run: ms per step (the training loop's wall time / steps, rank 0), the bytes one rank puts
on the wire per step (the DDP buckets' payloads: all-reduce of the float32 gradients for
"none"; the compressed payloads otherwise, all-gathered), their ratio to "none", and the test
accuracy after the epochs. The ranks share this machine's cores (each process gets
cpu_count // N native threads), so more processes than cores show correctness and bytes, not
speed-up; on a machine shared with other jobs the times are noisy.
"""
import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

LAUNCHED = "MTE_DIST_LAUNCHED"


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nproc", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=32, help="global batch (all processes)")
    p.add_argument("--lr", type=float, default=0.2)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--models", nargs="+", default=["mlp", "small_cnn"])
    p.add_argument("--hooks", nargs="+", default=["none", "int8", "int4", "sign", "topk",
                                                  "powersgd"])
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--result", help=argparse.SUPPRESS)      # rank 0's rows (launched runs)
    return p.parse_args(argv)


def make_model(name):
    from minitorch_edge import models
    if name == "mlp":
        return models.MLP(in_features=64, hidden=(128,), out_features=10)
    return models.SmallCNN(input_size=8, padding=1)


def train_one(model_name, hook, args):
    import numpy as np
    import minitorch_edge as mte
    from minitorch_edge import distributed as dist, nn
    from minitorch_edge.data import DataLoader, DistributedSampler
    from minitorch_edge.data.datasets import Digits
    from minitorch_edge.distributed.algorithms.ddp_comm_hooks import make_hook
    world = dist.get_world_size()
    train, test = Digits(train=True), Digits(train=False)
    mte.manual_seed(0)
    model = make_model(model_name)
    ddp = nn.parallel.DistributedDataParallel(model)
    if hook != "none":
        ddp.register_comm_hook(*make_hook(hook))
    opt = mte.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = nn.CrossEntropyLoss()
    sampler = DistributedSampler(train, seed=0)
    loader = DataLoader(train, batch_size=max(1, args.batch // world), sampler=sampler)
    steps, seconds = 0, 0.0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        dist.barrier()
        start = time.perf_counter()
        for x, y in loader:
            if model_name == "mlp":
                x = x.reshape(x.shape[0], -1)
            opt.zero_grad()
            loss_fn(ddp(x), y).backward()
            opt.step()
            steps += 1
        seconds += time.perf_counter() - start
    X = mte.tensor(np.stack([test[i][0].numpy() for i in range(len(test))]))
    if model_name == "mlp":
        X = X.reshape(len(test), -1)
    model.eval()
    with mte.no_grad():
        acc = float((model(X).argmax(1).numpy() == test.targets.numpy()).mean())
    return {"model": model_name, "hook": hook, "nproc": world, "steps": steps,
            "ms_per_step": 1000 * seconds / steps,
            "bytes_per_step": ddp.comm_stats()["bytes_per_step"], "accuracy": acc}


def worker(args):
    from minitorch_edge import backend, distributed as dist
    dist.init_process_group("mpi")
    # the processes share the cores: each gets its share of threads (2 cores, -n 1: 2 threads)
    backend.set_num_threads(max(1, (os.cpu_count() or 1) // dist.get_world_size()))
    rows = [train_one(m, h, args) for m in args.models for h in args.hooks]
    if dist.get_rank() == 0 and args.result:
        with open(args.result, "w") as f:
            json.dump(rows, f)
    dist.destroy_process_group()


def main(argv=None):
    args = parse(argv)
    if os.environ.get(LAUNCHED) == "1":
        return worker(args)
    from minitorch_edge.distributed.launch import launch
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nproc:
            result = os.path.join(tmp, f"rows{n}.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--epochs", str(args.epochs),
                   "--batch", str(args.batch), "--lr", str(args.lr),
                   "--momentum", str(args.momentum), "--models", *args.models,
                   "--hooks", *args.hooks,
                   "--result", result]
            print(f"mpiexec -n {n} ...", flush=True)
            rc = launch(n, cmd, env=dict(os.environ, **{LAUNCHED: "1"}))
            if rc:
                raise SystemExit(f"bench/distributed.py: the -n {n} run failed (exit {rc})")
            with open(result) as f:
                rows += json.load(f)
    base = {(r["model"], r["nproc"]): r["bytes_per_step"] for r in rows if r["hook"] == "none"}
    print(f"\n{'model':10} {'hook':9} {'n':>2} {'ms/step':>8} {'bytes/step':>11} {'ratio':>7} "
          f"{'accuracy':>8}")
    for r in rows:
        ref = base.get((r["model"], r["nproc"]))
        ratio = f"{ref / r['bytes_per_step']:.1f}x" if ref and r["bytes_per_step"] else "-"
        print(f"{r['model']:10} {r['hook']:9} {r['nproc']:>2} {r['ms_per_step']:8.2f} "
              f"{r['bytes_per_step']:11d} {ratio:>7} {r['accuracy']:8.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
