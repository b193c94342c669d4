/*
 * test_runtime_model.c - the .mte loader (runtime/container.c, graph.c, plan.c, model.c).
 *
 * The test writes its own small valid model file (the header JSON and the data by hand:
 * Gemm -> Relu (in place) -> Reshape (a view), four constants), checks what the loader makes
 * of it, then a corpus of malformed variants, each built from the valid one by one edit
 * (bad JSON, truncation, offsets, gaps, overlaps, dtypes, shapes, references, cycles,
 * duplicates, unknown ops, attribute types, nesting, huge sizes) and each required to fail
 * with MTE_EFORMAT and a message naming the rule; then a mutation fuzzer over the file bytes
 * and over the graph document; and the per-node clock (mte_model_set_profiling,
 * mte_model_node_last). Under `make asan` any overread, leak or UB fails the run.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model_internal.h"
#include "mte_runtime.h"
#include "mte_test.h"

static int quick = 0;

/* ---------------------------------------------------------------- building files */

static const char *GRAPH =
    "{\"version\": 1, \"name\": \"tiny\", \"inputs\": [\"x\"], \"outputs\": [\"y\"],"
    " \"values\": [[\"x\", [1, 4], \"float32\"], [\"w\", [4, 4], \"float32\"],"
    " [\"b\", [4], \"float32\"], [\"shape\", [1], \"int64\"], [\"flag\", [2], \"bool\"],"
    " [\"h\", [1, 4], \"float32\"], [\"r\", [1, 4], \"float32\"], [\"y\", [4], \"float32\"]],"
    " \"nodes\": ["
    "{\"op\": \"Gemm\", \"name\": \"fc/Gemm\", \"inputs\": [\"x\", \"w\", \"b\"], \"outputs\": [\"h\"],"
    " \"attrs\": {\"transB\": 1, \"alpha\": 1.5, \"tag\": \"fc\", \"on\": true, \"pads\": [0, 1],"
    " \"scales\": [0.5, 2], \"names\": [\"a\", \"b\"], \"empty\": [], \"mask\": [true, false]}},"
    "{\"op\": \"Relu\", \"name\": \"relu\", \"inputs\": [\"h\"], \"outputs\": [\"r\"], \"attrs\": {}},"
    "{\"op\": \"Reshape\", \"name\": \"flat\", \"inputs\": [\"r\", \"shape\"], \"outputs\": [\"y\"],"
    " \"attrs\": {}}]}";

/* tensors: shape I64 [0, 8), w F32 [8, 72), b F32 [72, 88), flag BOOL [88, 90) */
static const char *ENTRIES =
    "\"shape\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [0, 8]},"
    " \"w\": {\"dtype\": \"F32\", \"shape\": [4, 4], \"data_offsets\": [8, 72]},"
    " \"b\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [72, 88]},"
    " \"flag\": {\"dtype\": \"BOOL\", \"shape\": [2], \"data_offsets\": [88, 90]}";

static const char *META =
    "\"minitorch_edge.format_version\": \"1\", \"minitorch_edge.kind\": \"graph\"";

#define DATA_LEN 90

static void fill_data(unsigned char *d) {
  int64_t four = 4;
  memcpy(d, &four, 8);
  for (int i = 0; i < 20; ++i) {
    float f = (float)i * 0.25f;
    memcpy(d + 8 + 4 * i, &f, 4);
  }
  d[88] = 1;
  d[89] = 0;
}

typedef struct file {
  unsigned char *bytes;
  size_t size;
} file;

/* s with the first `from` replaced by `to` (a test bug if absent); malloc'd. */
static char *replace(const char *s, const char *from, const char *to) {
  const char *at = strstr(s, from);
  if (!at) {
    fprintf(stderr, "test bug: \"%s\" not found\n", from);
    abort();
  }
  size_t n = strlen(s) - strlen(from) + strlen(to);
  char *out = malloc(n + 1);
  size_t head = (size_t)(at - s);
  memcpy(out, s, head);
  strcpy(out + head, to);
  strcat(out, at + strlen(from));
  return out;
}

/* The JSON string literal of s (quotes added, " and \ escaped). */
static char *quote(const char *s) {
  char *out = malloc(2 * strlen(s) + 3), *o = out;
  *o++ = '"';
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') *o++ = '\\';
    *o++ = *s;
  }
  *o++ = '"';
  *o = 0;
  return out;
}

/* A file from its parts: header {"__metadata__": {meta, "minitorch_edge.graph": graph},
 * entries} padded to 8, then data. meta/graph NULL: leave that part out. */
static file build_raw(const char *meta, const char *graph, const char *entries,
                      const unsigned char *data, size_t data_len) {
  char *g = graph ? quote(graph) : NULL;
  size_t cap = 256 + (meta ? strlen(meta) : 0) + (g ? strlen(g) : 0) + strlen(entries);
  char *h = malloc(cap);
  int n = snprintf(h, cap, "{\"__metadata__\": {%s%s%s%s}%s%s}", meta ? meta : "",
                   meta && g ? ", " : "", g ? "\"minitorch_edge.graph\": " : "", g ? g : "",
                   *entries ? ", " : "", entries);
  size_t hlen = (size_t)n, padded = (hlen + 7) / 8 * 8;
  file f = {malloc(8 + padded + data_len), 8 + padded + data_len};
  for (int i = 0; i < 8; ++i) f.bytes[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  memcpy(f.bytes + 8, h, hlen);
  memset(f.bytes + 8 + hlen, ' ', padded - hlen);
  if (data_len) memcpy(f.bytes + 8 + padded, data, data_len);
  free(h);
  free(g);
  return f;
}

static file build(const char *graph, const char *entries) {
  unsigned char data[DATA_LEN];
  fill_data(data);
  return build_raw(META, graph, entries, data, DATA_LEN);
}

static file valid_file(void) { return build(GRAPH, ENTRIES); }

/* Load from an exact-size heap copy; returns the status (the model is freed). */
static int load(const file *f, char *err, size_t errlen) {
  mte_model *m = NULL;
  int st = mte_model_load_memory(f->bytes, f->size, &m, err, errlen);
  if ((st == MTE_OK) != (m != NULL)) {
    fprintf(stderr, "status %d with model %p\n", st, (void *)m);
    abort();
  }
  mte_model_free(m);
  return st;
}

/* The file must fail with MTE_EFORMAT and a message containing `why`; frees f. */
static void expect_bad(file f, const char *why, const char *what) {
  char err[1024];
  int st = load(&f, err, sizeof err);
  CHECK(st == MTE_EFORMAT, "%s: status %d (%s)", what, st, st ? err : "loaded");
  CHECK(st == MTE_OK || strstr(err, why), "%s: message \"%s\" lacks \"%s\"", what, err, why);
  free(f.bytes);
}

static void bad_graph(const char *from, const char *to, const char *why) {
  char *g = replace(GRAPH, from, to);
  expect_bad(build(g, ENTRIES), why, to);
  free(g);
}

static void bad_entries(const char *from, const char *to, const char *why) {
  char *en = replace(ENTRIES, from, to);
  expect_bad(build(GRAPH, en), why, to);
  free(en);
}

/* ---------------------------------------------------------------- the valid file */

static void test_valid(void) {
  file f = valid_file();
  mte_model *m = NULL;
  char err[512];
  int st = mte_model_load_memory(f.bytes, f.size, &m, err, sizeof err);
  CHECK(st == MTE_OK && m, "the valid file loads: %s", err);
  if (!m) return;
  CHECK(!strcmp(mte_model_name(m), "tiny"), "name");
  CHECK(mte_model_num_nodes(m) == 3 && mte_model_num_values(m) == 8 &&
            mte_model_num_constants(m) == 4, "counts");
  CHECK(mte_model_num_inputs(m) == 1 && !strcmp(mte_model_input_name(m, 0), "x") &&
            mte_model_input_ndim(m, 0) == 2 && mte_model_input_shape(m, 0)[1] == 4 &&
            mte_model_input_dtype(m, 0) == MTE_DTYPE_FLOAT32 && mte_model_input_nbytes(m, 0) == 16,
        "input");
  CHECK(mte_model_num_outputs(m) == 1 && !strcmp(mte_model_output_name(m, 0), "y") &&
            mte_model_output_ndim(m, 0) == 1 && mte_model_output_shape(m, 0)[0] == 4, "output");
  CHECK(mte_model_input_name(m, 1) == NULL && mte_model_output_ndim(m, -1) == -1 &&
            mte_model_input_dtype(m, 5) == MTE_DTYPE_INVALID && mte_model_value_name(m, 99) == NULL,
        "out of range");
  /* h: 16 bytes -> one 64-byte buffer; r in place over h; y a view of r */
  CHECK(mte_model_arena_bytes(m) == 64 && mte_model_naive_bytes(m) == 48 &&
            mte_model_lower_bound_bytes(m) == 64, "plan %lld", (long long)mte_model_arena_bytes(m));
  int h = mte_model_find_value(m, "h"), r = mte_model_find_value(m, "r");
  int y = mte_model_find_value(m, "y"), w = mte_model_find_value(m, "w");
  CHECK(h >= 0 && mte_model_value_offset(m, h) == 0 && mte_model_value_offset(m, r) == 0 &&
            mte_model_value_offset(m, y) == 0 && mte_model_value_offset(m, w) == -1 &&
            mte_model_find_value(m, "nope") == -1, "offsets");
  CHECK(m->values[r].buffer == m->values[h].buffer && m->values[y].view_of == r, "sharing");
  /* resolved nodes and attributes */
  const rt_node *gemm = &m->nodes[0];
  CHECK(!strcmp(gemm->op->name, "Gemm") && gemm->num_inputs == 3 && gemm->inputs[1] == w &&
            gemm->outputs[0] == h, "node references");
  const rt_attr *a = rt_node_attr(gemm, "transB");
  CHECK(a && a->type == RT_ATTR_INT && a->i == 1, "int attr");
  a = rt_node_attr(gemm, "alpha");
  CHECK(a && a->type == RT_ATTR_FLOAT && a->f == 1.5, "float attr");
  a = rt_node_attr(gemm, "tag");
  CHECK(a && a->type == RT_ATTR_STRING && !strcmp(a->s, "fc"), "string attr");
  a = rt_node_attr(gemm, "on");
  CHECK(a && a->type == RT_ATTR_BOOL && a->i == 1, "bool attr");
  a = rt_node_attr(gemm, "pads");
  CHECK(a && a->type == RT_ATTR_INTS && a->n == 2 && a->ints[1] == 1, "ints attr");
  a = rt_node_attr(gemm, "scales");
  CHECK(a && a->type == RT_ATTR_FLOATS && a->n == 2 && a->floats[1] == 2.0, "floats attr");
  a = rt_node_attr(gemm, "names");
  CHECK(a && a->type == RT_ATTR_STRINGS && !strcmp(a->strings[1], "b"), "strings attr");
  a = rt_node_attr(gemm, "empty");
  CHECK(a && a->type == RT_ATTR_INTS && a->n == 0, "empty list attr");
  a = rt_node_attr(gemm, "mask");
  CHECK(a && a->type == RT_ATTR_INTS && a->n == 2 && a->ints[0] == 1 && a->ints[1] == 0,
        "bools attr");
  CHECK(rt_node_attr(gemm, "missing") == NULL, "absent attr");
  /* constants point into the file, aligned */
  const rt_value *wv = &m->values[w];
  CHECK(wv->kind == RT_VALUE_CONSTANT && (uintptr_t)wv->data % 4 == 0 &&
            ((const float *)wv->data)[3] == 0.75f, "constant data");
  CHECK(*(const int64_t *)m->values[mte_model_find_value(m, "shape")].data == 4, "int64 data");
  mte_model_free(m);

  /* from a file on disk, and the errors of reading one */
  const char *path = "build/test_runtime_model.mte";
  FILE *out = fopen(path, "wb");
  if (out) {
    fwrite(f.bytes, 1, f.size, out);
    fclose(out);
    st = mte_model_load(path, &m, err, sizeof err);
    CHECK(st == MTE_OK && mte_model_num_nodes(m) == 3, "load from a path: %s", err);
    mte_model_free(m);
    remove(path);
  }
  st = mte_model_load("build/no/such/file.mte", &m, err, sizeof err);
  CHECK(st == MTE_EIO && m == NULL && strstr(err, "cannot open"), "missing file: %s", err);
  CHECK(mte_model_load_memory(NULL, 5, &m, err, sizeof err) == MTE_EINVAL, "NULL data");
  CHECK(mte_model_load_memory(f.bytes, f.size, NULL, err, sizeof err) == MTE_EINVAL, "NULL out");
  CHECK(mte_model_load_memory(f.bytes, f.size, &m, NULL, 0) == MTE_OK, "no error buffer");
  mte_model_free(m);
  mte_model_free(NULL);
  CHECK(strstr(mte_runtime_status_string(MTE_EFORMAT), "MTE_EFORMAT") &&
            strstr(mte_runtime_status_string(MTE_ENOMEM), "MTE_ENOMEM"), "status strings");
  CHECK(mte_runtime_num_ops() > 70 && !strcmp(mte_runtime_op_name(0), "Abs") &&
            mte_runtime_op_name(-1) == NULL, "op table");
  free(f.bytes);
}

/* A U8 tensor of 1 byte first: the F32 after it is misaligned in the file and gets copied. */
static void test_alignment(void) {
  char *g = replace(GRAPH, "[\"flag\", [2], \"bool\"]", "[\"flag\", [2], \"bool\"], [\"u\", [1], \"uint8\"]");
  const char *entries =
      "\"u\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]},"
      " \"w\": {\"dtype\": \"F32\", \"shape\": [4, 4], \"data_offsets\": [1, 65]},"
      " \"b\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [65, 81]},"
      " \"shape\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [81, 89]},"
      " \"flag\": {\"dtype\": \"BOOL\", \"shape\": [2], \"data_offsets\": [89, 91]}";
  unsigned char data[91] = {7};
  for (int i = 0; i < 16; ++i) {
    float v = (float)i;
    memcpy(data + 1 + 4 * i, &v, 4);
  }
  int64_t four = 4;
  memcpy(data + 81, &four, 8);
  file f = build_raw(META, g, entries, data, sizeof data);
  mte_model *m = NULL;
  char err[512];
  CHECK(mte_model_load_memory(f.bytes, f.size, &m, err, sizeof err) == MTE_OK, "%s", err);
  if (m) {
    const rt_value *w = &m->values[mte_model_find_value(m, "w")];
    const rt_value *s = &m->values[mte_model_find_value(m, "shape")];
    CHECK((uintptr_t)w->data % 4 == 0 && ((const float *)w->data)[5] == 5.0f, "F32 copied aligned");
    CHECK((uintptr_t)s->data % 8 == 0 && *(const int64_t *)s->data == 4, "I64 copied aligned");
    CHECK(*(const uint8_t *)m->values[mte_model_find_value(m, "u")].data == 7, "U8 in place");
  }
  mte_model_free(m);
  free(f.bytes);
  free(g);
}

/* ---------------------------------------------------------------- malformed containers */

static file with_header_length(file f, uint64_t n) {
  for (int i = 0; i < 8; ++i) f.bytes[i] = (unsigned char)(n >> (8 * i));
  return f;
}

static void test_container(void) {
  unsigned char data[DATA_LEN + 8];
  fill_data(data);
  file f = valid_file();
  file g = {malloc(f.size + 8), f.size};
  /* sizes and the header length */
  expect_bad((file){malloc(1), 0}, "the file has 0 bytes", "empty file");
  expect_bad((file){memcpy(malloc(5), f.bytes, 5), 5}, "8-byte header length", "5 bytes");
  expect_bad(with_header_length((file){memcpy(malloc(f.size), f.bytes, f.size), f.size},
                                f.size), "runs past the end", "header length past the end");
  expect_bad(with_header_length((file){memcpy(malloc(f.size), f.bytes, f.size), f.size},
                                200000000), "over the cap", "header length over the cap");
  expect_bad(with_header_length((file){memcpy(malloc(f.size), f.bytes, f.size), f.size},
                                UINT64_MAX), "over the cap", "header length 2**64-1");
  expect_bad(with_header_length((file){memcpy(malloc(f.size), f.bytes, f.size), f.size}, 16),
             "not valid JSON", "header length cuts the JSON");
  expect_bad((file){memcpy(malloc(f.size), f.bytes, f.size - 1), f.size - 1}, "past the data section",
             "truncated data");
  memcpy(g.bytes, f.bytes, f.size);
  memset(g.bytes + f.size, 0, 8);
  g.size = f.size + 8;
  expect_bad(g, "8 trailing bytes", "trailing bytes");
  /* the header JSON and the metadata */
  expect_bad(build_raw(META, GRAPH, "\"w\": {\"dtype\": \"F32\",", data, DATA_LEN), "not valid JSON",
             "bad JSON");
  expect_bad(build_raw(NULL, GRAPH, ENTRIES, data, DATA_LEN), "format_version\" is missing",
             "no version");
  expect_bad(build_raw("\"minitorch_edge.format_version\": \"2\", \"minitorch_edge.kind\": \"graph\"",
                       GRAPH, ENTRIES, data, DATA_LEN), "reads version \"1\"", "version 2");
  expect_bad(build_raw("\"minitorch_edge.format_version\": \"1\", \"minitorch_edge.kind\": \"ckpt\"",
                       GRAPH, ENTRIES, data, DATA_LEN), "not \"graph\"", "kind");
  expect_bad(build_raw(META, NULL, ENTRIES, data, DATA_LEN), "no \"minitorch_edge.graph\"",
             "no graph");
  expect_bad(build_raw("\"minitorch_edge.format_version\": 1", GRAPH, ENTRIES, data, DATA_LEN),
             "strings to strings", "metadata value not a string");
  expect_bad(build_raw(META, GRAPH, "\"__metadata__\": {}", data, DATA_LEN), "duplicate key",
             "metadata twice");
  free(f.bytes);
  /* tensor entries */
  bad_entries("{\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [72, 88]}", "[1]",
              "tensor \"b\": entry is a JSON array");
  bad_entries("\"data_offsets\": [72, 88]}", "\"data_offsets\": [72, 88], \"x\": 1}",
              "needs exactly");
  bad_entries("\"dtype\": \"F32\", \"shape\": [4], ", "\"shape\": [4], ", "needs exactly");
  bad_entries("\"dtype\": \"F32\", \"shape\": [4]", "\"dtype\": \"Q8\", \"shape\": [4]",
              "dtype \"Q8\" is not one");
  bad_entries("\"dtype\": \"F32\", \"shape\": [4]", "\"dtype\": \"BF16\", \"shape\": [4]",
              "dtype \"BF16\"");
  bad_entries("\"dtype\": \"F32\", \"shape\": [4]", "\"dtype\": 4, \"shape\": [4]",
              "dtype must be a string");
  bad_entries("\"shape\": [4], \"data_offsets\": [72", "\"shape\": 4, \"data_offsets\": [72",
              "shape must be a list");
  bad_entries("\"shape\": [4], \"data_offsets\": [72", "\"shape\": [4.0], \"data_offsets\": [72",
              "list of ints");
  bad_entries("\"shape\": [4], \"data_offsets\": [72", "\"shape\": [-4], \"data_offsets\": [72",
              "negative dim");
  bad_entries("\"shape\": [4], \"data_offsets\": [72",
              "\"shape\": [4294967296, 4294967296, 4], \"data_offsets\": [72", "overflows");
  bad_entries("\"shape\": [4], \"data_offsets\": [72",
              "\"shape\": [9223372036854775807, 2, 0], \"data_offsets\": [72", "overflows");
  char dims[400] = "\"shape\": [";
  for (int i = 0; i < 65; ++i) strcat(dims, i ? ", 1" : "1");
  strcat(dims, "], \"data_offsets\": [72");
  bad_entries("\"shape\": [4], \"data_offsets\": [72", dims, "65 dims");
  bad_entries("[72, 88]", "[72]", "list of two ints");
  bad_entries("[72, 88]", "[72, 88.0]", "list of two ints");
  bad_entries("[72, 88]", "[72, 88, 88]", "list of two ints");
  bad_entries("[72, 88]", "[88, 72]", "0 <= begin <= end");
  bad_entries("[72, 88]", "[-8, 8]", "0 <= begin <= end");
  bad_entries("[72, 88]", "[72, 92]", "end past the data section");
  bad_entries("[72, 88]", "[72, 84]", "hold 12 bytes");
  bad_entries("[8, 72]", "[16, 80]", "gap of 8 bytes");
  bad_entries("\"data_offsets\": [0, 8]", "\"data_offsets\": [4, 12]", "gap of 4 bytes after the data");
  bad_entries("[72, 88]", "[64, 80]", "overlap tensor \"w\"");
  /* a 1 TB tensor in a small file: refused by the offsets, nothing allocated */
  bad_entries("\"shape\": [4], \"data_offsets\": [72, 88]",
              "\"shape\": [274877906944], \"data_offsets\": [72, 1099511627848]",
              "end past the data section");
  /* BOOL bytes */
  unsigned char d2[DATA_LEN];
  fill_data(d2);
  d2[89] = 2;
  expect_bad(build_raw(META, GRAPH, ENTRIES, d2, DATA_LEN), "BOOL bytes must be 0 or 1", "bool 2");
  /* nesting in the header */
  char deep[300] = "\"deep\": ";
  for (int i = 0; i < 80; ++i) strcat(deep, "[");
  for (int i = 0; i < 80; ++i) strcat(deep, "]");
  char *en = malloc(strlen(ENTRIES) + 400);
  sprintf(en, "%s, %s", ENTRIES, deep);
  expect_bad(build_raw(META, GRAPH, en, data, DATA_LEN), "nested deeper than 64", "deep header");
  free(en);
}

/* ---------------------------------------------------------------- malformed graphs */

static void test_graph(void) {
  unsigned char data[DATA_LEN];
  fill_data(data);
  expect_bad(build("{\"version\": 1,", ENTRIES), "graph document is not valid JSON", "graph JSON");
  expect_bad(build("[1]", ENTRIES), "is a array, not an object", "graph not an object");
  bad_graph("\"version\": 1", "\"version\": 2", "version 2");
  bad_graph("\"version\": 1", "\"version\": \"1\"", "(not an int)");
  bad_graph("\"version\": 1, ", "", "\"version\" is missing");
  bad_graph("\"version\": 1", "\"version\": 1, \"extra\": 0", "unknown key \"extra\"");
  bad_graph("\"name\": \"tiny\"", "\"name\": 3", "name must be a string");
  /* values */
  bad_graph("\"values\": [", "\"values\": [7, ", "values[0] must be [name");
  bad_graph("[\"b\", [4], \"float32\"]", "[\"b\", [4]]", "values[2] must be [name");
  bad_graph("[\"b\", [4], \"float32\"]", "[\"\", [4], \"float32\"]", "empty name");
  bad_graph("[\"b\", [4], \"float32\"]", "[\"b\", [4], \"complex64\"]", "unknown dtype \"complex64\"");
  bad_graph("[\"b\", [4], \"float32\"]", "[\"b\", [4, -1], \"float32\"]", "negative dim");
  bad_graph("[\"h\", [1, 4], \"float32\"]", "[\"h\", [1152921504606846976, 4], \"float32\"]",
            "size in bytes overflows");
  bad_graph("[\"b\", [4], \"float32\"]", "[\"b\", [4], \"float32\"], [\"b\", [4], \"float32\"]",
            "value \"b\" is listed twice");
  /* constants against the container */
  bad_graph("[\"flag\", [2], \"bool\"], ", "", "tensor \"flag\" is not a value of the graph");
  bad_graph("[\"b\", [4], \"float32\"]", "[\"b\", [4], \"float64\"]",
            "constant \"b\": its value float64[4] does not describe its tensor float32[4]");
  bad_graph("[\"w\", [4, 4], \"float32\"]", "[\"w\", [16], \"float32\"]", "float32[4, 4] (F32)");
  /* inputs */
  bad_graph("\"inputs\": [\"x\"]", "\"inputs\": [\"z\"]", "graph input \"z\" has no value");
  bad_graph("\"inputs\": [\"x\"]", "\"inputs\": [\"x\", \"w\"]", "input \"w\" is also a constant");
  bad_graph("\"inputs\": [\"x\"]", "\"inputs\": [\"x\", \"x\"]", "input \"x\" is listed twice");
  bad_graph("\"inputs\": [\"x\"]", "\"inputs\": [1]", "list of strings");
  /* nodes */
  bad_graph("\"nodes\": [", "\"nodes\": [3, ", "nodes[0] is a int, not an object");
  bad_graph("\"name\": \"relu\", ", "", "nodes[1]: the key \"name\" is missing");
  bad_graph("\"name\": \"relu\"", "\"name\": \"relu\", \"domain\": \"x\"", "unknown key \"domain\"");
  bad_graph("\"op\": \"Relu\"", "\"op\": 7", "op and name must be strings");
  bad_graph("\"inputs\": [\"h\"]", "\"inputs\": \"h\"", "must be a list of strings");
  bad_graph("\"outputs\": [\"r\"]", "\"outputs\": [\"\"]", "empty name");
  bad_graph("\"outputs\": [\"r\"], \"attrs\": {}", "\"outputs\": [\"r\"], \"attrs\": []",
            "attrs must be an object");
  bad_graph("\"name\": \"relu\"", "\"name\": \"fc/Gemm\"", "node \"fc/Gemm\" (Relu): node name used twice");
  bad_graph("\"op\": \"Relu\"", "\"op\": \"Frobnicate\"", "node \"relu\" (Frobnicate): unknown op");
  bad_graph("\"inputs\": [\"h\"]", "\"inputs\": [\"q\"]", "reads \"q\", which is not defined");
  bad_graph("\"inputs\": [\"h\"]", "\"inputs\": [\"y\"]",
            "node \"relu\" (Relu) reads \"y\", which is written by a node at or after it "
            "(node \"flat\"): the graph has a cycle");
  bad_graph("\"inputs\": [\"h\"]", "\"inputs\": [\"r\"]", "written by a node at or after it (node \"relu\")");
  bad_graph("\"outputs\": [\"r\"]", "\"outputs\": [\"h\"]", "output \"h\" is already defined");
  bad_graph("\"outputs\": [\"r\"]", "\"outputs\": [\"x\"]", "output \"x\" is already defined");
  bad_graph("\"outputs\": [\"r\"]", "\"outputs\": [\"r\", \"r\"]", "output \"r\" is already defined");
  bad_graph("\"outputs\": [\"r\"]", "\"outputs\": [\"r2\"]", "output \"r2\" has no value");
  /* node order: Relu before the Gemm it reads */
  char *g = replace(GRAPH, "{\"op\": \"Gemm\"", "{\"op\": \"Relu\", \"name\": \"early\", "
                    "\"inputs\": [\"h\"], \"outputs\": [\"z\"], \"attrs\": {}}, {\"op\": \"Gemm\"");
  char *g2 = replace(g, "[\"y\", [4], \"float32\"]", "[\"y\", [4], \"float32\"], [\"z\", [1, 4], \"float32\"]");
  expect_bad(build(g2, ENTRIES), "node \"early\" (Relu) reads \"h\", which is written by a node at "
             "or after it (node \"fc/Gemm\")", "out of order");
  free(g);
  free(g2);
  /* attributes */
  bad_graph("\"transB\": 1", "\"transB\": null", "attribute \"transB\" is a null");
  bad_graph("\"transB\": 1", "\"transB\": {\"a\": 1}", "attribute \"transB\" is a object");
  bad_graph("\"pads\": [0, 1]", "\"pads\": [0, \"a\"]", "only ints, only numbers, only bools or only strings");
  bad_graph("\"pads\": [0, 1]", "\"pads\": [true, 1]", "only ints");
  bad_graph("\"pads\": [0, 1]", "\"pads\": [[0], [1]]", "only ints");
  bad_graph("\"pads\": [0, 1]", "\"pads\": [0, 1], \"pads\": [2]", "duplicate key \"pads\"");
  bad_graph("\"alpha\": 1.5", "\"alpha\": 1e999", "range of a double");
  bad_graph("\"alpha\": 1.5", "\"alpha\": NaN", "NaN");
  char deep[300] = "\"deep\": ";
  for (int i = 0; i < 70; ++i) strcat(deep, "[");
  for (int i = 0; i < 70; ++i) strcat(deep, "]");
  bad_graph("\"tag\": \"fc\"", deep, "nested deeper than 64");
  /* outputs */
  bad_graph("\"outputs\": [\"y\"]", "\"outputs\": [\"q\"]", "graph output \"q\" is not defined");
  bad_graph("\"outputs\": [\"y\"]", "\"outputs\": [\"y\", \"\"]", "empty name");
  /* graph outputs that are inputs or constants are fine, as in Python */
  char *ok = replace(GRAPH, "\"outputs\": [\"y\"]", "\"outputs\": [\"y\", \"x\", \"w\"]");
  file f = build(ok, ENTRIES);
  char err[512];
  CHECK(load(&f, err, sizeof err) == MTE_OK, "outputs that are an input and a constant: %s", err);
  free(f.bytes);
  free(ok);
}

/* ---------------------------------------------------------------- the fuzzer */

/* One random edit of buf[0 .. *len) (cap bytes of room): flip, set, insert or delete a byte,
 * drawing new bytes from `alphabet` (NULL: any byte). */
static void mutate(unsigned char *buf, size_t *len, size_t cap, const char *alphabet) {
  size_t n = *len, at = n ? (size_t)(mte_test_next() % n) : 0;
  unsigned char byte = alphabet ? (unsigned char)alphabet[mte_test_next() % strlen(alphabet)]
                                : (unsigned char)mte_test_next();
  switch (mte_test_pick(4)) {
    case 0: if (n) buf[at] ^= (unsigned char)(1u << mte_test_pick(8)); break;
    case 1: if (n) buf[at] = byte; break;
    case 2:
      if (n < cap) {
        memmove(buf + at + 1, buf + at, n - at);
        buf[at] = byte;
        ++*len;
      }
      break;
    default:
      if (n) {
        memmove(buf + at, buf + at + 1, n - at - 1);
        --*len;
      }
  }
}

static int fuzz_status_ok(int st) { return st == MTE_OK || st == MTE_EFORMAT; }

/* Mutated bytes of the whole file; mutated graph documents and entries in a valid container
 * (so the graph checks and the planner see the damage, not just the header parser). */
static void test_fuzz(void) {
  int iters = quick ? 1000 : 4000, odd = 0, loaded = 0;
  char err[1024];
  file f = valid_file();
  size_t cap = f.size + 64;
  unsigned char *buf = malloc(cap);
  for (int it = 0; it < iters; ++it) {
    size_t len = f.size;
    memcpy(buf, f.bytes, len);
    for (int k = 1 + mte_test_pick(3); k > 0; --k) mutate(buf, &len, cap, NULL);
    file m = {malloc(len ? len : 1), len};
    memcpy(m.bytes, buf, len);
    int st = load(&m, err, sizeof err);
    odd += !fuzz_status_ok(st);
    loaded += st == MTE_OK;
    free(m.bytes);
  }
  free(buf);
  static const char alphabet[] = "[]{},:\"0123456789-.e xyhrwbfl_/ReluGmmsap";
  const char *texts[] = {GRAPH, ENTRIES};
  for (int which = 0; which < 2; ++which) {
    size_t base = strlen(texts[which]);
    char *text = malloc(base + 64);
    for (int it = 0; it < iters; ++it) {
      size_t len = base;
      memcpy(text, texts[which], len);
      for (int k = 1 + mte_test_pick(3); k > 0; --k)
        mutate((unsigned char *)text, &len, base + 63, alphabet);
      text[len] = 0;
      file m = which ? build(GRAPH, text) : build(text, ENTRIES);
      int st = load(&m, err, sizeof err);
      odd += !fuzz_status_ok(st);
      loaded += st == MTE_OK;
      free(m.bytes);
    }
    free(text);
  }
  free(f.bytes);
  CHECK(odd == 0, "%d mutated files gave a status other than OK / MTE_EFORMAT", odd);
  printf("fuzz: %d mutated files, %d of them still valid\n", 3 * iters, loaded);
}

/* ---------------------------------------------------------------- per-node times */

/* mte_model_set_profiling / node_last: refused while off and before a run; after a run
 * every node has a start and a duration, in order and not overlapping, inside the run's
 * wall time; outputs are the same with the clock on and off; totals add up over runs. */
static void test_profiling(void) {
  file f = valid_file();
  mte_model *m = NULL;
  char err[512];
  if (mte_model_load_memory(f.bytes, f.size, &m, err, sizeof err) != MTE_OK) {
    CHECK(0, "load: %s", err);
    free(f.bytes);
    return;
  }
  float x[4] = {1.0f, -2.0f, 0.5f, 3.0f}, y_off[4], y_on[4];
  const void *in[1] = {x};
  void *out_off[1] = {y_off}, *out_on[1] = {y_on};
  double start, dur;
  int n = mte_model_num_nodes(m);
  CHECK(mte_model_node_last(m, 0, &start, &dur) == MTE_EINVAL, "off: refused");
  CHECK(mte_model_run(m, in, out_off, err, sizeof err) == MTE_OK, "run off: %s", err);
  CHECK(mte_model_node_last(m, 0, &start, &dur) == MTE_EINVAL, "still off after a run");
  CHECK(mte_model_set_profiling(NULL, 1) == MTE_EINVAL, "NULL model");
  CHECK(mte_model_set_profiling(m, 1) == MTE_OK, "on");
  CHECK(mte_model_node_last(m, 0, &start, &dur) == MTE_EINVAL, "no run yet: refused");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK(mte_model_run(m, in, out_on, err, sizeof err) == MTE_OK, "run on: %s", err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  CHECK(!memcmp(y_off, y_on, sizeof y_on), "profiling changes no result");
  double end_prev = 0.0, sum = 0.0;
  for (int k = 0; k < n; ++k) {
    int st = mte_model_node_last(m, k, &start, &dur);
    CHECK(st == MTE_OK && dur >= 0.0 && start >= end_prev && start + dur <= wall,
          "node %d: st %d start %g dur %g (previous end %g, wall %g)", k, st, start, dur,
          end_prev, wall);
    end_prev = start + dur;
    sum += dur;
    CHECK(mte_model_node_seconds(m, k) == dur, "node %d: total after one run = its time", k);
  }
  CHECK(sum <= wall, "nodes sum %g <= wall %g", sum, wall);
  CHECK(mte_model_node_last(m, -1, &start, &dur) < 0 && mte_model_node_last(m, n, &start, &dur) < 0 &&
            mte_model_node_last(m, 0, NULL, &dur) < 0 && mte_model_node_last(NULL, 0, &start, &dur) < 0,
        "bad node index or NULL: refused");
  CHECK(!strcmp(mte_model_node_name(m, 0), "fc/Gemm") && !strcmp(mte_model_node_op(m, 0), "Gemm") &&
            mte_model_node_name(m, n) == NULL && mte_model_node_op(m, -1) == NULL, "names, ops");
  double last0;
  mte_model_node_last(m, 0, &start, &last0);
  double total_before = mte_model_node_seconds(m, 0);
  CHECK(mte_model_run(m, in, out_on, err, sizeof err) == MTE_OK, "second run: %s", err);
  mte_model_node_last(m, 0, &start, &dur);
  CHECK(mte_model_node_seconds(m, 0) == total_before + dur, "totals add each run's time");
  CHECK(mte_model_profile(m, 1) == MTE_OK && mte_model_node_seconds(m, 0) == 0.0, "reset");
  CHECK(mte_model_set_profiling(m, 0) == MTE_OK &&
            mte_model_node_last(m, 0, &start, &dur) == MTE_EINVAL, "off again: refused");
  CHECK(mte_model_run(m, in, out_on, err, sizeof err) == MTE_OK &&
            !memcmp(y_off, y_on, sizeof y_on), "run after turning it off");
  mte_model_free(m);
  free(f.bytes);
}

int main(int argc, char **argv) {
  quick = argc > 1 && !strcmp(argv[1], "--quick");
  test_valid();
  test_profiling();
  test_alignment();
  test_container();
  test_graph();
  test_fuzz();
  return mte_test_summary("test_runtime_model");
}
