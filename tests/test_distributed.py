"""minitorch_edge.distributed, DDP, DistributedSampler, the compressors and the parameter server.

The multi-process checks run as real MPI jobs: ``mpiexec -n 2`` and ``-n 4`` launch
tests/dist_scripts/checks.py, whose checks compare against references computed in the same
processes (one process on the union of the ranks' batches). The failure tests launch a job in
which rank 1 raises, dies or skips a collective, and require every rank to stop, with a message
naming the rank, well within the timeout. Everything skips when mpi4py (or mpiexec) is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import nn
from minitorch_edge.data import DistributedSampler

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPT = os.path.join(HERE, "dist_scripts", "checks.py")


def _mpiexec():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    near = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return near if os.path.exists(near) else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
needs_mpi = pytest.mark.skipif(MPIEXEC is None, reason="mpi4py or mpiexec missing "
                               "(pip install 'minitorch_edge[distributed]')")


def launch(n, *checks, timeout_s=20, mpiexec_args=(), limit=120):
    env = dict(os.environ, MTE_DIST_TIMEOUT=str(timeout_s),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    start = time.monotonic()
    proc = subprocess.run([MPIEXEC, *mpiexec_args, "-n", str(n), sys.executable, SCRIPT, *checks],
                          env=env, capture_output=True, text=True, timeout=limit)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


@needs_mpi
def test_two_ranks_collectives_ddp_hooks_convergence():
    checks = ["collectives", "ddp", "buffers_broadcast", "trainer", "hooks", "converges"]
    rc, out, _ = launch(2, *checks)
    assert rc == 0, out
    for c in checks:
        assert f"OK {c}" in out, out


@needs_mpi
def test_four_ranks_ddp_hooks_parameter_server():
    checks = ["collectives", "ddp", "trainer", "hooks", "parameter_server"]
    rc, out, _ = launch(4, *checks)
    assert rc == 0, out
    for c in checks:
        assert f"OK {c}" in out, out


@needs_mpi
def test_a_rank_that_raises_stops_every_rank_naming_it():
    rc, out, elapsed = launch(2, "fail_raise", timeout_s=30)
    assert rc != 0
    assert "rank 1: ValueError: boom from the test" in out, out
    assert elapsed < 25                               # aborted, not timed out


@needs_mpi
def test_a_rank_that_dies_stops_every_rank_naming_it():
    import io
    from minitorch_edge.distributed.launch import launch as launch_job
    out = io.StringIO()
    env = dict(os.environ, MTE_DIST_TIMEOUT="30",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    start = time.monotonic()
    rc = launch_job(2, [sys.executable, SCRIPT, "fail_die"], env=env, out=out, timeout=60)
    assert rc != 0 and time.monotonic() - start < 25, out.getvalue()
    assert re.search(r"minitorch-edge: rank 1 \(pid \d+\) died", out.getvalue()), out.getvalue()


@needs_mpi
def test_a_collective_that_a_rank_skips_times_out():
    rc, out, elapsed = launch(2, "fail_timeout", timeout_s=1)
    assert rc != 0
    assert "rank 0: DistributedError: all_reduce failed on rank 0 of 2: timed out after 1 s" in out
    assert elapsed < 20


# ---- one process, in this process ---------------------------------------------------------------
@needs_mpi
def test_world_size_one_without_mpiexec():
    from minitorch_edge import distributed as dist
    with pytest.raises(ValueError, match="backend 'gloo' is not available.*backend='mpi'"):
        dist.init_process_group("gloo")
    dist.init_process_group("mpi", timeout=5)
    try:
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        with pytest.raises(dist.DistributedError, match="twice"):
            dist.init_process_group()
        t = mte.tensor([1.0, -2.0])
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        dist.broadcast(t, 0)
        assert t.tolist() == [1.0, -2.0]
        assert dist.all_reduce(t, async_op=True).wait()
        mte.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).double()
        mte.manual_seed(0)
        ref = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).double()
        ddp = nn.parallel.DistributedDataParallel(model)
        assert ddp.module is model and list(ddp.state_dict())[0].startswith("module.")
        x = mte.tensor(np.random.default_rng(0).standard_normal((5, 3)))
        ddp(x).pow(2).sum().backward()
        ref(x).pow(2).sum().backward()
        for p, q in zip(model.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=0, atol=1e-15)
        assert ddp.comm_stats()["bytes_per_step"] == sum(p.numel() * 8 for p in model.parameters())
        # overlap: the last layer's bucket starts while backward still runs the first layer
        from minitorch_edge.distributed.algorithms.ddp_comm_hooks import allreduce_hook
        events, first, last = [], nn.Linear(3, 4), nn.Linear(4, 2)
        ddp = nn.parallel.DistributedDataParallel(nn.Sequential(first, last), bucket_cap_mb=1e-5)
        ddp.register_comm_hook(None, lambda st, b: events.append(b.index()) or
                               allreduce_hook(st, b))
        h = first(mte.ones(2, 3))
        h.register_hook(lambda g: events.append("first layer's backward"))
        last(h.relu()).sum().backward()
        assert events.index(0) < events.index("first layer's backward") < events.index(3), events
        for find_unused in (False, True):       # a model that leaves "b" unused
            unused = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Linear(2, 2)})
            nn.parallel.DistributedDataParallel(unused, find_unused_parameters=find_unused)
            if not find_unused:
                with pytest.raises(RuntimeError, match=r"parameters \[2, 3\].*"
                                                       r"find_unused_parameters=True"):
                    unused["a"](mte.ones(1, 2)).sum().backward()
            else:
                unused["a"](mte.ones(1, 2)).sum().backward()
                assert unused["b"].weight.grad.abs().sum().item() == 0
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        nn.parallel.DistributedDataParallel(nn.Linear(2, 2))


# ---- no MPI needed ------------------------------------------------------------------------------
def test_distributed_sampler_is_torchs_index_for_index():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DistributedSampler as TorchSampler
    cases = [(10, 4, True, False, 0), (10, 4, True, True, 3), (1797, 3, True, False, 1),
             (5, 8, False, False, 0), (3, 8, True, False, 2), (7, 2, False, True, 0)]
    for n, replicas, shuffle, drop_last, epoch in cases:
        for rank in range(replicas):
            ours = DistributedSampler(range(n), replicas, rank, shuffle, seed=7,
                                      drop_last=drop_last)
            theirs = TorchSampler(range(n), replicas, rank, shuffle, seed=7, drop_last=drop_last)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs), (n, replicas, rank)
    del torch


def test_distributed_sampler_shards_cover_the_dataset():
    n, replicas = 11, 3
    shards = [list(DistributedSampler(range(n), replicas, r, seed=1)) for r in range(replicas)]
    assert {len(s) for s in shards} == {4}
    assert set(i for s in shards for i in s) == set(range(n))          # 1 index padded twice
    assert list(DistributedSampler(range(n), replicas, 0, seed=1)) != \
        list(_at_epoch(DistributedSampler(range(n), replicas, 0, seed=1), 1))
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(range(4), 3, 3)
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedSampler(range(4))


def _at_epoch(sampler, epoch):
    sampler.set_epoch(epoch)
    return sampler


@pytest.mark.parametrize("name", ["int8", "int4", "sign", "topk0.1"])
def test_compressors_conserve_with_error_feedback(name):
    from minitorch_edge.distributed.compression import make_compressor
    comp = make_compressor(name)
    rng = np.random.default_rng(0)
    total_in, total_sent = np.zeros(101), np.zeros(101)
    for _ in range(20):
        g = rng.standard_normal(101)
        payload, sent = comp.compress("b", g)
        assert payload.dtype == np.uint8 and payload.nbytes == comp.payload_size(101)
        np.testing.assert_array_equal(sent, comp.decode(payload, 101, np.dtype(np.float64)))
        total_in += g
        total_sent += sent
    # nothing is lost, only delayed: what was sent + what is still owed == everything
    np.testing.assert_allclose(total_sent + comp.residuals["b"], total_in, rtol=0, atol=1e-10)
    assert comp.bytes_sent == 20 * comp.payload_size(101) < 20 * 101 * 4
    if name == "int8":      # the error of one step is at most half a level
        g = rng.standard_normal(50)
        fresh = make_compressor(name, error_feedback=False)
        _, sent = fresh.compress("x", g)
        assert np.abs(sent - g).max() <= np.abs(g).max() / 127 / 2 + 1e-6 and not fresh.residuals


def test_compressor_bad_names():
    from minitorch_edge.distributed.compression import Quantizer, make_compressor
    with pytest.raises(ValueError, match="unknown compressor 'int3'"):
        make_compressor("int3")
    with pytest.raises(ValueError, match="bits must be 4 or 8"):
        Quantizer(bits=2)


def test_import_needs_no_mpi4py():
    code = ("import sys; sys.modules['mpi4py'] = None; import minitorch_edge as m; "
            "import minitorch_edge.distributed as d; import minitorch_edge.nn.parallel; "
            "print(d.is_available(), d.is_mpi_available(), d.is_initialized())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert out.stdout.split() == ["True", "False", "False"], out.stderr


@needs_mpi
def test_cli_train_nproc_runs_mpiexec_and_rank_0_writes(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, MTE_DIST_TIMEOUT="60",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "minitorch_edge", "train", "--nproc", "2",
                           "--epochs", "1", "--set", "dataset.test_fraction=0.5",
                           "--out", str(out)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("epoch 1/1") == 1 and proc.stdout.count("test accuracy") == 1
    assert sorted(os.listdir(out)) == ["checkpoint.safetensors", "config.json",
                                       "last.safetensors", "metrics.csv", "steps.csv"]
    assert sorted(os.listdir(tmp_path)) == ["run"]


def test_cli_nproc_without_mpiexec_is_a_clear_error(monkeypatch):
    from minitorch_edge import cli
    from minitorch_edge.distributed import launch
    monkeypatch.setattr(launch.shutil, "which", lambda name: None)
    monkeypatch.setattr(launch.os.path, "exists", lambda path: False)
    monkeypatch.delenv("MTE_DIST_LAUNCHED", raising=False)
    with pytest.raises(FileNotFoundError, match="mpiexec not found.*distributed"):
        launch.find_mpiexec()
    assert cli.main(["train", "--nproc", "2"]) == 2
    assert cli.main(["train", "--nproc", "0"]) == 2
