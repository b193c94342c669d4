"""minitorch_edge.data: datasets, samplers, collation (against torch's) and the DataLoader,
including its worker processes: order, seeding, sharding, errors, dead workers, timeouts,
persistent workers and shutdown. Every test that could hang runs under a SIGALRM deadline."""
import collections
import contextlib
import gc
import os
import random
import signal
import time

import numpy as np
import pytest
from hypothesis import given, strategies as st

import minitorch_edge as mt
from minitorch_edge.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                                 IterableDataset, RandomSampler, SequentialSampler, Subset,
                                 SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                                 default_collate, default_convert, get_worker_info,
                                 random_split, transforms as T)


def _torch():
    return pytest.importorskip("torch")


@contextlib.contextmanager
def deadline(seconds):
    """Fail (instead of hanging the suite) when the block runs longer than `seconds`."""
    def on_alarm(signum, frame):
        raise TimeoutError(f"test block did not finish within {seconds} s (a hang)")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def plain(obj):
    """Tensors -> lists, recursively, so whole batches compare with ==."""
    if isinstance(obj, mt.Tensor):
        return obj.tolist()
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj


def batches(loader):
    with deadline(30):
        return [plain(b) for b in loader]


# ---- datasets -----------------------------------------------------------------------------------
def test_tensor_dataset_subset_concat():
    x, y = mt.arange(12).reshape(6, 2), mt.arange(6) * 10
    ds = TensorDataset(x, y)
    assert len(ds) == 6 and ds[2][0].tolist() == [4, 5] and ds[2][1].item() == 20
    with pytest.raises(ValueError, match="size mismatch.*\\[6, 5\\]"):
        TensorDataset(x, mt.arange(5))
    sub = Subset(ds, [5, 0, 3])
    assert len(sub) == 3 and sub[0][1].item() == 50 and sub[2][1].item() == 30
    cat = ConcatDataset([sub, ds])
    assert len(cat) == 9 and cat[3][1].item() == 0 and cat[-1][1].item() == 50
    assert (sub + ds)[4][1].item() == 10
    with pytest.raises(IndexError):
        cat[9]
    with pytest.raises(ValueError, match="should not exceed"):
        cat[-10]
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])


@pytest.mark.parametrize("lengths", [[0.8, 0.2], [0.34, 0.33, 0.33], [0.5, 0.5], [7, 3],
                                     [0.1, 0.1, 0.1, 0.7], [1]])
def test_random_split_lengths_match_torch(lengths):
    torch = _torch()
    for n in (10, 17, 101):
        if all(isinstance(v, int) for v in lengths) and sum(lengths) != n:
            if lengths != [1]:
                continue
        ref = torch.utils.data.random_split(range(n), lengths)
        got = random_split(range(n), lengths, generator=mt.Generator().manual_seed(0))
        assert [len(s) for s in got] == [len(s) for s in ref]
        assert sorted(i for s in got for i in s) == list(range(n))   # disjoint, complete


def test_random_split_is_seeded():
    a = [list(s) for s in random_split(range(50), [30, 20], mt.Generator().manual_seed(3))]
    b = [list(s) for s in random_split(range(50), [30, 20], mt.Generator().manual_seed(3))]
    c = [list(s) for s in random_split(range(50), [30, 20], mt.Generator().manual_seed(4))]
    assert a == b and a != c
    mt.manual_seed(1)
    d = [list(s) for s in random_split(range(50), [0.6, 0.4])]
    mt.manual_seed(1)
    assert d == [list(s) for s in random_split(range(50), [0.6, 0.4])]
    with pytest.raises(ValueError, match="does not equal"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])


# ---- samplers -----------------------------------------------------------------------------------
def test_sequential_and_random_sampler_seeded():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    orders = [list(RandomSampler(range(30), generator=mt.Generator().manual_seed(s)))
              for s in (0, 0, 1)]
    assert orders[0] == orders[1] != orders[2]
    assert sorted(orders[0]) == list(range(30))
    mt.manual_seed(5)
    a = list(RandomSampler(range(30)))
    b = list(RandomSampler(range(30)))
    mt.manual_seed(5)
    assert [a, b] == [list(RandomSampler(range(30))), list(RandomSampler(range(30)))]
    assert a != b                                      # each iter() is a new epoch order


def test_random_sampler_num_samples_and_replacement():
    s = list(RandomSampler(range(7), num_samples=17, generator=mt.Generator().manual_seed(0)))
    assert len(s) == 17 and sorted(s[:7]) == sorted(s[7:14]) == list(range(7))
    draws = list(RandomSampler(range(10), replacement=True, num_samples=20000,
                               generator=mt.Generator().manual_seed(0)))
    counts = np.bincount(draws, minlength=10)
    chi2 = ((counts - 2000) ** 2 / 2000).sum()
    assert chi2 < 27.9                                 # p = 0.001 for 9 degrees of freedom
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)


def test_subset_random_sampler():
    idx = [10, 20, 30, 40]
    a = list(SubsetRandomSampler(idx, generator=mt.Generator().manual_seed(0)))
    assert sorted(a) == idx and len(SubsetRandomSampler(idx)) == 4
    assert a == list(SubsetRandomSampler(idx, generator=mt.Generator().manual_seed(0)))


def test_weighted_random_sampler_distribution():
    w = [1.0, 2.0, 0.0, 7.0]
    draws = list(WeightedRandomSampler(w, 20000, generator=mt.Generator().manual_seed(0)))
    freq = np.bincount(draws, minlength=4) / 20000
    np.testing.assert_allclose(freq, np.array(w) / 10, atol=0.01)
    assert freq[2] == 0
    picks = list(WeightedRandomSampler(mt.tensor([1.0, 1.0, 5.0, 1.0]), 4, replacement=False,
                                       generator=mt.Generator().manual_seed(1)))
    assert sorted(picks) == [0, 1, 2, 3]
    firsts = [list(WeightedRandomSampler([1.0, 1.0, 98.0], 2, replacement=False,
                                         generator=mt.Generator().manual_seed(s)))[0]
              for s in range(50)]
    assert firsts.count(2) > 40
    with pytest.raises(ValueError, match="without replacement from 2 non-zero"):
        WeightedRandomSampler([1, 0, 1], 3, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([1, -1], 3)
    with pytest.raises(ValueError, match="1d sequence"):
        WeightedRandomSampler([[1, 2]], 3)


@given(n=st.integers(0, 40), bs=st.integers(1, 9), drop_last=st.booleans())
def test_batch_sampler_matches_torch(n, bs, drop_last):
    torch = _torch()
    ref = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(n)), bs,
                                        drop_last)
    got = BatchSampler(SequentialSampler(range(n)), bs, drop_last)
    assert list(got) == list(ref) and len(got) == len(ref)


def test_batch_sampler_errors():
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 2, 0)


# ---- collation against torch --------------------------------------------------------------------
Point = collections.namedtuple("Point", "a b")
_DTYPES = ["float32", "float64", "int64", "int32", "uint8", "bool", "int16", "float16"]


def _schema(depth=0):
    leaf = st.one_of(
        st.tuples(st.just("ndarray"), st.sampled_from(_DTYPES),
                  st.lists(st.integers(0, 3), max_size=3).map(tuple)),
        st.tuples(st.just("tensor"), st.sampled_from(_DTYPES),
                  st.lists(st.integers(0, 3), max_size=3).map(tuple)),
        st.tuples(st.just("npscalar"), st.sampled_from(_DTYPES)),
        st.sampled_from([("float",), ("int",), ("bool",), ("str",), ("bytes",)]))
    if depth >= 2:
        return leaf
    kids = st.lists(_schema(depth + 1), min_size=1, max_size=3)
    return st.one_of(leaf, st.tuples(st.just("tuple"), kids), st.tuples(st.just("list"), kids),
                     st.tuples(st.just("dict"), kids), st.tuples(st.just("point"), kids))


def _build(schema, rng, lib):
    kind = schema[0]
    if kind in ("ndarray", "tensor", "npscalar"):
        dtype = np.dtype(schema[1])
        shape = schema[2] if kind != "npscalar" else ()
        arr = np.asarray(rng.random(shape) * 10).astype(dtype)
        if kind == "npscalar":
            return dtype.type(arr)
        if kind == "tensor":
            return lib.from_numpy(arr.copy())
        return arr
    if kind == "float":
        return float(rng.random())
    if kind == "int":
        return int(rng.integers(-5, 5))
    if kind == "bool":
        return bool(rng.integers(0, 2))
    if kind in ("str", "bytes"):
        s = "s%d" % rng.integers(100)
        return s if kind == "str" else s.encode()
    kids = [_build(k, rng, lib) for k in schema[1]]
    if kind == "tuple":
        return tuple(kids)
    if kind == "list":
        return kids
    if kind == "dict":
        return {f"k{i}": v for i, v in enumerate(kids)}
    return Point(kids[0], kids[-1])


def assert_same(mine, ref, torch):
    if isinstance(ref, torch.Tensor):
        assert isinstance(mine, mt.Tensor), type(mine)
        assert mine.dtype.name == str(ref.dtype).replace("torch.", "")
        np.testing.assert_array_equal(mine.numpy(), ref.numpy())
        return
    assert type(mine) is type(ref), (type(mine), type(ref))
    if isinstance(ref, dict):
        assert list(mine) == list(ref)
        for k in ref:
            assert_same(mine[k], ref[k], torch)
    elif isinstance(ref, (list, tuple)):
        assert len(mine) == len(ref)
        for m, r in zip(mine, ref):
            assert_same(m, r, torch)
    elif isinstance(ref, np.ndarray):
        np.testing.assert_array_equal(mine, ref)
    else:
        assert mine == ref


@given(schema=_schema(), n=st.integers(1, 4), seed=st.integers(0, 2 ** 16))
def test_default_collate_matches_torch(schema, n, seed):
    torch = _torch()
    ref_batch = [_build(schema, np.random.default_rng(seed + i), torch) for i in range(n)]
    my_batch = [_build(schema, np.random.default_rng(seed + i), mt) for i in range(n)]
    assert_same(default_collate(my_batch), torch.utils.data.default_collate(ref_batch), torch)
    assert_same(default_convert(my_batch[0]), torch.utils.data.default_convert(ref_batch[0]),
                torch)


def test_default_collate_fixed_cases_match_torch():
    torch = _torch()
    cases = [
        lambda lib: [(np.ones((2, 3), np.float32), 1, 2.5, "a", True),
                     (np.zeros((2, 3), np.float32), 2, 3.5, "b", False)],
        lambda lib: [{"img": lib.ones(2, 2), "y": 3, "p": Point(1.0, np.int32(4))},
                     {"img": lib.zeros(2, 2), "y": 4, "p": Point(2.0, np.int32(5))}],
        lambda lib: [[1, 2.0], [3, 4.0]],
        lambda lib: [collections.OrderedDict(b=np.float64(1), a=[True, "x"]),
                     collections.OrderedDict(b=np.float64(2), a=[False, "y"])],
    ]
    for make in cases:
        assert_same(default_collate(make(mt)), torch.utils.data.default_collate(make(torch)),
                    torch)


def test_default_collate_errors_name_the_field():
    with pytest.raises(RuntimeError, match=r"field \['img'\]\[1\].*sample 0 has shape \(3,\) "
                                           r"but sample 2 has shape \(4,\)"):
        default_collate([{"img": [0, np.ones(3)]}, {"img": [0, np.ones(3)]},
                         {"img": [0, np.ones(4)]}])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1, 2, 3]])
    with pytest.raises(TypeError, match="batch must contain tensors"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])


# ---- DataLoader, one process --------------------------------------------------------------------
class Squares(Dataset):
    def __len__(self):
        return 23

    def __getitem__(self, i):
        return {"x": np.full((2,), i, np.float32), "y": i * i, "name": f"n{i}"}


def test_loader_batches_len_and_drop_last():
    dl = DataLoader(Squares(), batch_size=5)
    out = list(dl)
    assert len(dl) == len(out) == 5
    assert out[0]["y"].tolist() == [0, 1, 4, 9, 16] and out[-1]["x"].shape == (3, 2)
    assert out[1]["name"] == ["n5", "n6", "n7", "n8", "n9"]
    assert len(DataLoader(Squares(), batch_size=5, drop_last=True)) == 4
    assert len(list(DataLoader(Squares(), batch_size=5, drop_last=True))) == 4
    single = list(DataLoader(Squares(), batch_size=None))
    assert len(single) == 23 and single[3]["y"] == 9 and single[3]["x"].shape == (2,)
    bs = DataLoader(Squares(), batch_sampler=[[3, 1], [0]])
    assert [b["y"].tolist() for b in bs] == [[9, 1], [0]]
    custom = DataLoader(Squares(), batch_size=4, collate_fn=lambda b: len(b))
    assert list(custom) == [4] * 5 + [3]


def test_loader_argument_errors():
    ds = Squares()
    cases = [(dict(sampler=SequentialSampler(ds), shuffle=True), "mutually exclusive"),
             (dict(batch_sampler=[[0]], batch_size=2), "mutually exclusive"),
             (dict(batch_size=None, drop_last=True), "mutually exclusive"),
             (dict(num_workers=-1), "non-negative"), (dict(timeout=-1), "non-negative"),
             (dict(prefetch_factor=2), "prefetch_factor"),
             (dict(persistent_workers=True), "num_workers > 0"),
             (dict(multiprocessing_context="fork"), "num_workers > 0"),
             (dict(num_workers=1, multiprocessing_context="threads"), "should be one of")]
    for kwargs, msg in cases:
        with pytest.raises(ValueError, match=msg):
            DataLoader(ds, **kwargs)
    dl = DataLoader(ds)
    with pytest.raises(ValueError, match="should not be set after"):
        dl.batch_size = 3


def test_loader_shuffle_is_seeded():
    ds = TensorDataset(mt.arange(40))

    def epoch(loader):
        return [b[0].tolist() for b in loader]
    g = [DataLoader(ds, batch_size=8, shuffle=True, generator=mt.Generator().manual_seed(s))
         for s in (0, 0, 1)]
    assert epoch(g[0]) == epoch(g[1]) != epoch(g[2])
    mt.manual_seed(7)
    dl = DataLoader(ds, batch_size=8, shuffle=True)
    e1, e2 = epoch(dl), epoch(dl)
    assert e1 != e2 and sorted(sum(e1, [])) == list(range(40))
    mt.manual_seed(7)
    assert [epoch(dl), epoch(dl)] == [e1, e2]


# ---- DataLoader with workers --------------------------------------------------------------------
class Draws(Dataset):
    """Each sample reports who made it and what its RNGs gave."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"i": i, "worker": -1 if info is None else info.id,
                "seed": -1 if info is None else info.seed,
                "mt": mt.rand(1).item(), "np": np.random.random(), "py": random.random(),
                "img": T.RandomRotation(30, interpolation="bilinear")(mt.ones(1, 5, 5))}


def test_workers_give_the_same_batches_in_order():
    mt.manual_seed(3)
    ref = batches(DataLoader(Squares(), batch_size=4, shuffle=True))
    for nw in (1, 2, 3):
        mt.manual_seed(3)
        assert batches(DataLoader(Squares(), batch_size=4, shuffle=True, num_workers=nw)) == ref
    mt.manual_seed(3)
    got = batches(DataLoader(Squares(), batch_size=4, shuffle=True, num_workers=2,
                             prefetch_factor=1))
    assert got == ref
    unordered = batches(DataLoader(Squares(), batch_size=4, num_workers=2, in_order=False))
    assert sorted(y for b in unordered for y in b["y"]) == [i * i for i in range(23)]


def test_worker_seeding_reproducible_and_distinct():
    def run(seed):
        mt.manual_seed(seed)
        with deadline(30):
            return list(DataLoader(Draws(), batch_size=None, num_workers=2))
    a, b, c = run(0), run(0), run(1)
    by_worker = {s["worker"]: s for s in a}
    assert set(by_worker) == {0, 1}
    assert by_worker[1]["seed"] == by_worker[0]["seed"] + 1
    for key in ("mt", "np", "py"):
        assert [s[key] for s in a] == [s[key] for s in b]
        assert [s[key] for s in a] != [s[key] for s in c]
        assert a[0][key] != a[1][key]                  # worker 0 and worker 1 differ
    np.testing.assert_array_equal(a[2]["img"].numpy(), b[2]["img"].numpy())
    assert not np.array_equal(a[0]["img"].numpy(), a[1]["img"].numpy())


_INIT_CALLS = []


def _init_fn(worker_id):
    _INIT_CALLS.append(worker_id * 100)          # in the worker's copy of this module


class ReportsInit(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return (list(_INIT_CALLS), info.id, info.num_workers, info.dataset is self)


def test_worker_init_fn_and_worker_info():
    assert get_worker_info() is None
    out = list(DataLoader(ReportsInit(), batch_size=None, num_workers=2,
                          worker_init_fn=_init_fn))
    assert [o[0] for o in out] == [[0], [100], [0], [100]]
    assert [o[1] for o in out] == [0, 1, 0, 1] and {o[2] for o in out} == {2}
    assert all(o[3] for o in out)
    assert _INIT_CALLS == []                       # not called in the main process


class Stream(IterableDataset):
    def __init__(self, n, shard=True):
        self.n, self.shard = n, shard

    def __len__(self):
        return self.n

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def test_iterable_dataset_sharded_by_worker_info():
    assert batches(DataLoader(Stream(10), batch_size=3)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8],
                                                               [9]]
    assert len(DataLoader(Stream(10), batch_size=3)) == 4
    got = batches(DataLoader(Stream(11), batch_size=3, num_workers=2))
    assert got == [[0, 2, 4], [1, 3, 5], [6, 8, 10], [7, 9]]
    got = batches(DataLoader(Stream(11), batch_size=3, num_workers=3, drop_last=True))
    assert sorted(len(b) for b in got) == [3, 3, 3]
    dup = batches(DataLoader(Stream(5, shard=False), batch_size=None, num_workers=2))
    assert sorted(dup) == sorted(list(range(5)) * 2)       # unsharded: every worker, all of it
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(3), shuffle=True)


class Fails(Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"cannot read sample {i}")
        if i == 9:
            raise KeyError("missing-key")
        return i


class OddError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


class FailsOddly(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        raise OddError(1, 2)


def test_worker_exception_names_worker_and_traceback():
    with deadline(30):
        it = iter(DataLoader(Fails(), batch_size=2, num_workers=2))
        assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
        with pytest.raises(ValueError) as e:
            next(it)
        msg = str(e.value)
        assert msg.startswith("Caught ValueError in DataLoader worker process 0.")
        assert "Original Traceback (most recent call last)" in msg
        assert "cannot read sample 5" in msg and "in __getitem__" in msg
        assert next(it).tolist() == [6, 7]         # a dataset error does not kill the workers
        with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
            next(it)
        del it
        with pytest.raises(RuntimeError, match="Caught OddError in DataLoader worker process"):
            next(iter(DataLoader(FailsOddly(), num_workers=1)))


class Unpicklable(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return lambda: i


def test_unpicklable_batch_is_an_error_not_a_hang():
    with deadline(20), pytest.raises(Exception, match="while pickling the batch"):
        list(DataLoader(Unpicklable(), batch_size=None, num_workers=1))


class Dies(Dataset):
    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 16

    def __getitem__(self, i):
        if i == 9:
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        return i


@pytest.mark.parametrize("how,code", [("kill", -9), ("exit", 3)])
def test_dead_worker_raises_quickly(how, code):
    t0 = time.monotonic()
    with deadline(20):
        dl = DataLoader(Dies(how), batch_size=2, num_workers=2)
        with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid \d+\) exited "
                                               rf"unexpectedly with exit code {code}") as e:
            for _ in dl:
                pass
    assert time.monotonic() - t0 < 10
    assert "worker 0" in str(e.value)


class Slow(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 2:
            time.sleep(1)
        return i


def test_timeout_raises():
    t0 = time.monotonic()
    with deadline(20), pytest.raises(RuntimeError, match=r"timed out after 0.3 seconds"):
        list(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.3))
    assert time.monotonic() - t0 < 5
    assert batches(DataLoader(Slow(), batch_size=3, num_workers=2, timeout=10)) == [[0, 1, 2],
                                                                                   [3, 4, 5]]


class Pids(Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        return (i, os.getpid())


def test_persistent_workers_are_reused():
    with deadline(30):
        dl = DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True)
        epochs = [list(dl) for _ in range(3)]
        pids = [{int(p) for b in e for p in b[1]} for e in epochs]
        assert pids[0] == pids[1] == pids[2] and len(pids[0]) == 2 and os.getpid() not in pids[0]
        for e in epochs:
            assert [i for b in e for i in b[0].tolist()] == list(range(12))
        it = iter(dl)
        next(it)                                   # stop early: stale batches are dropped
        assert [i for b in dl for i in b[0].tolist()] == list(range(12))
        fresh = DataLoader(Pids(), batch_size=2, num_workers=2)
        assert {int(p) for b in fresh for p in b[1]}.isdisjoint(pids[0])
        workers = dl._iterator._workers
        del dl, it
        gc.collect()
        time.sleep(0.1)
        assert not any(w.is_alive() for w in workers)


def test_workers_shut_down_at_end_and_on_del():
    with deadline(30):
        it = iter(DataLoader(Pids(), batch_size=2, num_workers=2))
        workers = it._workers
        list(it)
        assert not any(w.is_alive() for w in workers)
        it = iter(DataLoader(Pids(), batch_size=1, num_workers=2))
        next(it)
        workers = it._workers
        assert all(w.is_alive() for w in workers)
        del it
        gc.collect()
        assert not any(w.is_alive() for w in workers)
        it = iter(DataLoader(Fails(), batch_size=None, num_workers=2))
        workers = it._workers
        try:
            list(it)
        except ValueError as e:
            err = e            # a garbage cycle: traceback -> frame -> iterator
        del it, err
        gc.collect()           # runs the queues' finalizers before the iterator's __del__
        assert [w.exitcode for w in workers] == [0, 0]      # exited by themselves, not killed
        iterable = iter(DataLoader(Stream(6), batch_size=2, num_workers=2))
        workers = iterable._workers
        assert len(list(iterable)) == 4 and not any(w.is_alive() for w in workers)


def test_spawn_context():
    ds = TensorDataset(mt.arange(10).float(), mt.arange(10))
    with deadline(40):
        out = batches(DataLoader(ds, batch_size=4, num_workers=2,
                                 multiprocessing_context="spawn"))
    assert out == batches(DataLoader(ds, batch_size=4))
