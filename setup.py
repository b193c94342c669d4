"""Build script for minitorch_edge: the pure-Python package plus the optional native
extension ``minitorch_edge._C`` (libmte from native/ + the pybind11 bindings).

Project metadata lives in pyproject.toml; this file only describes the extension, because
it needs two things setuptools cannot express declaratively:

* per-file compiler flags: each microkernel in native/src/arch/<isa>/ is compiled with its
  own ISA flags (-mavx2 -mfma, -mavx512f ...) while everything else stays portable, so one
  wheel runs on any CPU of its architecture and picks kernels at run time;
* an optional build: if there is no compiler, no pybind11, or the build fails, the install
  still succeeds (with a warning) and minitorch_edge runs on its numpy backend.

The same build also makes the C runtime's deliverables, with the same per-ISA flags and
OpenMP, into the package: minitorch_edge/runtime/lib/libmte_runtime.so (libmte + runtime/,
its API exported) and minitorch_edge/runtime/bin/mte-run (tools/, linked with those objects
statically); the `mte-run` command (minitorch_edge/runtime/_cli.py) runs the latter. They
are optional in the same way: without them the install succeeds and says so.

Every file is compiled in parallel (os.cpu_count() jobs; MTE_BUILD_JOBS overrides): libmte's
C sources with their own flags (`_compile`), and the extension's own C++ sources, which
setuptools would compile one after another (`_parallel_compile`).

When the extension is not built (a failed build, no pybind11, MTE_NO_EXTENSION=1), the reason is
kept in minitorch_edge/_native_build_error.txt, installed with the package: `import
minitorch_edge` with MTE_BACKEND=native warns with it, and `minitorch-edge info` prints it
(backend.native_error()). A successful build removes the file.

Set MTE_NO_EXTENSION=1 to skip the extension (and so the runtime's files) on purpose.
"""
import glob
import os
import platform
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = "native"


def _sources(*patterns):
    """Sources under native/ matching the patterns, relative to native/, sorted."""
    found = []
    for pattern in patterns:
        found += glob.glob(os.path.join(HERE, NATIVE, pattern))
    return sorted(os.path.relpath(f, os.path.join(HERE, NATIVE)) for f in found)


# every .c in src/ and src/arch/generic/ is portable; a kernel is added by adding a file
COMMON_SOURCES = _sources("src/*.c", "src/arch/generic/*.c")
AVX2_FLAGS = ["-mavx2", "-mfma"]
AVX512_FLAGS = ["-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mfma"]
VNNI_FLAGS = AVX512_FLAGS + ["-mavx512vnni"]
DOTPROD_FLAGS = ["-march=armv8.2-a+dotprod"]
# machine -> [(source, extra flags)]; a machine not listed gets the portable kernels only
ISA_SOURCES = {
    "x86_64": [(s, AVX2_FLAGS) for s in _sources("src/arch/x86_avx2/*.c")] +
              [(s, AVX512_FLAGS) for s in _sources("src/arch/x86_avx512/*.c")] +
              [(s, VNNI_FLAGS) for s in _sources("src/arch/x86_avx512vnni/*.c")],
    "aarch64": [(s, []) for s in _sources("src/arch/arm_neon/*.c")] +
               [(s, DOTPROD_FLAGS) for s in _sources("src/arch/arm_dotprod/*.c")],
}
MACHINE_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}
# the C runtime (runtime/, portable C11) and its command-line tools (tools/: mte-run)
RUNTIME_SOURCES = _sources("runtime/*.c")
TOOL_SOURCES = _sources("tools/*.c")
PORTABLE_FLAGS = ["-std=c11", "-O3", "-g0", "-fPIC", "-fvisibility=hidden"]
# MTE_EMBEDDED: libmte's symbols stay private to the extension module
C_FLAGS = PORTABLE_FLAGS + ["-DMTE_EMBEDDED"]
# where the runtime's shared library and executable go, inside the package
RUNTIME_PACKAGE = os.path.join("minitorch_edge", "runtime")
# why the extension is missing (read by minitorch_edge/backend/__init__.py: BUILD_ERROR_FILE)
BUILD_ERROR_FILE = os.path.join("minitorch_edge", "_native_build_error.txt")
JOBS = max(1, int(os.environ.get("MTE_BUILD_JOBS") or os.cpu_count() or 1))
_not_built = []       # why extensions() returned no extension (then build_ext does not run)


def _warn(msg):
    sys.stderr.write(f"\nWARNING (minitorch_edge): {msg}\n"
                     "minitorch_edge will be installed without its native extension (nor "
                     "the C runtime's mte-run and libmte_runtime.so) and will use the numpy "
                     "backend.\n\n")


def _build_error_paths(build_lib, source_tree=True):
    """Where the build's error file goes: the package being installed (build_lib) and, for
    in-place builds, the source tree."""
    return [os.path.join(build_lib, BUILD_ERROR_FILE)] + (
        [os.path.join(HERE, BUILD_ERROR_FILE)] if source_tree else [])


def _record_build_error(build_lib, reason, source_tree):
    """Keep why the extension is missing next to the package (best effort)."""
    text = (f"the native extension minitorch_edge._C was not built: {reason}\n"
            f"(machine {platform.machine()}, Python {platform.python_version()}; "
            f"`pip install -v .` shows the compiler's own output)\n")
    for path in _build_error_paths(build_lib, source_tree):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError:
            pass


def _clear_build_error(build_lib):
    for path in _build_error_paths(build_lib):
        try:
            os.remove(path)
        except OSError:
            pass


def _parallel_compile(compile, jobs):
    """`compile` (a CCompiler's) that compiles a list of sources one file per thread, keeping
    the order of the objects; setuptools calls it with all of an extension's sources."""
    def parallel(sources, *args, **kwargs):
        if len(sources) < 2 or jobs < 2:
            return compile(sources, *args, **kwargs)
        with ThreadPoolExecutor(min(jobs, len(sources))) as pool:
            return [obj for objs in pool.map(lambda src: compile([src], *args, **kwargs),
                                             sources) for obj in objs]
    return parallel


def _machine():
    m = platform.machine().lower()
    m = MACHINE_ALIASES.get(m, m)
    # a 32-bit Python on a 64-bit kernel reports the kernel's machine
    if m in ("x86_64", "aarch64") and sys.maxsize <= 2**32:
        return "32bit"
    return m


class OptionalBuildExt(build_ext):
    """build_ext that compiles the C sources one by one with their own flags, links them
    into the extension, and turns any failure into a warning."""

    def run(self):
        self._runtime_files = []
        self._failure = None
        try:
            super().run()
        except Exception as exc:  # no compiler at all, broken toolchain, ...
            self._failure = f"building the native extension failed: {exc}"
            _warn(self._failure)
        if self._failure is None:
            _clear_build_error(self.build_lib)
        else:
            _record_build_error(self.build_lib, self._failure, source_tree=self.inplace)
        if self.inplace:  # setuptools builds in build_lib, then copies to the source tree
            for rel in self._runtime_files:
                target = os.path.join(HERE, rel)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                self.copy_file(os.path.join(self.build_lib, rel), target)

    def build_extension(self, ext):
        try:
            self._build_native(ext)
        except Exception as exc:
            self._failure = f"building {ext.name} failed: {type(exc).__name__}: {exc}"
            _warn(self._failure)

    def _flag_works(self, flag):
        """Whether the C compiler accepts `flag` when compiling and linking."""
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "probe.c")
            with open(src, "w") as f:
                f.write("int main(void) { return 0; }\n")
            try:
                objs = self.compiler.compile([src], output_dir=tmp, extra_postargs=[flag])
                self.compiler.link_executable(objs, "probe", output_dir=tmp,
                                              extra_postargs=[flag])
                return True
            except Exception:
                return False

    def _compile(self, sources, output_dir, include_dirs, flags):
        """Object files of [(source under native/, extra flags)], compiled in parallel."""
        def one(item):
            src, extra = item
            return self.compiler.compile(
                [os.path.join(NATIVE, src)], output_dir=output_dir, include_dirs=include_dirs,
                extra_postargs=flags + extra, debug=self.debug)
        with ThreadPoolExecutor(max(1, min(len(sources), JOBS))) as pool:
            return [obj for objs in pool.map(one, sources) for obj in objs]

    def _build_native(self, ext):
        if self.compiler.compiler_type == "msvc":
            raise RuntimeError("MSVC is not supported (libmte needs a GCC-compatible compiler)")
        openmp = ["-fopenmp"] if self._flag_works("-fopenmp") else []
        if not openmp:
            sys.stderr.write("minitorch_edge: compiler has no OpenMP; kernels will use 1 thread\n")
        sources = ([(s, []) for s in COMMON_SOURCES] + ISA_SOURCES.get(_machine(), []) +
                   [(s, []) for s in RUNTIME_SOURCES])
        include_dirs = [os.path.join(NATIVE, d) for d in ("include", "src", "runtime")]
        objects = self._compile(sources, self.build_temp, include_dirs, C_FLAGS + openmp)
        ext.extra_objects = objects + list(ext.extra_objects or [])
        ext.extra_link_args = list(ext.extra_link_args or []) + openmp
        serial = self.compiler.compile     # the extension's own (C++) sources: in parallel too
        self.compiler.compile = _parallel_compile(serial, JOBS)
        try:
            super().build_extension(ext)
        finally:
            self.compiler.compile = serial
        self._copy_into_source_tree(ext)
        try:
            self._build_runtime_files(sources, include_dirs, openmp)
        except Exception as exc:
            sys.stderr.write(f"\nWARNING (minitorch_edge): building libmte_runtime.so and "
                             f"mte-run failed: {exc}\nminitorch_edge is installed without "
                             "them (the mte-run command will say so).\n\n")

    def _runtime_dir(self, sub):
        return os.path.join(self.build_lib, RUNTIME_PACKAGE, sub)

    def _build_runtime_files(self, sources, include_dirs, openmp):
        """libmte_runtime.so and mte-run into minitorch_edge/runtime/{lib,bin}/: the same
        sources and flags as _C's but compiled again without MTE_EMBEDDED (the shared
        library exports the mte_* API, which _C's objects keep hidden)."""
        tmp = os.path.join(self.build_temp, "runtime_exported")
        objects = self._compile(sources, tmp, include_dirs, PORTABLE_FLAGS + openmp)
        tools = self._compile([(s, []) for s in TOOL_SOURCES], tmp,
                              include_dirs + [os.path.join(NATIVE, "tools")], PORTABLE_FLAGS)
        link_args = openmp + ["-lpthread", "-lm"]
        # -z nodelete: a dlclose (cffi's, at interpreter exit) must not unmap the library and
        # libgomp under OpenMP worker threads that still spin in them (a segfault at exit)
        self.compiler.link_shared_object(objects, "libmte_runtime.so",
                                         output_dir=self._runtime_dir("lib"),
                                         extra_postargs=link_args + ["-Wl,-z,nodelete"])
        self.compiler.link_executable(tools + objects, "mte-run",
                                      output_dir=self._runtime_dir("bin"),
                                      extra_postargs=link_args)
        self._runtime_files = [os.path.join(RUNTIME_PACKAGE, "lib", "libmte_runtime.so"),
                               os.path.join(RUNTIME_PACKAGE, "bin", "mte-run")]
        sys.stderr.write("minitorch_edge: built " + " and ".join(self._runtime_files) + "\n")

    def _copy_into_source_tree(self, ext):
        """Also drop the built module next to the sources (like build_ext --inplace).

        The README's test command, `pip install ".[test]" && python -m pytest -q`, runs from
        the checkout, where `python -m` puts the source tree first on sys.path: without
        this copy the tests would import the source package, which has no _C."""
        if self.inplace:
            return
        built = self.get_ext_fullpath(ext.name)
        target = os.path.join(HERE, *ext.name.split(".")[:-1], os.path.basename(built))
        if os.path.isdir(os.path.dirname(target)) and os.path.exists(built):
            try:
                self.copy_file(built, target)
            except OSError as exc:  # read-only checkout: the installed copy still works
                sys.stderr.write(f"minitorch_edge: could not copy {built} to {target}: {exc}\n")


class RecordingBuildPy(build_py):
    """build_py that also keeps the reason when no extension is to be built at all (then
    build_ext does not run to keep it)."""

    def run(self):
        super().run()
        if _not_built:
            _record_build_error(self.build_lib, _not_built[0], source_tree=False)


def extensions():
    if os.environ.get("MTE_NO_EXTENSION") == "1":
        _not_built.append("skipped on purpose: MTE_NO_EXTENSION=1 was set when installing")
        return []
    try:
        from pybind11.setup_helpers import Pybind11Extension
    except ImportError:
        _warn("pybind11 is not installed")
        _not_built.append("pybind11 is not installed (pip install pybind11, then reinstall)")
        return []
    ext = Pybind11Extension(
        "minitorch_edge._C",
        [os.path.join(NATIVE, b) for b in _sources("bindings/*.cpp")],
        include_dirs=[os.path.join(NATIVE, "include")],
        define_macros=[("MTE_EMBEDDED", "1")],
        cxx_std=17,
        # libmte's objects are linked in as extra objects, which build_ext does not compare
        # with the module's date: list every native file, so a change to any relinks _C
        depends=[os.path.join(NATIVE, f) for f in
                 _sources("src/*.c", "src/*.h", "src/arch/*/*.c", "include/*.h",
                          "bindings/*.h", "runtime/*.c", "runtime/*.h", "tools/*.c",
                          "tools/*.h")],
    )
    ext.optional = True
    return [ext]


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt,
                                         "build_py": RecordingBuildPy})
