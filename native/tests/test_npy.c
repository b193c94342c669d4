/*
 * test_npy.c - the .npy reader and writer of mte-run (tools/npy.c): round trips of every
 * dtype, the header variants numpy writes, every malformed header we can think of, files
 * whose data does not match their header, every truncation and thousands of byte mutations
 * of a valid file (which must give MTE_OK or MTE_EFORMAT, never a crash: run it under ASan),
 * and the atomic writer (a failed write leaves nothing behind).
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mte_test.h"
#include "npy.h"

static char tmpdir[256];

static void path_in_tmp(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", tmpdir, name);
}

/* a preamble (version major.0) + header text; returns the byte count */
static size_t make_file(unsigned char *buf, int major, const char *header) {
  size_t pre = major == 1 ? 10 : 12, n = strlen(header);
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major, buf[7] = 0;
  buf[8] = (unsigned char)(n & 0xff), buf[9] = (unsigned char)(n >> 8 & 0xff);
  if (major != 1) buf[10] = (unsigned char)(n >> 16 & 0xff), buf[11] = (unsigned char)(n >> 24);
  memcpy(buf + pre, header, n);
  return pre + n;
}

static int parse_text(int major, const char *header, npy_header *h, char *err, size_t errlen) {
  static unsigned char buf[20000];
  size_t n = make_file(buf, major, header);
  return npy_parse_header(buf, n, h, err, errlen);
}

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(data, 1, n, f);
    fclose(f);
  }
}

/* ---- round trips ---------------------------------------------------------------------------- */

static void test_round_trip(void) {
  const mte_dtype all[] = {MTE_DTYPE_FLOAT32, MTE_DTYPE_FLOAT64, MTE_DTYPE_FLOAT16,
                           MTE_DTYPE_INT8,    MTE_DTYPE_INT16,   MTE_DTYPE_INT32,
                           MTE_DTYPE_INT64,   MTE_DTYPE_UINT8,   MTE_DTYPE_BOOL};
  const int64_t shapes[][3] = {{2, 3, 4}, {7, 0, 0}, {0, 5, 1}};
  const int ndims[] = {3, 1, 2};
  char path[512], err[512];
  path_in_tmp(path, sizeof path, "rt.npy");
  unsigned char data[512];
  for (size_t k = 0; k < sizeof data; ++k) data[k] = (unsigned char)(k % 2);
  for (size_t t = 0; t < sizeof all / sizeof all[0]; ++t)
    for (int s = 0; s < 4; ++s) {
      int ndim = s < 3 ? ndims[s] : 0; /* s == 3: a 0-d array */
      const int64_t *shape = shapes[s < 3 ? s : 0];
      int st = npy_write_file(path, all[t], ndim, shape, data, err, sizeof err);
      CHECK(st == MTE_OK, "write %s: %s", npy_descr(all[t]), err);
      npy_array a;
      st = npy_read_file(path, &a, err, sizeof err);
      CHECK(st == MTE_OK, "read %s ndim %d: %s", npy_descr(all[t]), ndim, err);
      if (st != MTE_OK) continue;
      CHECK(a.h.dtype == all[t] && a.h.ndim == ndim, "dtype/ndim of %s", npy_descr(all[t]));
      CHECK(ndim == 0 || !memcmp(a.h.shape, shape, (size_t)ndim * 8), "shape");
      CHECK(a.h.data_offset % 64 == 0, "data offset %zu not 64-aligned", a.h.data_offset);
      CHECK(!memcmp(a.data, data, (size_t)a.h.nbytes), "data of %s", npy_descr(all[t]));
      CHECK(((uintptr_t)a.data & 63) == 0, "data not aligned");
      npy_array_free(&a);
    }
}

/* ---- headers -------------------------------------------------------------------------------- */

static void test_valid_headers(void) {
  npy_header h;
  char err[512];
  const char *good[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }          \n",
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}\n",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3,)}\n",
      "{'descr':'<f4','fortran_order':False,'shape':(2,3)}\n",
      "{\t'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\t\n",
  };
  for (size_t k = 0; k < sizeof good / sizeof good[0]; ++k)
    for (int major = 1; major <= 3; ++major) {
      int st = parse_text(major, good[k], &h, err, sizeof err);
      CHECK(st == MTE_OK, "v%d %s: %s", major, good[k], err);
      CHECK(h.dtype == MTE_DTYPE_FLOAT32 && h.ndim == 2 && h.shape[0] == 2 && h.shape[1] == 3 &&
                h.numel == 6 && h.nbytes == 24,
            "fields of %s", good[k]);
      CHECK(h.data_offset == (major == 1 ? 10u : 12u) + strlen(good[k]), "offset");
    }
  CHECK(parse_text(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }\n", &h, err,
                   sizeof err) == MTE_OK && h.ndim == 0 && h.numel == 1,
        "0-d bool: %s", err);
  CHECK(parse_text(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (0,), }\n", &h, err,
                   sizeof err) == MTE_OK && h.numel == 0 && h.nbytes == 0,
        "empty: %s", err);
}

typedef struct bad_case {
  const char *header, *message; /* part of the expected message */
} bad_case;

static void test_bad_headers(void) {
  static char many_dims[1024], long_header[NPY_MAX_HEADER_BYTES + 100];
  size_t at = (size_t)snprintf(many_dims, sizeof many_dims,
                               "{'descr': '<f4', 'fortran_order': False, 'shape': (");
  for (int d = 0; d < 65; ++d) at += (size_t)snprintf(many_dims + at, sizeof many_dims - at, "1, ");
  snprintf(many_dims + at, sizeof many_dims - at, "), }\n");
  at = (size_t)snprintf(long_header, sizeof long_header,
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }");
  memset(long_header + at, ' ', NPY_MAX_HEADER_BYTES + 10 - at);
  strcpy(long_header + NPY_MAX_HEADER_BYTES + 10, "\n");
  const bad_case cases[] = {
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", "fortran_order is True"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }\n", "unsupported dtype '>f4'"},
      {"{'descr': '<U3', 'fortran_order': False, 'shape': (2, 3), }\n", "unsupported dtype"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }\n", "unsupported dtype"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }\n", "unsupported dtype"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n", "quoted string"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3), }\n", "trailing comma"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }\n", "dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (03,), }\n", "leading zero"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n",
       "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n",
       "overflows"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }\n",
       "overflows"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }\n", "tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}\n", "unknown header key"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n", "duplicate"},
      {"{'descr': '<f4', 'shape': (2, 3), }\n", "lacks 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (2, 3), }\n", "lacks 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False}\n", "lacks 'shape'"},
      {"{}\n", "lacks"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", "end with"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x\n", "end with"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n\n", "end with"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }\n", "True or False"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }\n", "string"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }\n", "expected ','"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", "':'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), },\n", "end with"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 3), }\n", "dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3\n", "expected ','"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), \n", "quoted string"},
      {"'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", "start with '{'"},
      {"", "start with '{'"},
      {"{'descr': '\xc3\xa9', 'fortran_order': False, 'shape': (2, 3), }\n", "character"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\0 \n", "end with"},
      {many_dims, "more than 64"},
      {long_header, "more than the limit"},
  };
  char err[512];
  npy_header h;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    err[0] = 0;
    int st = parse_text(1 + (int)(k % 2), cases[k].header, &h, err, sizeof err);
    CHECK(st == MTE_EFORMAT, "case %zu accepted: %.80s", k, cases[k].header);
    CHECK(strstr(err, cases[k].message) != NULL, "case %zu: message '%s' lacks '%s'", k, err,
          cases[k].message);
  }
}

static void test_bad_preambles(void) {
  char err[512];
  npy_header h;
  unsigned char buf[256];
  const char *hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  size_t n = make_file(buf, 1, hdr);
  CHECK(npy_parse_header(buf, n, &h, err, sizeof err) == MTE_OK, "the base file: %s", err);
  buf[0] = 0x92;
  CHECK(npy_parse_header(buf, n, &h, err, sizeof err) == MTE_EFORMAT && strstr(err, "NUMPY"),
        "bad magic: %s", err);
  n = make_file(buf, 4, hdr);
  CHECK(npy_parse_header(buf, n, &h, err, sizeof err) == MTE_EFORMAT && strstr(err, "4.0"),
        "version 4: %s", err);
  n = make_file(buf, 1, hdr);
  buf[7] = 1;
  CHECK(npy_parse_header(buf, n, &h, err, sizeof err) == MTE_EFORMAT && strstr(err, "1.1"),
        "version 1.1: %s", err);
  n = make_file(buf, 0, hdr);
  CHECK(npy_parse_header(buf, n, &h, err, sizeof err) == MTE_EFORMAT, "version 0");
  n = make_file(buf, 2, hdr);
  buf[11] = 0x80; /* a 2 GiB header */
  CHECK(npy_parse_header(buf, n, &h, err, sizeof err) == MTE_EFORMAT && strstr(err, "limit"),
        "huge header length: %s", err);
  n = make_file(buf, 1, hdr);
  buf[8] = (unsigned char)(buf[8] + 1); /* one byte longer than the file */
  CHECK(npy_parse_header(buf, n, &h, err, sizeof err) == MTE_EFORMAT && strstr(err, "truncated"),
        "header past the end: %s", err);
  for (size_t cut = 0; cut < n; ++cut) { /* every truncation of the header */
    make_file(buf, 1, hdr);
    CHECK(npy_parse_header(buf, cut, &h, err, sizeof err) == MTE_EFORMAT, "cut at %zu", cut);
  }
}

/* every byte of a valid header set to a few values: OK or EFORMAT, consistent fields */
static void test_mutations(void) {
  const char *hdr = "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 2), }    \n";
  unsigned char base[256], buf[256];
  const size_t n = make_file(base, 1, hdr);
  const unsigned char values[] = {0, 1, 9, ' ', '\n', '\'', '"', '(', ')', ',', ':', '-',
                                  '0', '9', 'T', '{', '}', 0x7f, 0x80, 0xff};
  int ok = 0, refused = 0, other = 0;
  char err[512];
  for (size_t pos = 0; pos < n; ++pos)
    for (size_t v = 0; v < sizeof values; ++v) {
      memcpy(buf, base, n);
      buf[pos] = values[v];
      npy_header h;
      int st = npy_parse_header(buf, n, &h, err, sizeof err);
      if (st == MTE_OK) {
        ++ok;
        int64_t numel = 1;
        for (int d = 0; d < h.ndim; ++d) numel *= h.shape[d];
        CHECK(h.data_offset <= n && h.numel == numel &&
                  h.nbytes == numel * (int64_t)npy_item_size(h.dtype),
              "mutation at %zu to %u: inconsistent header", pos, values[v]);
      } else if (st == MTE_EFORMAT) {
        ++refused;
      } else {
        ++other;
      }
    }
  CHECK(other == 0, "%d mutations gave another status", other);
  CHECK(ok > 0 && refused > ok, "mutations: %d accepted, %d refused", ok, refused);
}

/* ---- whole files ---------------------------------------------------------------------------- */

static void test_bad_files(void) {
  char path[512], err[512];
  path_in_tmp(path, sizeof path, "bad.npy");
  unsigned char buf[512];
  npy_array a;
  const char *hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n";
  size_t n = make_file(buf, 1, hdr);
  memset(buf + n, 0, 16);
  write_bytes(path, buf, n + 16);
  CHECK(npy_read_file(path, &a, err, sizeof err) == MTE_OK, "the base file: %s", err);
  npy_array_free(&a);
  write_bytes(path, buf, n + 15);
  CHECK(npy_read_file(path, &a, err, sizeof err) == MTE_EFORMAT && strstr(err, "truncated") &&
            !a.data,
        "truncated data: %s", err);
  write_bytes(path, buf, n + 17);
  CHECK(npy_read_file(path, &a, err, sizeof err) == MTE_EFORMAT && strstr(err, "trailing"),
        "trailing data: %s", err);
  n = make_file(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }\n");
  write_bytes(path, buf, n + 16);
  CHECK(npy_read_file(path, &a, err, sizeof err) == MTE_EFORMAT && !a.data,
        "huge declared shape: %s", err);
  n = make_file(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n");
  buf[n] = 1, buf[n + 1] = 0, buf[n + 2] = 2;
  write_bytes(path, buf, n + 3);
  CHECK(npy_read_file(path, &a, err, sizeof err) == MTE_EFORMAT && strstr(err, "bool element 2"),
        "bool byte 2: %s", err);
  write_bytes(path, buf, 0);
  CHECK(npy_read_file(path, &a, err, sizeof err) == MTE_EFORMAT, "empty file: %s", err);
  path_in_tmp(path, sizeof path, "missing.npy");
  CHECK(npy_read_file(path, &a, err, sizeof err) == MTE_EIO && strstr(err, "cannot open"),
        "missing file: %s", err);
  CHECK(npy_read_file(tmpdir, &a, err, sizeof err) == MTE_EIO, "a directory: %s", err);
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void test_atomic_write(void) {
  char dir[512], path[600], err[512];
  path_in_tmp(dir, sizeof dir, "atomic");
  mkdir(dir, 0700);
  snprintf(path, sizeof path, "%s/out.npy", dir);
  const float one[2] = {1, 2};
  const int64_t shape[1] = {2};
  CHECK(npy_write_file(path, MTE_DTYPE_FLOAT32, 1, shape, one, err, sizeof err) == MTE_OK,
        "write: %s", err);
  CHECK(npy_write_file(path, MTE_DTYPE_FLOAT32, 1, shape, one, err, sizeof err) == MTE_OK,
        "overwrite: %s", err);
  CHECK(count_entries(dir) == 1, "a temporary file was left in %s", dir);
  snprintf(path, sizeof path, "%s/no/such/dir/out.npy", dir);
  CHECK(npy_write_file(path, MTE_DTYPE_FLOAT32, 1, shape, one, err, sizeof err) == MTE_EIO &&
            strstr(err, "temporary"),
        "write into a missing directory: %s", err);
  const int64_t neg[1] = {-1};
  CHECK(npy_write_file(path, MTE_DTYPE_FLOAT32, 1, neg, one, err, sizeof err) == MTE_EINVAL,
        "negative dimension");
  CHECK(npy_write_file(path, MTE_DTYPE_INVALID, 1, shape, one, err, sizeof err) == MTE_EINVAL,
        "invalid dtype");
  snprintf(path, sizeof path, "%s/out.npy", dir);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/test_npy.XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_round_trip();
  test_valid_headers();
  test_bad_headers();
  test_bad_preambles();
  test_mutations();
  test_bad_files();
  test_atomic_write();
  char path[512];
  const char *names[] = {"rt.npy", "bad.npy"};
  for (size_t k = 0; k < 2; ++k) path_in_tmp(path, sizeof path, names[k]), unlink(path);
  rmdir(tmpdir);
  return mte_test_summary("test_npy");
}
