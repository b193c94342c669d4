/*
 * npy.c - NumPy .npy files for mte-run (npy.h): a strict parser of the preamble and the
 * header dict (a small recursive-descent reader of exactly the Python literal numpy
 * writes), a reader that checks the data size against the file size before allocating,
 * and an atomic version 1.0 writer (temporary file in the same directory + rename).
 */
#define _POSIX_C_SOURCE 200809L

#include "npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

static const struct {
  mte_dtype dtype;
  const char *descr;
  size_t size;
} DESCRS[] = {
    {MTE_DTYPE_FLOAT32, "<f4", 4}, {MTE_DTYPE_FLOAT64, "<f8", 8}, {MTE_DTYPE_FLOAT16, "<f2", 2},
    {MTE_DTYPE_INT8, "|i1", 1},    {MTE_DTYPE_INT16, "<i2", 2},   {MTE_DTYPE_INT32, "<i4", 4},
    {MTE_DTYPE_INT64, "<i8", 8},   {MTE_DTYPE_UINT8, "|u1", 1},   {MTE_DTYPE_BOOL, "|b1", 1},
};
#define NUM_DESCRS (sizeof DESCRS / sizeof DESCRS[0])
#define SUPPORTED "<f4 <f8 <f2 |i1 <i2 <i4 <i8 |u1 |b1"

static int fail(char *err, size_t errlen, int status, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return status;
}

const char *npy_descr(mte_dtype dtype) {
  for (size_t i = 0; i < NUM_DESCRS; ++i)
    if (DESCRS[i].dtype == dtype) return DESCRS[i].descr;
  return NULL;
}

size_t npy_item_size(mte_dtype dtype) {
  for (size_t i = 0; i < NUM_DESCRS; ++i)
    if (DESCRS[i].dtype == dtype) return DESCRS[i].size;
  return 0;
}

/* ---- the header dict --------------------------------------------------------------------- */

typedef struct cursor {
  const char *s;
  size_t n, i;
  char *err;
  size_t errlen;
} cursor;

static int bad(cursor *c, const char *what) {
  return fail(c->err, c->errlen, MTE_EFORMAT, "malformed header at byte %zu: %s", c->i, what);
}

static void skip_spaces(cursor *c) {
  while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t')) ++c->i;
}

static int peek(const cursor *c) { return c->i < c->n ? (unsigned char)c->s[c->i] : -1; }

static int expect(cursor *c, char ch, const char *what) {
  skip_spaces(c);
  if (peek(c) != ch) return bad(c, what);
  ++c->i;
  return MTE_OK;
}

/* a quoted string of at most cap - 1 plain characters (letters, digits, _ < > | =) */
static int parse_string(cursor *c, char *out, size_t cap) {
  skip_spaces(c);
  int q = peek(c);
  if (q != '\'' && q != '"') return bad(c, "expected a quoted string");
  ++c->i;
  size_t len = 0;
  for (;;) {
    int ch = peek(c);
    if (ch == q) break;
    int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                ch == '_' || ch == '<' || ch == '>' || ch == '|' || ch == '=';
    if (!plain) return bad(c, ch < 0 ? "unterminated string" : "unexpected character in a string");
    if (len + 1 >= cap) return bad(c, "string too long");
    out[len++] = (char)ch;
    ++c->i;
  }
  ++c->i;
  out[len] = 0;
  return MTE_OK;
}

static int parse_bool(cursor *c, int *out) {
  skip_spaces(c);
  if (c->n - c->i >= 4 && memcmp(c->s + c->i, "True", 4) == 0) {
    c->i += 4, *out = 1;
    return MTE_OK;
  }
  if (c->n - c->i >= 5 && memcmp(c->s + c->i, "False", 5) == 0) {
    c->i += 5, *out = 0;
    return MTE_OK;
  }
  return bad(c, "fortran_order must be True or False");
}

/* a decimal int >= 0 without leading zeros that fits in int64 */
static int parse_dim(cursor *c, int64_t *out) {
  skip_spaces(c);
  size_t start = c->i;
  int64_t v = 0;
  while (peek(c) >= '0' && peek(c) <= '9') {
    int d = peek(c) - '0';
    if (c->i > start && v == 0) return bad(c, "a dimension has a leading zero");
    if (v > (INT64_MAX - d) / 10) return bad(c, "a dimension is too large");
    v = v * 10 + d;
    ++c->i;
  }
  if (c->i == start) return bad(c, "expected a dimension (an int >= 0)");
  *out = v;
  return MTE_OK;
}

/* "()", "(3,)", "(2, 3)", "(2, 3,)" */
static int parse_shape(cursor *c, npy_header *h) {
  int st = expect(c, '(', "shape must be a tuple");
  if (st) return st;
  h->ndim = 0;
  skip_spaces(c);
  if (peek(c) == ')') {
    ++c->i;
    return MTE_OK;
  }
  for (;;) {
    if (h->ndim == NPY_MAX_NDIM) return bad(c, "more than 64 dimensions");
    if ((st = parse_dim(c, &h->shape[h->ndim++]))) return st;
    skip_spaces(c);
    if (peek(c) == ')') {
      if (h->ndim == 1) return bad(c, "a one-dimensional shape needs a trailing comma: (n,)");
      ++c->i;
      return MTE_OK;
    }
    if ((st = expect(c, ',', "expected ',' or ')' in the shape"))) return st;
    skip_spaces(c);
    if (peek(c) == ')') {
      ++c->i;
      return MTE_OK;
    }
  }
}

static int parse_descr(cursor *c, npy_header *h) {
  char descr[32];
  int st = parse_string(c, descr, sizeof descr);
  if (st) return st;
  for (size_t i = 0; i < NUM_DESCRS; ++i)
    if (strcmp(descr, DESCRS[i].descr) == 0) {
      h->dtype = DESCRS[i].dtype;
      return MTE_OK;
    }
  return fail(c->err, c->errlen, MTE_EFORMAT, "unsupported dtype '%s' (supported: " SUPPORTED ")",
              descr);
}

/* one "'key': value" entry; seen: bit 0 descr, 1 fortran_order, 2 shape */
static int parse_entry(cursor *c, npy_header *h, unsigned *seen) {
  char key[32];
  int st = parse_string(c, key, sizeof key);
  if (st) return st;
  unsigned bit = strcmp(key, "descr") == 0 ? 1u : strcmp(key, "fortran_order") == 0 ? 2u
                 : strcmp(key, "shape") == 0 ? 4u : 0u;
  if (!bit)
    return fail(c->err, c->errlen, MTE_EFORMAT,
                "unknown header key '%s' (expected descr, fortran_order, shape)", key);
  if (*seen & bit) return fail(c->err, c->errlen, MTE_EFORMAT, "duplicate header key '%s'", key);
  *seen |= bit;
  if ((st = expect(c, ':', "expected ':' after a key"))) return st;
  if (bit == 1) return parse_descr(c, h);
  if (bit == 4) return parse_shape(c, h);
  int fortran = 0;
  if ((st = parse_bool(c, &fortran))) return st;
  if (fortran)
    return fail(c->err, c->errlen, MTE_EFORMAT,
                "fortran_order is True: only C-order arrays are supported (save "
                "np.ascontiguousarray(a))");
  return MTE_OK;
}

static int parse_dict(cursor *c, npy_header *h) {
  unsigned seen = 0;
  int st = expect(c, '{', "the header must start with '{'");
  if (st) return st;
  for (;;) {
    skip_spaces(c);
    if (peek(c) == '}') break;
    if ((st = parse_entry(c, h, &seen))) return st;
    skip_spaces(c);
    if (peek(c) == ',') {
      ++c->i;
      continue;
    }
    if (peek(c) != '}') return bad(c, "expected ',' or '}'");
  }
  ++c->i;
  if (seen != 7)
    return fail(c->err, c->errlen, MTE_EFORMAT, "the header lacks '%s'",
                !(seen & 1) ? "descr" : !(seen & 2) ? "fortran_order" : "shape");
  skip_spaces(c);
  if (c->i + 1 != c->n || c->s[c->i] != '\n')
    return bad(c, "the header must end with spaces and one '\\n' after '}'");
  return MTE_OK;
}

/* numel and nbytes without overflow */
static int sizes(npy_header *h, char *err, size_t errlen) {
  int64_t numel = 1;
  for (int d = 0; d < h->ndim; ++d) {
    if (h->shape[d] != 0 && numel > INT64_MAX / h->shape[d])
      return fail(err, errlen, MTE_EFORMAT, "the shape's element count overflows int64");
    numel *= h->shape[d];
  }
  int64_t item = (int64_t)npy_item_size(h->dtype);
  if (numel > INT64_MAX / item)
    return fail(err, errlen, MTE_EFORMAT, "the array's byte size overflows int64");
  h->numel = numel;
  h->nbytes = numel * item;
  if ((uint64_t)h->nbytes > (uint64_t)SIZE_MAX)
    return fail(err, errlen, MTE_EFORMAT, "the array is too large for this machine");
  return MTE_OK;
}

int npy_parse_header(const unsigned char *buf, size_t len, npy_header *h, char *err,
                     size_t errlen) {
  memset(h, 0, sizeof *h);
  if (len < 8 || memcmp(buf, MAGIC, sizeof MAGIC) != 0)
    return fail(err, errlen, MTE_EFORMAT, "not a .npy file (it does not start with \\x93NUMPY)");
  h->major = buf[6], h->minor = buf[7];
  if (h->major < 1 || h->major > 3 || h->minor != 0)
    return fail(err, errlen, MTE_EFORMAT,
                "unsupported .npy format version %d.%d (expected 1.0, 2.0 or 3.0)", h->major,
                h->minor);
  size_t pre = h->major == 1 ? 10 : 12;
  if (len < pre) return fail(err, errlen, MTE_EFORMAT, "truncated .npy preamble");
  size_t hlen = h->major == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                              : (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
                                    (size_t)buf[11] << 24;
  if (hlen > NPY_MAX_HEADER_BYTES)
    return fail(err, errlen, MTE_EFORMAT, "the header is %zu bytes, more than the limit of %d",
                hlen, NPY_MAX_HEADER_BYTES);
  if (len - pre < hlen)
    return fail(err, errlen, MTE_EFORMAT, "truncated: the header needs %zu bytes, the file has %zu",
                hlen, len - pre);
  cursor c = {(const char *)buf + pre, hlen, 0, err, errlen};
  int st = parse_dict(&c, h);
  if (st) return st;
  h->data_offset = pre + hlen;
  return sizes(h, err, errlen);
}

/* ---- reading -------------------------------------------------------------------------------- */

void npy_array_free(npy_array *a) {
  if (!a) return;
  free(a->data);
  a->data = NULL;
}

static int check_bools(const npy_array *a, char *err, size_t errlen) {
  const unsigned char *b = a->data;
  for (int64_t k = 0; k < a->h.numel; ++k)
    if (b[k] > 1)
      return fail(err, errlen, MTE_EFORMAT, "bool element %lld is %u (expected 0 or 1)",
                  (long long)k, b[k]);
  return MTE_OK;
}

static int read_data(FILE *f, int64_t file_size, npy_array *out, char *err, size_t errlen) {
  const npy_header *h = &out->h;
  int64_t have = file_size - (int64_t)h->data_offset;
  if (have != h->nbytes)
    return fail(err, errlen, MTE_EFORMAT,
                "the data is %lld bytes, the header's %s shape needs %lld (%s)", (long long)have,
                npy_descr(h->dtype), (long long)h->nbytes,
                have < h->nbytes ? "truncated file" : "trailing bytes");
  size_t n = (size_t)h->nbytes;
  out->data = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
  if (!out->data) return fail(err, errlen, MTE_ENOMEM, "out of memory for %zu bytes", n);
  if (fseek(f, (long)h->data_offset, SEEK_SET) != 0 || fread(out->data, 1, n, f) != n)
    return fail(err, errlen, MTE_EIO, "cannot read the data: %s", strerror(errno));
  return h->dtype == MTE_DTYPE_BOOL ? check_bools(out, err, errlen) : MTE_OK;
}

static int read_open(FILE *f, npy_array *out, char *err, size_t errlen) {
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0) return fail(err, errlen, MTE_EIO, "%s", strerror(errno));
  if (!S_ISREG(sb.st_mode)) return fail(err, errlen, MTE_EIO, "not a regular file");
  size_t want = 12 + NPY_MAX_HEADER_BYTES;
  if ((uint64_t)sb.st_size < want) want = (size_t)sb.st_size;
  unsigned char *head = malloc(want ? want : 1);
  if (!head) return fail(err, errlen, MTE_ENOMEM, "out of memory");
  int st = MTE_OK;
  if (fread(head, 1, want, f) != want)
    st = fail(err, errlen, MTE_EIO, "cannot read the header: %s", strerror(errno));
  else
    st = npy_parse_header(head, want, &out->h, err, errlen);
  free(head);
  return st ? st : read_data(f, (int64_t)sb.st_size, out, err, errlen);
}

int npy_read_file(const char *path, npy_array *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (err && errlen) err[0] = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return fail(err, errlen, MTE_EIO, "cannot open: %s", strerror(errno));
  int st = read_open(f, out, err, errlen);
  fclose(f);
  if (st) npy_array_free(out);
  return st;
}

/* ---- writing -------------------------------------------------------------------------------- */

/* numpy's header: sorted keys, room for the first axis to grow to 21 digits, padded so that
 * the data starts at a multiple of 64; returns its length (with the 10-byte preamble) */
static size_t format_header(char *buf, size_t cap, mte_dtype dtype, int ndim,
                            const int64_t *shape) {
  char dims[NPY_MAX_NDIM * 22 + 8] = "";
  size_t at = 0;
  for (int d = 0; d < ndim; ++d)
    at += (size_t)snprintf(dims + at, sizeof dims - at, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (ndim == 1) at += (size_t)snprintf(dims + at, sizeof dims - at, ",");
  int n = snprintf(buf + 10, cap - 10, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                   npy_descr(dtype), dims);
  size_t len = 10 + (size_t)n;
  if (ndim > 0) {
    int digits = snprintf(NULL, 0, "%lld", (long long)shape[0]);
    for (int k = digits; k < 21; ++k) buf[len++] = ' ';
  }
  while ((len + 1) % 64) buf[len++] = ' ';
  buf[len++] = '\n';
  memcpy(buf, MAGIC, sizeof MAGIC);
  buf[6] = 1, buf[7] = 0;
  buf[8] = (char)((len - 10) & 0xff), buf[9] = (char)((len - 10) >> 8);
  return len;
}

static int write_stream(FILE *f, const void *header, size_t hlen, const void *data, size_t n) {
  if (fwrite(header, 1, hlen, f) != hlen) return -1;
  if (n && fwrite(data, 1, n, f) != n) return -1;
  if (fflush(f) != 0) return -1;
  return fsync(fileno(f));
}

int npy_write_atomic(const char *path, const void *head, size_t hlen, const void *data,
                     size_t n, char *err, size_t errlen) {
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 16);
  if (!tmp) return fail(err, errlen, MTE_ENOMEM, "out of memory");
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".tmp.XXXXXX", 12);
  int fd = mkstemp(tmp);
  int st = MTE_OK;
  if (fd < 0) {
    st = fail(err, errlen, MTE_EIO, "cannot create a temporary file next to it: %s",
              strerror(errno));
    free(tmp);
    return st;
  }
  mode_t mask = umask(0);
  umask(mask);
  FILE *f = fdopen(fd, "wb");
  int bad_write = !f || fchmod(fd, 0666 & ~mask) != 0 || write_stream(f, head, hlen, data, n) != 0;
  int saved = errno;
  if (f ? fclose(f) != 0 : close(fd) != 0) bad_write = 1;
  if (!bad_write && rename(tmp, path) != 0) bad_write = 1, saved = errno;
  if (bad_write) {
    unlink(tmp);
    st = fail(err, errlen, MTE_EIO, "cannot write: %s", strerror(saved));
  }
  free(tmp);
  return st;
}

int npy_write_file(const char *path, mte_dtype dtype, int ndim, const int64_t *shape,
                   const void *data, char *err, size_t errlen) {
  if (!npy_descr(dtype) || ndim < 0 || ndim > NPY_MAX_NDIM)
    return fail(err, errlen, MTE_EINVAL, "invalid dtype or rank");
  npy_header h = {.dtype = dtype, .ndim = ndim};
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] < 0) return fail(err, errlen, MTE_EINVAL, "negative dimension");
    h.shape[d] = shape[d];
  }
  int st = sizes(&h, err, errlen);
  if (st) return st;
  char header[NPY_MAX_NDIM * 24 + 256];
  size_t hlen = format_header(header, sizeof header, dtype, ndim, shape);
  return npy_write_atomic(path, header, hlen, data, (size_t)h.nbytes, err, errlen);
}
