"""The C runtime on ARM: mte-run cross-built for aarch64 (`make -C native aarch64`, into
native/build/aarch64) runs the digits CNN and MobileNetV2, float32 and int8, under
qemu-aarch64 on a Cortex-A72 (NEON) and on qemu's "max" CPU (NEON with the dot product); the
outputs must equal x86's: int8 graphs bit for bit (the integer arithmetic is exact on every
ISA, and their float output is one dequantization of equal integers), float32 within 1e-5
relative.

Skipped when the aarch64 build or qemu is missing, unless MTE_REQUIRE_AARCH64=1 (set by CI,
which builds it first) turns the skip into a failure.
"""
import os
import shutil
import subprocess

import numpy as np
import pytest

from minitorch_edge import graph, models, quant

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
X86 = os.path.join(ROOT, "native", "build", "mte-run")
ARM = os.path.join(ROOT, "native", "build", "aarch64", "mte-run")
QEMU = shutil.which("qemu-aarch64")
SYSROOT = "/usr/aarch64-linux-gnu"


def _require():
    missing = [what for what, ok in (("native/build/aarch64/mte-run", os.path.exists(ARM)),
                                     ("qemu-aarch64", QEMU is not None)) if not ok]
    if missing:
        msg = f"{', '.join(missing)} missing (make -C native aarch64; apt-get install qemu-user)"
        if os.environ.get("MTE_REQUIRE_AARCH64") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    if not os.path.exists(X86):
        subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "native"), "mte-run"],
                       check=True, stdout=subprocess.DEVNULL)


def _models():
    rng = np.random.default_rng(0)
    digits = models.SmallCNN(in_channels=1, num_classes=10, input_size=8)
    mnv2 = models.mobilenet_v2()
    out = []
    for name, m, shape in (("digits", digits, (1, 1, 8, 8)), ("mobilenet_v2", mnv2, (1, 3, 224, 224))):
        m.eval()
        x = rng.standard_normal(shape).astype(np.float32)
        calib = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
        out.append((f"{name}-float32", graph.trace(m, x).optimize(), x))
        out.append((f"{name}-int8", quant.quantize(m, calib), x))
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    _require()
    d = tmp_path_factory.mktemp("aarch64")
    made = []
    for name, g, x in _models():
        model, xp = str(d / f"{name}.mte"), str(d / f"{name}.x.npy")
        g.save(model)
        np.save(xp, x)
        made.append((name, model, xp))
    return made


def _run(argv, out):
    done = subprocess.run(argv + ["--output", out], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return np.load(out)


@pytest.mark.parametrize("cpu", ["cortex-a72", "max"])
def test_aarch64_equals_x86(files, cpu, tmp_path):
    for name, model, xp in files:
        want = _run([X86, model, "--input", xp, "--threads", "1"], str(tmp_path / "x86.npy"))
        got = _run([QEMU, "-L", SYSROOT, "-cpu", cpu, ARM, model, "--input", xp, "--threads", "1"],
                   str(tmp_path / "arm.npy"))
        assert got.shape == want.shape and got.dtype == want.dtype, name
        if name.endswith("int8"):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} on {cpu}")
        else:
            scale = float(np.abs(want).max())
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale,
                                       err_msg=f"{name} on {cpu}")
