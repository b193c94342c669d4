"""Finding and opening the C runtime, libmte_runtime.so, through cffi in ABI mode: the C
declarations the loader uses (from native/include/mte_runtime.h and mte.h) and `ffi.dlopen`,
so nothing is compiled at install time.

The library is looked for, in order: $MTE_RUNTIME_LIBRARY; lib/libmte_runtime.so next to this
file (an installed package); native/build/libmte_runtime.so of a source checkout.
"""
import os

try:
    import cffi
except ImportError:  # the package installed without its `runtime` extra: lib() says so
    cffi = None

ENV_VAR = "MTE_RUNTIME_LIBRARY"
LIB_NAME = "libmte_runtime.so"
_HERE = os.path.dirname(os.path.abspath(__file__))

CDEF = """
typedef struct mte_model mte_model;
const char *mte_runtime_status_string(int status);
const char *mte_version(void);
int mte_model_load(const char *path, mte_model **out, char *err, size_t errlen);
void mte_model_free(mte_model *model);
const char *mte_model_name(const mte_model *model);
int mte_model_num_nodes(const mte_model *model);
int mte_model_num_inputs(const mte_model *model);
const char *mte_model_input_name(const mte_model *model, int i);
int mte_model_input_ndim(const mte_model *model, int i);
const int64_t *mte_model_input_shape(const mte_model *model, int i);
int mte_model_input_dtype(const mte_model *model, int i);
int64_t mte_model_input_nbytes(const mte_model *model, int i);
int mte_model_num_outputs(const mte_model *model);
const char *mte_model_output_name(const mte_model *model, int i);
int mte_model_output_ndim(const mte_model *model, int i);
const int64_t *mte_model_output_shape(const mte_model *model, int i);
int mte_model_output_dtype(const mte_model *model, int i);
int64_t mte_model_output_nbytes(const mte_model *model, int i);
int64_t mte_model_arena_bytes(const mte_model *model);
int64_t mte_model_prepared_bytes(const mte_model *model);
int mte_model_run(mte_model *model, const void *const *inputs, void *const *outputs,
                  char *err, size_t errlen);
const char *mte_model_node_name(const mte_model *model, int node);
const char *mte_model_node_op(const mte_model *model, int node);
const char *mte_model_node_kernel(const mte_model *model, int node);
int mte_model_set_profiling(mte_model *model, int on);
int mte_model_node_last(const mte_model *model, int node, double *start_seconds,
                        double *seconds);
int mte_set_num_threads(int n);
int mte_get_num_threads(void);
"""

ffi = None
if cffi is not None:
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
_lib = None


def candidates():
    """[(where, path)] in the order they are tried (the env var only when it is set)."""
    out = []
    if os.environ.get(ENV_VAR):
        out.append((f"${ENV_VAR}", os.environ[ENV_VAR]))
    out.append(("the installed package", os.path.join(_HERE, "lib", LIB_NAME)))
    checkout = os.path.dirname(os.path.dirname(_HERE))
    out.append(("a source checkout", os.path.join(checkout, "native", "build", LIB_NAME)))
    return out


def library_path():
    """The path of the library that will be opened; LibraryNotFoundError naming every place
    tried (and the fix) when there is none. A set $MTE_RUNTIME_LIBRARY must exist."""
    from .errors import LibraryNotFoundError
    tried = candidates()
    if os.environ.get(ENV_VAR) and not os.path.isfile(tried[0][1]):
        raise LibraryNotFoundError(f"${ENV_VAR} is {tried[0][1]!r}, which is not a file; "
                                   f"point it at a built {LIB_NAME} or unset it")
    for _, path in tried:
        if os.path.isfile(path):
            return path
    places = "; ".join(f"{where}: {path}" for where, path in tried)
    raise LibraryNotFoundError(
        f"{LIB_NAME} not found (looked in ${ENV_VAR} (not set); {places}). Build it with "
        f"`make -C native runtime` in a source checkout, install the package with "
        f"`pip install .`, or set ${ENV_VAR} to its path")


def lib():
    """The opened library (opened on first use, then cached)."""
    global _lib
    if ffi is None:
        raise ImportError("minitorch_edge.runtime needs cffi: pip install \"minitorch-edge[runtime]\" "
                          "(or pip install cffi)")
    if _lib is None:
        _lib = ffi.dlopen(library_path())
    return _lib


def text(ptr):
    """A C string as str ('' for NULL)."""
    return "" if ptr == ffi.NULL else ffi.string(ptr).decode("utf-8", "replace")
