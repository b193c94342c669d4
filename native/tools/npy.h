/*
 * npy.h - a strict reader and an atomic writer of NumPy .npy files, for mte-run: only what
 * the runtime can hold (the nine little-endian dtypes of mte_dtype, C order), and nothing
 * in a file is trusted.
 *
 * Read: format versions 1.0, 2.0 and 3.0; the header is a Python dict literal with exactly
 * the keys 'descr', 'fortran_order' and 'shape' (any order, one optional trailing comma),
 * at most NPY_MAX_HEADER_BYTES long and ending in '\n'; descr one of
 * <f4 <f8 <f2 |i1 <i2 <i4 <i8 |u1 |b1; fortran_order False (True is refused); shape a tuple
 * of at most NPY_MAX_NDIM ints >= 0 whose product times the item size fits in int64. The
 * data must be exactly the declared bytes and is only allocated once the file's size says
 * they are there. A bool array's bytes must be 0 or 1.
 *
 * Write: version 1.0, the header numpy itself writes (padded with spaces to a multiple of
 * 64 bytes, ending in '\n'), into a temporary file in the target's directory that is then
 * renamed over the target, so the target is either absent, its old self, or complete.
 *
 * Every function returns MTE_OK or a status (MTE_EIO: cannot read or write the file;
 * MTE_EFORMAT: not a valid or supported .npy; MTE_ENOMEM) with a message in err naming
 * what was wrong and what was expected.
 */
#ifndef MTE_NPY_H
#define MTE_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "mte_runtime.h"

#define NPY_MAX_HEADER_BYTES 10000 /* numpy's own default limit (max_header_size) */
#define NPY_MAX_NDIM MTE_MODEL_MAX_NDIM

typedef struct npy_header {
  int major, minor;      /* format version */
  mte_dtype dtype;
  int ndim;
  int64_t shape[NPY_MAX_NDIM];
  int64_t numel;
  int64_t nbytes;        /* numel * item size */
  size_t data_offset;    /* where the data starts: preamble + header */
} npy_header;

typedef struct npy_array {
  npy_header h;
  void *data; /* nbytes (at least 1) bytes, 64-byte aligned; free with npy_array_free */
} npy_array;

/* Parse the preamble and header at the start of a file: `buf` holds its first `len` bytes
 * (at least the whole header, or the call says the file is truncated). Checks everything
 * but the data. */
int npy_parse_header(const unsigned char *buf, size_t len, npy_header *h, char *err,
                     size_t errlen);

/* Read a whole .npy file. On failure out->data is NULL. */
int npy_read_file(const char *path, npy_array *out, char *err, size_t errlen);
void npy_array_free(npy_array *a);

/* Write `head` then `data` into a temporary file next to `path` (fsync'd), renamed over it:
 * readers see the old file or the whole new one, never a part (used for .npy and traces). */
int npy_write_atomic(const char *path, const void *head, size_t hlen, const void *data,
                     size_t n, char *err, size_t errlen);

/* Write `data` (C order, nbytes = numel * item size) as a version 1.0 .npy file, atomically. */
int npy_write_file(const char *path, mte_dtype dtype, int ndim, const int64_t *shape,
                   const void *data, char *err, size_t errlen);

/* '<f4' ... for a dtype (NULL if invalid); its item size (0 if invalid). */
const char *npy_descr(mte_dtype dtype);
size_t npy_item_size(mte_dtype dtype);

#endif
