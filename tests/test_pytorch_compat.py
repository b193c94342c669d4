"""PyTorch module paths and CPU-build answers, each checked against torch 2.13 (CPU):

* ``utils.data`` as ``torch.utils.data`` (and its dataloader / dataset / sampler submodules);
* ``Module.to`` / ``Tensor.to`` in every form PyTorch accepts, and their errors;
* ``cuda``, ``cuda.amp``, ``backends``, ``accelerator`` and the device attributes, as a CPU-only
  torch build answers them (cuda use raises ``AssertionError: Torch not compiled with CUDA``);
* sampling (multinomial, bernoulli, poisson, normal, the in-place fills): shapes, dtypes and
  errors against torch, distributions checked statistically (seeded; the values themselves come
  from another bit generator, so they cannot match torch's);
* ``Tensor.__format__``; the ``nn.functional`` aliases; the ``nn.modules`` / ``nn.parallel``
  paths; ``bfloat16``; ``save(module)``'s message.
"""
import importlib
import math
import re
import warnings

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import nn
from harness import import_torch

torch = import_torch()
F = nn.functional


def outcome(fn):
    """('ok', value) or ('raise', exception type name) — comparable across the libraries."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", fn()
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        return "raise", type(e).__name__


def same_outcome(fn, *, value=lambda v: v):
    ours, theirs = outcome(lambda: fn(mte)), outcome(lambda: fn(torch))
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "raise":
        assert ours[1] == theirs[1], (ours, theirs)
    else:
        assert value(ours[1]) == value(theirs[1]), (ours, theirs)
    return ours


def dname(d):
    return str(d).split(".")[-1]


# ================================ 1. utils.data =================================================
def test_utils_data_module_paths():
    from minitorch_edge.utils.data import (DataLoader, Dataset, TensorDataset, random_split,  # noqa
                                           Subset, ConcatDataset, RandomSampler,
                                           default_collate, get_worker_info)
    from minitorch_edge.utils.data.dataloader import DataLoader as DL
    from minitorch_edge.utils.data._utils.collate import default_collate as dc
    import minitorch_edge.utils.data.sampler as sampler
    import minitorch_edge.utils.data.dataset as dataset
    assert DL is DataLoader is mte.data.DataLoader and dc is default_collate
    assert sampler.RandomSampler is mte.data.RandomSampler is RandomSampler
    assert dataset.TensorDataset is TensorDataset and dataset.random_split is random_split
    assert mte.utils.data.DataLoader is DataLoader        # reachable after `import mte` alone
    assert get_worker_info() is None
    for mod in ("", ".dataloader", ".dataset", ".sampler"):
        ours = importlib.import_module("minitorch_edge.utils.data" + mod)
        theirs = importlib.import_module("torch.utils.data" + mod)
        for name in ours.__all__:
            assert hasattr(theirs, name), (mod, name)


def test_utils_data_loop_as_in_torch_scripts():
    from minitorch_edge.utils.data import DataLoader, TensorDataset, random_split
    mte.manual_seed(0)
    ds = TensorDataset(mte.arange(10).float(), mte.arange(10))
    train, val = random_split(ds, [8, 2])
    batches = list(DataLoader(train, batch_size=4, shuffle=True))
    assert [b[0].shape for b in batches] == [(4,), (4,)] and len(val) == 2


# ================================ 2. Module.to / Tensor.to ======================================
def _linear(L):
    return L.nn.Linear(2, 2)


MODULE_TO = {
    "device": lambda L, m: m.to(L.device("cpu")),
    "device index 0": lambda L, m: m.to(L.device("cpu", 0)),
    "string": lambda L, m: m.to("cpu"),
    "string:0": lambda L, m: m.to("cpu:0"),
    "dtype": lambda L, m: m.to(L.float64),
    "device, dtype": lambda L, m: m.to("cpu", L.float64),
    "device, dtype, non_blocking": lambda L, m: m.to("cpu", L.float16, True),
    "dtype, non_blocking": lambda L, m: m.to(L.float64, True),
    "tensor": lambda L, m: m.to(L.ones(1, dtype=L.float16)),
    "tensor, non_blocking": lambda L, m: m.to(L.ones(1, dtype=L.float64), non_blocking=True),
    "keywords": lambda L, m: m.to(device="cpu", dtype=L.float64, non_blocking=True),
    "memory_format": lambda L, m: m.to(memory_format=L.channels_last),
    "all": lambda L, m: m.to(L.device("cpu"), L.float32, False,
                             memory_format=L.contiguous_format),
    "nothing": lambda L, m: m.to(),
    "None": lambda L, m: m.to(None),
    "dtype=None": lambda L, m: m.to(dtype=None),
    # errors
    "cuda": lambda L, m: m.to("cuda"),
    "cuda device": lambda L, m: m.to(L.device("cuda")),
    "cuda:0, dtype": lambda L, m: m.to("cuda:0", L.float64),
    "mps": lambda L, m: m.to("mps"),
    "int dtype": lambda L, m: m.to(L.int32),
    "bool dtype": lambda L, m: m.to(dtype=L.bool),
    "copy": lambda L, m: m.to("cpu", copy=True),
    "two devices": lambda L, m: m.to("cpu", "cpu"),
    "two dtypes": lambda L, m: m.to(L.float32, L.float64),
    "dtype, device": lambda L, m: m.to(L.float32, "cpu"),
    "tensor, dtype": lambda L, m: m.to(L.ones(1), L.float64),
    "unknown keyword": lambda L, m: m.to(foo=1),
    "unknown device": lambda L, m: m.to("foo"),
    "device int": lambda L, m: m.to(1),
    "cuda()": lambda L, m: m.cuda(),
}


@pytest.mark.parametrize("form", list(MODULE_TO))
def test_module_to_forms_match_torch(form):
    def run(L):
        m = _linear(L)
        out = MODULE_TO[form](L, m)
        return out is m, dname(m.weight.dtype), dname(m.bias.dtype)
    if form == "unknown device":       # torch: RuntimeError; ours: TypeError (a dtype name?)
        with pytest.raises(TypeError, match="neither a device"):
            run(mte)
        return
    same_outcome(run)


def test_module_to_casts_grads_and_buffers_keeps_parameter_objects():
    m = nn.BatchNorm1d(3)
    w = m.weight
    m(mte.randn(4, 3)).sum().backward()
    assert m.to(mte.device("cpu"), mte.float64) is m
    assert m.weight is w and w.dtype == mte.float64 and w.grad.dtype == mte.float64
    assert m.running_mean.dtype == mte.float64 and m.num_batches_tracked.dtype == mte.int64


TENSOR_TO = {
    "device": lambda L, t: t.to(L.device("cpu")),
    "dtype, non_blocking": lambda L, t: t.to(L.float32, True),
    "device, dtype, non_blocking, copy": lambda L, t: t.to("cpu", L.float64, True, True),
    "copy keyword": lambda L, t: t.to("cpu", non_blocking=True, copy=True),
    "tensor": lambda L, t: t.to(L.ones(1, dtype=L.int32)),
    "channels_last on 1-D": lambda L, t: t.to(memory_format=L.channels_last),
    "two dtypes": lambda L, t: t.to(L.float32, L.float64),
    "dtype, device": lambda L, t: t.to(L.float64, "cuda"),
    "unknown keyword": lambda L, t: t.to(foo=1),
    "cuda": lambda L, t: t.to("cuda"),
    "cuda, dtype": lambda L, t: t.to("cuda", L.float64),
    "cuda keyword": lambda L, t: t.to(dtype=L.float64, device="cuda"),
    "xpu": lambda L, t: t.to("xpu"),
    "mps": lambda L, t: t.to("mps"),
    "xla": lambda L, t: t.to("xla"),
    "int": lambda L, t: t.to(1),
    ".cuda()": lambda L, t: t.cuda(),
    ".cuda(non_blocking)": lambda L, t: t.cuda(non_blocking=True),
    ".cpu()": lambda L, t: t.cpu(),
    ".cpu(memory_format)": lambda L, t: t.cpu(memory_format=L.contiguous_format),
    "pin_memory": lambda L, t: t.pin_memory(),
}


@pytest.mark.parametrize("form", list(TENSOR_TO))
def test_tensor_to_forms_match_torch(form):
    def run(L):
        t = L.ones(2)
        out = TENSOR_TO[form](L, t)
        return out is t, dname(out.dtype), tuple(out.shape)
    same_outcome(run)


def test_cuda_errors_are_torchs_assertion():
    for fn in (lambda: mte.ones(2).cuda(), lambda: mte.tensor([1.0], device="cuda"),
               lambda: mte.zeros(2, device=mte.device("cuda", 0)), lambda: nn.Linear(1, 1).cuda(),
               lambda: mte.randn(2, device="cuda:1"), lambda: nn.Linear(1, 1, device="cuda")):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            fn()
    with pytest.raises(RuntimeError, match="not linked with support for mps"):
        mte.zeros(1, device="mps")


def test_device_objects_match_torch():
    for args in [("cpu",), ("cuda",), ("cuda:1",), ("cuda", 0), ("mps",), ("cpu", 0),
                 ("meta",), ("xpu:3",)]:
        o, t = mte.device(*args), torch.device(*args)
        assert (str(o), o.type, o.index) == (str(t), t.type, t.index)
        assert repr(o) == repr(t)
        assert mte.device(o) == o and hash(mte.device(*args)) == hash(o)
    for args in [("foo",), ("CPU",), (" cpu",), ("cuda:-1",), ("cpu:x",), ("cuda:01",),
                 ("cpu", -1), ("cuda:1", 2), (1.5,), (None,), ("cuda", "x"), (0,)]:
        same_outcome(lambda L: str(L.device(*args)))
    assert mte.device("cuda:0") != mte.device("cuda") and mte.ones(1).device == "cpu"
    t = mte.ones(1)
    for name in ("is_cuda", "is_xpu", "is_mps", "is_meta", "is_cpu", "is_sparse",
                 "is_quantized"):
        assert getattr(t, name) == getattr(torch.ones(1), name), name
    assert t.get_device() == torch.ones(1).get_device() == -1 and not t.is_pinned()
    assert t.cpu() is t


# ================================ 3. cuda / backends / accelerator ==============================
CUDA_CALLS = ["is_available()", "device_count()", "manual_seed(0)", "manual_seed_all(3)",
              "is_bf16_supported()", "is_initialized()", "empty_cache()", "seed()", "seed_all()",
              "memory_allocated()", "max_memory_allocated()", "memory_reserved()",
              "max_memory_reserved()", "memory_stats()", "get_arch_list()",
              "get_rng_state_all()", "is_tf32_supported()", "synchronize()", "current_device()",
              "get_device_name()", "get_device_name(0)", "get_device_properties(0)",
              "get_device_capability()", "initial_seed()", "mem_get_info()", "get_rng_state()",
              "init()", "ipc_collect()", "current_stream()"]


@pytest.mark.parametrize("call", CUDA_CALLS)
def test_cuda_namespace_matches_cpu_torch(call):
    kind, value = same_outcome(lambda L: eval("L.cuda." + call, {"L": L}),
                               value=lambda v: dict(v) if hasattr(v, "items") else v)
    if kind == "raise" and value == "AssertionError":
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            eval("mte.cuda." + call)


def test_cuda_device_context_raises_on_enter():
    ctx = mte.cuda.device(0)
    with pytest.raises(RuntimeError, match="without CUDA support"):
        with ctx:
            pass


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return value, [w for w in caught if w.category is UserWarning]


def test_autocast_disables_itself_as_on_cpu_torch():
    for kwargs in ({}, {"enabled": True, "dtype": mte.bfloat16}, {"enabled": False}):
        tkw = {k: (torch.bfloat16 if v is mte.bfloat16 else v) for k, v in kwargs.items()}
        ours, ow = _warnings(lambda: mte.cuda.amp.autocast(**kwargs))
        theirs, tw = _warnings(lambda: torch.cuda.amp.autocast(**tkw))
        assert len(ow) == len(tw) and all("Disabling autocast" in str(w.message) for w in ow)
        assert ours._enabled is theirs._enabled is False and ours.device == theirs.device
        assert dname(ours.fast_dtype) == dname(theirs.fast_dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mte.cuda.amp.autocast() as ctx:
            y = mte.ones(2, 2) @ mte.ones(2, 2)
        assert isinstance(ctx, mte.cuda.amp.autocast) and y.dtype == mte.float32

        @mte.cuda.amp.autocast()
        def double(x):
            return x * 2
    assert double(mte.ones(1)).item() == 2.0
    assert mte.cuda.amp.custom_fwd(double) is double and mte.cuda.amp.custom_bwd(double) is double
    assert mte.cuda.amp.custom_fwd(cast_inputs=mte.float32)(double) is double


def _scaler_loop(L, scaler_kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = L.cuda.amp.GradScaler(**scaler_kwargs)
    L.manual_seed(0)
    model = L.nn.Linear(3, 1)
    with L.no_grad():
        model.weight.copy_(L.tensor([[0.5, -1.0, 2.0]]))
        model.bias.fill_(0.25)
    opt = L.optim.SGD(model.parameters(), lr=0.1)
    x = L.tensor([[1.0, 2.0, 3.0], [0.5, 0.0, -1.0]])
    loss = model(x).pow(2).mean()
    scaled = scaler.scale(loss)
    assert scaled is loss
    scaled.backward()
    scaler.unscale_(opt)
    assert scaler.step(opt) is None
    scaler.update()
    return (scaler.is_enabled(), scaler.get_scale(), scaler.state_dict(),
            np.round(model.weight.detach().numpy().astype(np.float64), 5).tolist(),
            scaler.scale([loss])[0] is loss, scaler.scale(3.0))


@pytest.mark.parametrize("kwargs", [{}, {"enabled": False}, {"init_scale": 8.0}])
def test_grad_scaler_passes_through_as_on_cpu_torch(kwargs):
    assert _scaler_loop(mte, kwargs) == _scaler_loop(torch, kwargs)
    _, ow = _warnings(lambda: mte.cuda.amp.GradScaler(**kwargs))
    _, tw = _warnings(lambda: torch.cuda.amp.GradScaler(**kwargs))
    assert len(ow) == len(tw)
    kinds = []
    for L in (mte, torch):   # every category: torch 2.13 also says FutureWarning (deprecated)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            L.cuda.amp.GradScaler(**kwargs)
        kinds.append(sorted(w.category.__name__ for w in caught))
    assert kinds[0] == kinds[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        s = mte.cuda.amp.GradScaler(enabled=False)
    s.set_growth_factor(3.0)
    s.set_backoff_factor(0.25)
    s.set_growth_interval(7)
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == \
        (3.0, 0.25, 7)
    assert s.load_state_dict({"scale": 2.0}) is None and s.get_scale() == 1.0


BACKEND_VALUES = ["cuda.matmul.allow_tf32", "cuda.matmul.allow_fp16_reduced_precision_reduction",
                  "cuda.matmul.allow_bf16_reduced_precision_reduction", "cudnn.benchmark",
                  "cudnn.deterministic", "cudnn.allow_tf32", "cudnn.enabled",
                  "cudnn.benchmark_limit", "mps.is_available()", "mps.is_built()",
                  "cudnn.is_available()", "cudnn.version()", "cuda.is_built()",
                  "cuda.flash_sdp_enabled()", "cuda.math_sdp_enabled()",
                  "cuda.mem_efficient_sdp_enabled()", "cuda.cudnn_sdp_enabled()",
                  "cudnn.is_acceptable(L.ones(1))", "cuda.matmul.no_such_flag"]


@pytest.mark.parametrize("expr", BACKEND_VALUES)
def test_backends_defaults_match_torch(expr):
    same_outcome(lambda L: eval("L.backends." + expr, {"L": L}))


@pytest.fixture
def restore_backends():
    from minitorch_edge.backends import _state, cudnn
    saved = dict(_state._STATE), dict(cudnn._FLAGS), mte.backends.cuda.matmul._values.copy()
    yield
    _state._STATE.update(saved[0])
    cudnn._FLAGS.update(saved[1])
    mte.backends.cuda.matmul._values.update(saved[2])


def test_backend_switches_are_settable_and_type_checked(restore_backends):
    b = mte.backends
    for name in ("benchmark", "deterministic", "allow_tf32", "enabled"):
        value = not getattr(b.cudnn, name)
        setattr(b.cudnn, name, value)
        assert getattr(b.cudnn, name) is value
        with pytest.raises(RuntimeError, match="expects a bool"):
            setattr(b.cudnn, name, "yes")
        setattr(b.cudnn, name, not value)
    with b.cudnn.flags(enabled=False, benchmark=True):
        assert b.cudnn.enabled is False and b.cudnn.benchmark is True
    assert b.cudnn.enabled is True
    b.cuda.matmul.allow_tf32 = True
    assert mte.get_float32_matmul_precision() == "high"
    b.cuda.matmul.allow_tf32 = False
    assert mte.get_float32_matmul_precision() == "highest"
    mte.set_float32_matmul_precision("medium")
    assert b.cuda.matmul.allow_tf32 is True
    with pytest.warns(UserWarning, match="not one of"):
        mte.set_float32_matmul_precision("fast")
    assert mte.get_float32_matmul_precision() == "medium"
    with pytest.raises(RuntimeError, match="expects a bool"):
        b.cuda.matmul.allow_tf32 = 1
    with pytest.raises(TypeError, match="expects a bool"):
        b.cuda.matmul.allow_fp16_reduced_precision_reduction = "x"
    with pytest.raises(AttributeError, match="Unknown attribute"):
        b.cuda.matmul.foo = True
    b.cuda.enable_flash_sdp(False)
    assert b.cuda.flash_sdp_enabled() is False
    b.cuda.enable_flash_sdp(True)
    with pytest.raises(RuntimeError, match="expects a bool"):
        b.cuda.enable_math_sdp("x")
    mte.use_deterministic_algorithms(True, warn_only=True)
    assert mte.are_deterministic_algorithms_enabled()
    assert mte.is_deterministic_algorithms_warn_only_enabled()
    mte.use_deterministic_algorithms(False)
    with pytest.raises(TypeError, match="must be bool"):
        mte.use_deterministic_algorithms("x")
    assert torch.get_float32_matmul_precision() == "highest"   # torch's are never touched


@pytest.mark.parametrize("call", ["is_available()", "current_accelerator()", "device_count()",
                                  "current_device_index()", "synchronize()", "empty_cache()",
                                  "memory_allocated()", "set_device_index(0)"])
def test_accelerator_matches_cpu_torch(call):
    kind, value = same_outcome(lambda L: eval("L.accelerator." + call, {"L": L}))
    if kind == "raise":
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            eval("mte.accelerator." + call)


def test_device_selection_idiom_picks_cpu():
    device = mte.device("cuda" if mte.cuda.is_available() else "cpu")
    model = nn.Linear(2, 1).to(device)
    assert model(mte.ones(1, 2).to(device)).device == device == mte.device("cpu")
    acc = mte.accelerator.current_accelerator()
    assert acc is None and (acc or mte.device("cpu")).type == "cpu"


# ================================ 4. sampling ===================================================
def _meta(t):
    return dname(t.dtype), tuple(t.shape), t.requires_grad


P3 = [0.1, 0.2, 0.7]
SAMPLING = {
    # multinomial
    "multinomial 1-D": lambda L: L.multinomial(L.tensor(P3), 2),
    "multinomial replacement": lambda L: L.multinomial(L.tensor(P3), 5, True),
    "multinomial 2-D": lambda L: L.multinomial(L.ones(4, 3), 3),
    "multinomial 2-D repl": lambda L: L.multinomial(L.ones(4, 3), 7, replacement=True),
    "multinomial double": lambda L: L.multinomial(L.tensor(P3).double(), 1),
    "multinomial half": lambda L: L.multinomial(L.tensor(P3).half(), 1),
    "multinomial zero rows": lambda L: L.multinomial(L.ones(0, 3), 2),
    "multinomial method": lambda L: L.tensor(P3).multinomial(2, True),
    "multinomial grad input": lambda L: L.multinomial(L.tensor(P3, requires_grad=True), 2),
    "multinomial tensor n": lambda L: L.multinomial(L.tensor(P3), L.tensor(2)),
    "multinomial zero prob last": lambda L: L.multinomial(L.tensor([0.0, 1.0, 0.0]), 2),
    "multinomial too many": lambda L: L.multinomial(L.tensor(P3), 4),
    "multinomial n=0": lambda L: L.multinomial(L.tensor(P3), 0),
    "multinomial n<0": lambda L: L.multinomial(L.tensor(P3), -1, True),
    "multinomial float n": lambda L: L.multinomial(L.tensor(P3), 2.0),
    "multinomial bool n": lambda L: L.multinomial(L.tensor(P3), True),
    "multinomial negative": lambda L: L.multinomial(L.tensor([1.0, -1.0]), 1),
    "multinomial nan": lambda L: L.multinomial(L.tensor([math.nan, 1.0]), 1),
    "multinomial inf": lambda L: L.multinomial(L.tensor([math.inf, 1.0]), 1),
    "multinomial zero sum": lambda L: L.multinomial(L.tensor([0.0, 0.0]), 1, True),
    "multinomial zero-sum row": lambda L: L.multinomial(L.tensor([[0.0, 0.0], [1.0, 1.0]]), 1),
    "multinomial 3-D": lambda L: L.multinomial(L.ones(2, 2, 2), 1),
    "multinomial 0-D": lambda L: L.multinomial(L.ones(()), 1),
    "multinomial long": lambda L: L.multinomial(L.tensor([1, 2]), 1),
    "multinomial bool": lambda L: L.multinomial(L.tensor([True, False]), 1),
    "multinomial empty": lambda L: L.multinomial(L.ones(0), 1),
    "multinomial no categories": lambda L: L.multinomial(L.ones(3, 0), 1),
    # bernoulli
    "bernoulli probs": lambda L: L.bernoulli(L.tensor(P3)),
    "bernoulli double": lambda L: L.bernoulli(L.tensor(P3).double()),
    "bernoulli half": lambda L: L.bernoulli(L.tensor(P3).half()),
    "bernoulli p": lambda L: L.bernoulli(L.tensor(P3), 0.5),
    "bernoulli p keyword": lambda L: L.bernoulli(L.ones(2, 3), p=0.25),
    "bernoulli p long input": lambda L: L.bernoulli(L.ones(2, dtype=L.int64), 0.5),
    "bernoulli p tensor": lambda L: L.bernoulli(L.ones(2), p=L.tensor(0.5)),
    "bernoulli grad": lambda L: L.bernoulli(L.tensor(P3, requires_grad=True)),
    "bernoulli method": lambda L: L.tensor(P3).bernoulli(),
    "bernoulli method p": lambda L: L.tensor(P3).bernoulli(0.3),
    "bernoulli above 1": lambda L: L.bernoulli(L.tensor([1.5])),
    "bernoulli below 0": lambda L: L.bernoulli(L.tensor([-0.5])),
    "bernoulli nan": lambda L: L.bernoulli(L.tensor([math.nan])),
    "bernoulli long probs": lambda L: L.bernoulli(L.tensor([1, 0])),
    "bernoulli bool probs": lambda L: L.bernoulli(L.tensor([True])),
    "bernoulli p out of range": lambda L: L.bernoulli(L.tensor(P3), 1.5),
    "bernoulli_ p": lambda L: L.zeros(3).bernoulli_(0.5),
    "bernoulli_ tensor": lambda L: L.zeros(3).bernoulli_(L.tensor(P3)),
    "bernoulli_ broadcast": lambda L: L.zeros(2, 3).bernoulli_(L.tensor(P3)),
    "bernoulli_ broadcast col": lambda L: L.zeros(2, 3).bernoulli_(L.full((2, 1), 0.5)),
    "bernoulli_ long self": lambda L: L.zeros(3, dtype=L.int64).bernoulli_(0.5),
    "bernoulli_ bool self": lambda L: L.zeros(3, dtype=L.bool).bernoulli_(0.5),
    "bernoulli_ long self tensor p": lambda L: L.zeros(3, dtype=L.int64).bernoulli_(
        L.tensor(P3)),
    "bernoulli_ double p": lambda L: L.zeros(2).bernoulli_(p=L.tensor([0.2, 0.3]).double()),
    "bernoulli_ p=1": lambda L: L.zeros(3).bernoulli_(1),
    "bernoulli_ p=True": lambda L: L.zeros(3).bernoulli_(True),
    "bernoulli_ p 1.5": lambda L: L.zeros(3).bernoulli_(1.5),
    "bernoulli_ p nan": lambda L: L.zeros(3).bernoulli_(math.nan),
    "bernoulli_ tensor out of range": lambda L: L.zeros(3).bernoulli_(L.tensor([1.5, 0, 0])),
    "bernoulli_ wrong shape": lambda L: L.zeros(3).bernoulli_(L.tensor([0.5, 0.5])),
    "bernoulli_ no broadcast back": lambda L: L.zeros(2, 3).bernoulli_(L.full((3, 2), 0.5)),
    "bernoulli_ more dims": lambda L: L.zeros(3).bernoulli_(L.full((2, 3), 0.5)),
    "bernoulli_ long p": lambda L: L.zeros(3).bernoulli_(L.tensor([1, 0, 1])),
    # poisson
    "poisson": lambda L: L.poisson(L.tensor([1.0, 2.0])),
    "poisson 2-D": lambda L: L.poisson(L.zeros(2, 3)),
    "poisson double": lambda L: L.poisson(L.tensor([1.0, 2.0]).double()),
    "poisson half": lambda L: L.poisson(L.tensor([1.0]).half()),
    "poisson grad": lambda L: L.poisson(L.tensor([1.0, 2.0], requires_grad=True)),
    "poisson negative": lambda L: L.poisson(L.tensor([-1.0, 2.0])),
    "poisson nan": lambda L: L.poisson(L.tensor([math.nan])),
    "poisson long": lambda L: L.poisson(L.tensor([1, 2])),
    # normal
    "normal floats size": lambda L: L.normal(0.0, 1.0, (2, 3)),
    "normal ints size": lambda L: L.normal(0, 1, (2,)),
    "normal size keyword": lambda L: L.normal(mean=0.0, std=1.0, size=(2,)),
    "normal scalar size": lambda L: L.normal(0.0, 1.0, []),
    "normal empty size": lambda L: L.normal(0.0, 1.0, (0,)),
    "normal dtype": lambda L: L.normal(0.0, 1.0, (2,), dtype=L.float64),
    "normal half dtype": lambda L: L.normal(0.0, 1.0, (2,), dtype=L.float16),
    "normal requires_grad": lambda L: L.normal(0.0, 1.0, (2,), requires_grad=True),
    "normal tensor mean": lambda L: L.normal(L.zeros(3), 1.0),
    "normal tensor mean only": lambda L: L.normal(mean=L.zeros(3)),
    "normal tensor std": lambda L: L.normal(0.0, L.ones(3)),
    "normal int mean tensor std": lambda L: L.normal(1, L.ones(2)),
    "normal both": lambda L: L.normal(L.zeros(3), L.ones(3)),
    "normal broadcast": lambda L: L.normal(L.zeros(2, 1), L.ones(3)),
    "normal 0-dim mean": lambda L: L.normal(L.zeros(()), L.ones(3)),
    "normal 0-dim both": lambda L: L.normal(L.tensor(1.0), L.tensor(2.0)),
    "normal dtype of mean": lambda L: L.normal(L.zeros(3), L.ones(3).double()),
    "normal half mean": lambda L: L.normal(L.zeros(3).half(), L.ones(3).double()),
    "normal half std": lambda L: L.normal(0.0, L.ones(3).half()),
    "normal long std with float mean": lambda L: L.normal(L.zeros(3),
                                                          L.ones(3, dtype=L.int64)),
    "normal std 0": lambda L: L.normal(L.zeros(3), 0.0),
    "normal grad mean": lambda L: L.normal(L.zeros(3, requires_grad=True), 1.0),
    "normal grad std": lambda L: L.normal(L.zeros(3), L.ones(3, requires_grad=True)),
    "normal no size": lambda L: L.normal(0.0, 1.0),
    "normal int size": lambda L: L.normal(0.0, 1.0, 3),
    "normal tensor with size": lambda L: L.normal(L.zeros(3), 1.0, (3,)),
    "normal shapes mismatch": lambda L: L.normal(L.zeros(3), L.ones(4)),
    "normal negative std": lambda L: L.normal(L.zeros(3), -1.0),
    "normal negative std size": lambda L: L.normal(0.0, -1.0, (2,)),
    "normal negative std tensor": lambda L: L.normal(0.0, L.tensor([-1.0])),
    "normal nan std": lambda L: L.normal(L.zeros(3), math.nan),
    "normal nan std tensor": lambda L: L.normal(L.zeros(3), L.full((3,), math.nan)),
    "normal long mean": lambda L: L.normal(L.zeros(3, dtype=L.int64), 1.0),
    "normal long std": lambda L: L.normal(0.0, L.ones(3, dtype=L.int64)),
    "normal long dtype": lambda L: L.normal(0.0, 1.0, (2,), dtype=L.int64),
    "normal negative size": lambda L: L.normal(0.0, 1.0, size=(-1,)),
    # the in-place fills
    "normal_": lambda L: L.zeros(3).normal_(1, 2),
    "normal_ keywords": lambda L: L.zeros(3).normal_(mean=1, std=2),
    "normal_ std 0": lambda L: L.zeros(3).normal_(0, 0),
    "normal_ negative std": lambda L: L.zeros(3).normal_(0, -1),
    "normal_ nan std": lambda L: L.zeros(3).normal_(0, math.nan),
    "normal_ long": lambda L: L.zeros(3, dtype=L.int64).normal_(),
    "normal_ leaf": lambda L: L.zeros(3, requires_grad=True).normal_(),
    "uniform_": lambda L: L.zeros(3).uniform_(-1, 1),
    "uniform_ to keyword": lambda L: L.zeros(3).uniform_(to=5),
    "uniform_ equal": lambda L: L.zeros(3).uniform_(1, 1),
    "uniform_ reversed": lambda L: L.zeros(3).uniform_(1, 0),
    "uniform_ inf": lambda L: L.zeros(3).uniform_(0, math.inf),
    "uniform_ long": lambda L: L.zeros(3, dtype=L.int64).uniform_(),
    "exponential_": lambda L: L.zeros(3).exponential_(2),
    "exponential_ keyword": lambda L: L.zeros(3).exponential_(lambd=2),
    "exponential_ zero": lambda L: L.zeros(3).exponential_(0),
    "exponential_ negative": lambda L: L.zeros(3).exponential_(-1),
    "exponential_ nan": lambda L: L.zeros(3).exponential_(math.nan),
    "exponential_ long": lambda L: L.zeros(3, dtype=L.int64).exponential_(),
    "geometric_": lambda L: L.zeros(3).geometric_(0.5),
    "geometric_ keyword": lambda L: L.zeros(3).geometric_(p=0.3),
    "geometric_ long": lambda L: L.zeros(3, dtype=L.int64).geometric_(0.5),
    "geometric_ p 0": lambda L: L.zeros(3).geometric_(0),
    "geometric_ p 1": lambda L: L.zeros(3).geometric_(1),
    "geometric_ nan": lambda L: L.zeros(3).geometric_(math.nan),
    "geometric_ bool": lambda L: L.zeros(3, dtype=L.bool).geometric_(0.5),
    "cauchy_": lambda L: L.zeros(3).cauchy_(),
    "cauchy_ keywords": lambda L: L.zeros(3).cauchy_(median=0, sigma=1),
    "cauchy_ sigma 0": lambda L: L.zeros(3).cauchy_(0, 0),
    "cauchy_ long": lambda L: L.zeros(3, dtype=L.int64).cauchy_(),
    "log_normal_": lambda L: L.zeros(3).log_normal_(),
    "log_normal_ keywords": lambda L: L.zeros(3).log_normal_(mean=0, std=1),
    "log_normal_ std 0": lambda L: L.zeros(3).log_normal_(0, 0),
    "log_normal_ long": lambda L: L.zeros(3, dtype=L.int64).log_normal_(),
    "random_": lambda L: L.zeros(3).random_(),
    "random_ to": lambda L: L.zeros(3).random_(10),
    "random_ from to": lambda L: L.zeros(3).random_(2, 5),
    "random_ to keyword": lambda L: L.zeros(3).random_(to=10),
    "random_ from None": lambda L: L.zeros(3).random_(2, None),
    "random_ long": lambda L: L.zeros(3, dtype=L.int64).random_(),
    "random_ uint8": lambda L: L.zeros(3, dtype=L.uint8).random_(),
    "random_ bool": lambda L: L.zeros(3, dtype=L.bool).random_(),
    "random_ int8 range": lambda L: L.zeros(3, dtype=L.int8).random_(-5, 5),
    "random_ reversed": lambda L: L.zeros(3).random_(5, 2),
    "random_ to 0": lambda L: L.zeros(3).random_(0),
    "random_ float": lambda L: L.zeros(3).random_(1.5),
    "random_ uint8 to": lambda L: L.zeros(3, dtype=L.uint8).random_(300),
    "random_ uint8 from": lambda L: L.zeros(3, dtype=L.uint8).random_(-1, 5),
}


@pytest.mark.parametrize("case", list(SAMPLING))
def test_sampling_shapes_dtypes_and_errors_match_torch(case):
    fn = SAMPLING[case]
    kind, value = same_outcome(lambda L: _meta(fn(L)))
    if kind == "ok":                      # the values lie in the support torch's do
        out = fn(mte)
        vals = out.detach().float().numpy() if out.dtype != mte.bool else out.numpy()
        if case.startswith("multinomial"):
            assert vals.size == 0 or (vals.min() >= 0 and vals.max() < fn(mte).shape[-1] + 8)
        if case.startswith(("bernoulli", "random_ bool")):
            assert set(np.unique(vals)) <= {0, 1}


ERROR_TEXT = {
    "multinomial too many": "cannot sample n_sample > prob_dist.size(-1) samples without "
                            "replacement",
    "multinomial n=0": "cannot sample n_sample <= 0 samples",
    "multinomial negative": "probability tensor contains either `inf`, `nan` or element < 0",
    "multinomial zero-sum row": "invalid multinomial distribution (sum of probabilities <= 0)",
    "multinomial 3-D": "prob_dist must be 1 or 2 dim",
    "multinomial long": "multinomial only supports floating-point dtypes for input, got: Long",
    "multinomial float n": "must be int, not float",
    "bernoulli above 1": "Expected p_in >= 0 && p_in <= 1 to be true, but got false",
    "bernoulli long probs": "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'",
    "bernoulli p out of range": "bernoulli_ expects p to be in [0, 1], but got p=1.5",
    "bernoulli_ no broadcast back": "The expanded size of the tensor (3) must match the "
                                   "existing size (2) at non-singleton dimension 1",
    "poisson negative": "invalid Poisson rate, expected rate to be non-negative",
    "poisson long": "\"poisson_cpu\" not implemented for 'Long'",
    "normal negative std": "normal expects std >= 0.0, but found std -1",
    "normal nan std": "normal expects std >= 0.0, but found std nan",
    "normal negative std tensor": "normal expects all elements of std >= 0.0",
    "normal long mean": "\"normal_kernel_cpu\" not implemented for 'Long'",
    "normal negative size": "negative dimension",
    "uniform_ reversed": "uniform_ expects to return a [from, to) range, but found from=1 > "
                         "to=0",
    "exponential_ zero": "exponential_ expects lambda > 0.0, but found lambda=0",
    "exponential_ long": "Exponential distribution is a continuous probability distribution",
    "geometric_ p 1": "geometric_ expects p to be in (0, 1), but got p=1",
    "cauchy_ sigma 0": "cauchy_ expects sigma > 0.0, but found sigma=0",
    "log_normal_ std 0": "log_normal_ expects std > 0.0, but found std=0",
    "random_ reversed": "random_ expects 'from' to be less than 'to', but got from=5 >= to=2",
    "normal_ leaf": "a leaf Variable that requires grad is being used in an in-place operation",
}


@pytest.mark.parametrize("case", list(ERROR_TEXT))
def test_sampling_error_messages_say_what_torch_says(case):
    with pytest.raises(Exception, match=re.escape(ERROR_TEXT[case])):
        SAMPLING[case](mte)
    with pytest.raises(Exception, match=re.escape(ERROR_TEXT[case])):
        SAMPLING[case](torch)


def test_sampling_is_reproducible_with_seeds_and_generators():
    draws = [
        lambda g: mte.multinomial(mte.tensor(P3), 2, generator=g),
        lambda g: mte.multinomial(mte.ones(3, 5), 9, True, generator=g),
        lambda g: mte.bernoulli(mte.full((20,), 0.5), generator=g),
        lambda g: mte.poisson(mte.full((10,), 3.0), generator=g),
        lambda g: mte.normal(mte.zeros(5), mte.ones(5), generator=g),
        lambda g: mte.normal(0.0, 1.0, (5,), generator=g),
        lambda g: mte.zeros(5).cauchy_(generator=g),
        lambda g: mte.zeros(5).geometric_(0.3, generator=g),
        lambda g: mte.zeros(5).log_normal_(generator=g),
        lambda g: mte.zeros(5, dtype=mte.int64).random_(generator=g),
        lambda g: mte.zeros(5).bernoulli_(mte.full((5,), 0.5), generator=g),
    ]
    for draw in draws:
        a = draw(mte.Generator().manual_seed(7)).numpy()
        b = draw(mte.Generator().manual_seed(7)).numpy()
        c = draw(mte.Generator().manual_seed(8)).numpy()
        assert np.array_equal(a, b)
        mte.manual_seed(3)
        d = draw(None).numpy()
        mte.manual_seed(3)
        assert np.array_equal(d, draw(None).numpy())
        if a.size >= 5:
            assert not np.array_equal(a, c)


def test_sampling_gradients_are_zero_as_in_torch():
    for lib in (mte, torch):
        m = lib.zeros(3, requires_grad=True)
        s = lib.ones(3, requires_grad=True)
        p = lib.full((3,), 0.5, requires_grad=True)
        r = lib.ones(3, requires_grad=True)
        (lib.normal(m, s).sum() + lib.bernoulli(p).sum() + lib.poisson(r).sum()).backward()
        for t in (m, s, p, r):
            assert t.grad.tolist() == [0.0, 0.0, 0.0]
    y = mte.normal(mte.zeros(2, 1, requires_grad=True), mte.ones(3))
    assert y.grad_fn.name().startswith("NormalBackward")
    assert mte.bernoulli(mte.full((2,), 0.5, requires_grad=True)).grad_fn.name() == \
        "BernoulliBackward0"


def _gen(seed=0):
    return mte.Generator().manual_seed(seed)


def test_multinomial_frequencies():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    draws = mte.multinomial(mte.tensor(p), 40000, True, generator=_gen()).numpy()
    freq = np.bincount(draws, minlength=4) / draws.size
    assert np.allclose(freq, p, atol=0.01)                 # ~5 standard errors
    # unnormalised weights, rows of their own
    w = mte.tensor([[1.0, 0.0, 3.0], [0.0, 5.0, 5.0]])
    d = mte.multinomial(w, 20000, replacement=True, generator=_gen(1)).numpy()
    assert (d[0] != 1).all() and (d[1] != 0).all()
    assert abs((d[0] == 2).mean() - 0.75) < 0.015 and abs((d[1] == 1).mean() - 0.5) < 0.015


def test_multinomial_without_replacement():
    p = mte.tensor([0.5, 0.3, 0.15, 0.05])
    rows = mte.multinomial(p.expand(20000, 4).contiguous(), 2, generator=_gen(2)).numpy()
    assert (rows[:, 0] != rows[:, 1]).all()
    first = np.bincount(rows[:, 0], minlength=4) / len(rows)
    assert np.allclose(first, [0.5, 0.3, 0.15, 0.05], atol=0.015)
    # P(second = j | first = 0) = p_j / (1 - p_0)
    after0 = rows[rows[:, 0] == 0, 1]
    assert np.allclose(np.bincount(after0, minlength=4)[1:] / len(after0), [0.6, 0.3, 0.1],
                       atol=0.02)
    full = mte.multinomial(mte.tensor([0.0, 2.0, 0.0, 1.0]), 4, generator=_gen(3)).tolist()
    assert sorted(full) == [0, 1, 2, 3] and set(full[:2]) == {1, 3}   # zeros come last
    perm = mte.multinomial(mte.ones(50), 50, generator=_gen(4)).tolist()
    assert sorted(perm) == list(range(50)) and perm != list(range(50))


def test_bernoulli_poisson_rates():
    p = mte.tensor([0.0, 0.2, 0.9, 1.0]).expand(50000, 4).contiguous()
    b = mte.bernoulli(p, generator=_gen(5)).numpy()
    assert np.allclose(b.mean(0), [0.0, 0.2, 0.9, 1.0], atol=0.008)
    assert b[:, 0].max() == 0 and b[:, 3].min() == 1
    f = mte.zeros(50000).bernoulli_(0.3, generator=_gen(6)).numpy()
    assert abs(f.mean() - 0.3) < 0.008
    rates = mte.tensor([0.0, 0.5, 4.0, 30.0]).expand(40000, 4).contiguous()
    k = mte.poisson(rates, generator=_gen(7)).numpy()
    assert np.allclose(k.mean(0), [0.0, 0.5, 4.0, 30.0], rtol=0.02, atol=0.01)
    assert np.allclose(k.var(0), [0.0, 0.5, 4.0, 30.0], rtol=0.06, atol=0.01)
    assert (k == np.round(k)).all() and k.min() >= 0


def test_normal_forms_moments():
    x = mte.normal(2.0, 3.0, (100000,), generator=_gen(8)).numpy()
    assert abs(x.mean() - 2.0) < 0.05 and abs(x.std() - 3.0) < 0.05
    mean = mte.tensor([-5.0, 0.0, 5.0]).expand(40000, 3).contiguous()
    y = mte.normal(mean, mte.tensor([0.5, 1.0, 2.0]), generator=_gen(9)).numpy()
    assert np.allclose(y.mean(0), [-5, 0, 5], atol=0.05)
    assert np.allclose(y.std(0), [0.5, 1.0, 2.0], rtol=0.03)
    z = mte.normal(1.0, mte.full((60000,), 0.5), generator=_gen(10)).numpy()
    assert abs(z.mean() - 1.0) < 0.02 and abs(z.std() - 0.5) < 0.02
    assert (mte.normal(mte.arange(4.0), 0.0) == mte.arange(4.0)).all()


def test_inplace_fills_distributions():
    n = 100000
    u = mte.empty(n).uniform_(-2, 6, generator=_gen(11)).numpy()
    assert u.min() >= -2 and u.max() < 6 and abs(u.mean() - 2) < 0.05
    e = mte.empty(n).exponential_(4.0, generator=_gen(12)).numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.25) < 0.005
    g = mte.empty(n).geometric_(0.25, generator=_gen(13)).numpy()
    assert g.min() >= 1 and (g == np.round(g)).all() and abs(g.mean() - 4.0) < 0.08   # 1/p
    c = mte.empty(n).cauchy_(1.0, 2.0, generator=_gen(14)).numpy()
    assert abs(np.median(c) - 1.0) < 0.05                     # median; quartiles at +-sigma
    assert abs(np.percentile(c, 75) - 3.0) < 0.1 and abs(np.percentile(c, 25) + 1.0) < 0.1
    ln = mte.empty(n).log_normal_(0.5, 0.25, generator=_gen(15)).numpy()
    assert abs(np.log(ln).mean() - 0.5) < 0.005 and abs(np.log(ln).std() - 0.25) < 0.005
    nr = mte.empty(n, dtype=mte.float64).normal_(-1.0, 0.5, generator=_gen(16)).numpy()
    assert abs(nr.mean() + 1.0) < 0.01 and abs(nr.std() - 0.5) < 0.01
    r = mte.empty(n).random_(3, 8, generator=_gen(17)).numpy()
    assert set(np.unique(r)) == {3, 4, 5, 6, 7}
    big = mte.empty(n).random_(generator=_gen(18)).numpy()
    assert big.min() >= 0 and big.max() <= 2 ** 24 and big.max() > 2 ** 23
    b8 = mte.empty(n, dtype=mte.uint8).random_(generator=_gen(19)).numpy()
    assert b8.min() == 0 and b8.max() == 255
    bb = mte.empty(1000, dtype=mte.bool).random_(generator=_gen(20)).numpy()
    assert 400 < bb.sum() < 600


# ================================ 5. __format__ =================================================
FORMATS = [("{:.4f}", lambda L: L.tensor(1.23456)), ("{:>8.3f}", lambda L: L.tensor(2.5)),
           ("{:e}", lambda L: L.tensor(1234.5)), ("{:d}", lambda L: L.tensor(3)),
           ("{:.2f}", lambda L: L.tensor(3)), ("{:d}", lambda L: L.tensor(3.5)),
           ("{}", lambda L: L.tensor(2.5)), ("{:}", lambda L: L.tensor(True)),
           ("{:d}", lambda L: L.tensor(True)), ("{:>10}", lambda L: L.tensor(2.5)),
           ("{:.2f}", lambda L: L.tensor(2.5, requires_grad=True)),
           ("{:.3f}", lambda L: L.tensor(2.5, dtype=L.float16)),
           ("{:x}", lambda L: L.tensor(255, dtype=L.uint8)), ("{:.1%}", lambda L: L.tensor(0.25)),
           ("{:.4f}", lambda L: L.ones(2, requires_grad=True).sum()),
           ("{}", lambda L: L.tensor([1.0, 2.0])), ("{:.2f}", lambda L: L.tensor([1.0, 2.0])),
           ("{:>8.3f}", lambda L: L.tensor([1.5])), ("{:e}", lambda L: L.tensor([[2.5]])),
           ("{:.2f}", lambda L: L.ones(0))]


@pytest.mark.parametrize("spec,make", FORMATS)
def test_format_matches_torch(spec, make):
    def run(L):
        return spec.format(make(L)).replace("torch", "minitorch_edge")
    same_outcome(run)


def test_format_in_fstrings():
    loss = mte.tensor(0.123456)
    assert f"loss {loss:.4f}" == "loss 0.1235" and f"{loss}" == f"{loss.item()}"
    assert f"{mte.tensor(0.123456)}" == f"{torch.tensor(0.123456)}"
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor"):
        f"{mte.ones(2):.2f}"


# ================================ 6. nn.functional aliases =====================================
def test_functional_names_are_torchs():
    ours = {n for n in dir(F) if not n.startswith("_")}
    theirs = set(dir(torch.nn.functional))
    own_submodules = {n for n in ours if getattr(getattr(F, n), "__file__", None)}
    extra = sorted(ours - theirs - own_submodules - {"importlib", "fused", "conv", "attention"})
    assert not extra, f"names in our nn.functional that torch's lacks: {extra}"
    assert F.tanh is mte.tanh and F.sigmoid is mte.sigmoid


def test_functional_aliases_compute_as_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    ours, theirs = mte.tensor(x), torch.tensor(x)
    for name in ("tanh", "sigmoid"):
        np.testing.assert_allclose(getattr(F, name)(ours).numpy(),
                                   getattr(torch.nn.functional, name)(theirs).numpy(),
                                   rtol=1e-6, atol=1e-6)
    cases = [("max_pool2d_with_indices", (ours, 2), (theirs, 2)),
             ("max_pool1d_with_indices", (ours[0], 3, 2), (theirs[0], 3, 2)),
             ("adaptive_max_pool2d_with_indices", (ours, 3), (theirs, 3)),
             ("adaptive_max_pool1d_with_indices", (ours[0], 5), (theirs[0], 5))]
    for name, a, b in cases:
        o, t = getattr(F, name)(*a), getattr(torch.nn.functional, name)(*b)
        assert isinstance(o, tuple) and len(o) == 2
        np.testing.assert_array_equal(o[0].numpy(), t[0].numpy())
        np.testing.assert_array_equal(o[1].numpy(), t[1].numpy())


# ================================ 7. nn.modules / nn.parallel ===================================
MODULE_PATHS = ["activation", "batchnorm", "container", "conv", "dropout", "flatten",
                "instancenorm", "linear", "loss", "module", "normalization", "pixelshuffle",
                "pooling", "sparse", "transformer", "upsampling"]


@pytest.mark.parametrize("path", MODULE_PATHS)
def test_nn_modules_paths_hold_torchs_names(path):
    ours = importlib.import_module(f"minitorch_edge.nn.modules.{path}")
    theirs = importlib.import_module(f"torch.nn.modules.{path}")
    names = [n for n in dir(ours) if isinstance(getattr(ours, n), type)]
    assert ours.__all__
    for name in names:
        assert hasattr(theirs, name), f"torch.nn.modules.{path} has no {name}"
        if hasattr(torch.nn, name):
            assert getattr(nn, name) is getattr(ours, name)
            assert getattr(nn.modules, name) is getattr(ours, name)


def test_nn_modules_well_known_paths():
    from minitorch_edge.nn.modules.activation import MultiheadAttention
    from minitorch_edge.nn.modules.loss import _Loss, _WeightedLoss
    from minitorch_edge.nn.modules.module import Module
    from minitorch_edge.nn.modules.batchnorm import _BatchNorm
    assert MultiheadAttention is nn.MultiheadAttention and Module is nn.Module
    assert issubclass(nn.CrossEntropyLoss, _WeightedLoss) and issubclass(nn.L1Loss, _Loss)
    assert issubclass(nn.BatchNorm2d, _BatchNorm)

    class MyLoss(_Loss):                        # the usual reason scripts import _Loss
        def forward(self, a, b):
            return (a - b).abs().mean() if self.reduction == "mean" else (a - b).abs().sum()
    assert MyLoss(reduction="sum")(mte.ones(3), mte.zeros(3)).item() == 3.0


def test_data_parallel_without_gpus_wraps_and_forwards_as_torch():
    def run(L):
        L.manual_seed(0)
        inner = L.nn.Linear(3, 2)
        with L.no_grad():
            inner.weight.copy_(L.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]))
            inner.bias.fill_(0.5)
        dp = L.nn.DataParallel(inner, device_ids=[0])
        out = dp(L.tensor([[1.0, 1.0, 1.0]]))
        out2 = dp(input=L.tensor([[0.0, 1.0, 0.0]]))
        return (repr(dp), list(dp.state_dict()), dp.module is inner, dp.device_ids,
                out.tolist(), out2.tolist(), L.nn.parallel.DataParallel is L.nn.DataParallel)
    assert run(mte) == run(torch)
    m = nn.Linear(2, 1)
    assert nn.parallel.data_parallel(m, mte.ones(1, 2)).tolist() == m(mte.ones(1, 2)).tolist()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        nn.parallel.DistributedDataParallel(m)
    with pytest.raises(ValueError, match="Default process group"):
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))


# ================================ 8. bfloat16 ===================================================
needs_bf16 = pytest.mark.skipif(not mte.dtypes.bf16_available(), reason="ml_dtypes missing")
BF16_VALUES = np.array([[1.5, -2.25, 3.1, 1e-3], [100.7, -0.333, 7.0, 2.0 ** 20 + 3]],
                       np.float32)


@needs_bf16
def test_bfloat16_conversions_match_torch():
    ours = mte.tensor(BF16_VALUES).to(mte.bfloat16)
    theirs = torch.tensor(BF16_VALUES).to(torch.bfloat16)
    assert ours.dtype == mte.bfloat16 and ours.dtype.itemsize == 2 and ours.element_size() == 2
    assert ours.is_floating_point() and ours.dtype.is_floating_point and ours.dtype.is_signed
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())  # same rounding
    np.testing.assert_array_equal(mte.tensor(BF16_VALUES.astype(np.float64)).bfloat16()
                                  .double().numpy(),
                                  torch.tensor(BF16_VALUES.astype(np.float64)).bfloat16()
                                  .double().numpy())
    with np.errstate(over="ignore"):             # 2**20 overflows float16 (to inf, as torch)
        for name in ("int", "long", "half", "double", "bool"):
            np.testing.assert_array_equal(getattr(ours, name)().numpy(),
                                          getattr(theirs, name)().numpy())
    ints = mte.tensor([1, 255, 257, -3])
    np.testing.assert_array_equal(ints.to(mte.bfloat16).float().numpy(),
                                  torch.tensor([1, 255, 257, -3]).bfloat16().float().numpy())
    assert mte.zeros(2, dtype=mte.bfloat16).dtype == mte.bfloat16
    assert mte.tensor([1.5], dtype="bfloat16").dtype == mte.bfloat16
    assert ours[0, 0].item() == theirs[0, 0].item() == 1.5 and isinstance(ours[0, 0].item(),
                                                                            float)
    assert ours.tolist() == theirs.tolist()
    arr = ours.numpy()
    assert arr.dtype.name == "bfloat16" and mte.from_numpy(arr).dtype == mte.bfloat16
    assert mte.tensor(arr).dtype == mte.bfloat16
    assert f"{ours[1, 0]:.1f}" == f"{theirs[1, 0]:.1f}"
    m = nn.Linear(2, 2)
    assert m.bfloat16() is m and m.weight.dtype == mte.bfloat16
    assert m.to(mte.float32).weight.dtype == mte.float32 and m.to(mte.bfloat16) is m


@needs_bf16
@pytest.mark.parametrize("make", [
    lambda L: L.tensor([1.5, 2.25, 3.1]).bfloat16(),
    lambda L: L.tensor([[1.0, -2.0], [1e10, 0.001]]).bfloat16(),
    lambda L: L.tensor(1.5).bfloat16(),
    lambda L: L.zeros(0, 2, dtype=L.bfloat16),
    lambda L: L.tensor([1.0, 2.0]).bfloat16().requires_grad_(),
])
def test_bfloat16_printing_matches_torch(make):
    assert repr(make(mte)).replace("minitorch_edge", "torch") == repr(make(torch))


@needs_bf16
@pytest.mark.parametrize("a,b", [("bfloat16", "float16"), ("bfloat16", "float32"),
                                 ("bfloat16", "float64"), ("int64", "bfloat16"),
                                 ("bool", "bfloat16"), ("uint8", "bfloat16"),
                                 ("bfloat16", "bfloat16")])
def test_bfloat16_promotion_matches_torch(a, b):
    ta, tb = getattr(torch, a), getattr(torch, b)
    ma, mb = getattr(mte, a), getattr(mte, b)
    assert dname(mte.promote_types(ma, mb)) == dname(torch.promote_types(ta, tb))
    assert dname(mte.promote_types(mb, ma)) == dname(torch.promote_types(tb, ta))
    for scalar in (2, 2.5, True):
        assert dname((mte.ones(2, dtype=ma) * scalar).dtype) == \
            dname((torch.ones(2, dtype=ta) * scalar).dtype)


def _bf16_pair(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return mte.tensor(x).bfloat16(), torch.tensor(x).bfloat16()


def _close_bf16(ours, theirs, steps=2):
    """Equal within a couple of bfloat16 rounding steps (8 bits of mantissa)."""
    o, t = ours.float().numpy(), theirs.float().numpy()
    np.testing.assert_allclose(o, t, rtol=steps * 2.0 ** -8, atol=1e-6 * steps)


@needs_bf16
def test_bfloat16_basic_ops_match_torch():
    (a, ta), (b, tb) = _bf16_pair((4, 5), 0), _bf16_pair((4, 5), 1)
    for fn in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x - y,
               lambda x, y: x * 2.5 + 1, lambda x, y: x.sum(), lambda x, y: x.sum(0),
               lambda x, y: x.abs(), lambda x, y: x.max(), lambda x, y: x.reshape(5, 4).t(),
               lambda x, y: x.pow(2), lambda x, y: x.clone(), lambda x, y: x[1:3, ::2]):
        ours, theirs = fn(a, b), fn(ta, tb)
        assert dname(ours.dtype) == dname(theirs.dtype) == "bfloat16"
        _close_bf16(ours, theirs, steps=4)
    (m, tm) = _bf16_pair((5, 3), 2)
    _close_bf16((a @ m).float(), (ta @ tm).float(), steps=4)
    mixed = a + b.float()
    assert mixed.dtype == mte.float32 and (a + b.half()).dtype == mte.float32
    assert (mte.ones(2, dtype=mte.int64) + mte.ones(2, dtype=mte.bfloat16)).dtype == \
        mte.bfloat16
    assert mte.cat([a, b]).dtype == mte.bfloat16


@needs_bf16
def test_bfloat16_ops_keep_bfloat16_as_torch():   # (the full sweep is in test_bf16.py)
    (a, ta), (m, tm) = _bf16_pair((4, 5), 0), _bf16_pair((5, 3), 2)
    for fn in (lambda x, y: x @ y, lambda x, y: x.exp(), lambda x, y: x.mean(),
               lambda x, y: x / 2, lambda x, y: x.softmax(-1)):
        assert dname(fn(a, m).dtype) == dname(fn(ta, tm).dtype)


def test_bfloat16_without_ml_dtypes_says_how_to_fix(monkeypatch):
    monkeypatch.setattr(mte.bfloat16, "_np", None)
    for fn in (lambda: mte.ones(2).to(mte.bfloat16), lambda: mte.zeros(2, dtype=mte.bfloat16),
               lambda: mte.ones(2).bfloat16(), lambda: nn.Linear(2, 2).bfloat16()):
        with pytest.raises(RuntimeError, match="pip install ml_dtypes"):
            fn()
    assert mte.bfloat16.is_floating_point and mte.bfloat16.itemsize == 2
    assert repr(mte.bfloat16) == "minitorch_edge.bfloat16"
    assert mte.promote_types(mte.bfloat16, mte.float16) == mte.float32   # no storage needed


# ================================ 9. save(module) ===============================================
def test_save_module_is_refused_with_the_state_dict_fix(tmp_path):
    path = tmp_path / "m.safetensors"
    model = nn.Sequential(nn.Linear(2, 2))
    for obj, where in ((model, "obj"), ({"model": model, "epoch": 3}, "obj['model']"),
                       ([1, (model,)], "obj[1][0]")):
        with pytest.raises(TypeError, match=r"save\(model\.state_dict\(\), path\)") as info:
            mte.save(obj, path)
        assert str(info.value).startswith(f"save: {where} is an nn.Module (Sequential)")
        assert not path.exists()
    mte.save(model.state_dict(), path)
    fresh = nn.Sequential(nn.Linear(2, 2))
    fresh.load_state_dict(mte.load(path))
    assert all((a == b).all() for a, b in zip(fresh.parameters(), model.parameters()))


def test_generator_devices():
    assert mte.Generator().device == mte.device("cpu") == mte.Generator("cpu").device
    for lib in (mte, torch):
        with pytest.raises(RuntimeError, match="(?i)cuda generator"):
            lib.Generator("cuda")
