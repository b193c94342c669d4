/*
 * test_runtime_json.c - the strict JSON parser (runtime/json.c): a corpus of valid and invalid
 * documents, numbers (exact int64, doubles, locales), strings (escapes, surrogates, UTF-8),
 * the limits, and a mutation fuzzer. Every document is parsed from an exactly sized heap
 * copy, so under `make asan` any read past the buffer is caught.
 */
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "mte_runtime.h"
#include "mte_test.h"

static int quick = 0;

/* Parse text[0 .. len) from an exact-size copy; returns the status, *doc on success. */
static int parse_n(const char *text, size_t len, const mte_json_limits *lim, mte_json_doc **doc,
                   char *err, size_t errlen) {
  char *copy = malloc(len ? len : 1);
  memcpy(copy, text, len);
  int st = mte_json_parse(copy, len, lim, doc, err, errlen);
  free(copy);
  return st;
}

static void expect_ok(const char *text) {
  mte_json_doc *doc = NULL;
  char err[256];
  int st = parse_n(text, strlen(text), NULL, &doc, err, sizeof err);
  CHECK(st == MTE_OK && doc, "valid %s: %s", text, err);
  mte_json_free(doc);
}

static void expect_bad_n(const char *text, size_t len, const char *why) {
  mte_json_doc *doc = (mte_json_doc *)1;
  char err[256];
  int st = parse_n(text, len, NULL, &doc, err, sizeof err);
  CHECK(st == MTE_EFORMAT && doc == NULL, "invalid %.60s accepted (st %d)", text, st);
  CHECK(strstr(err, why) != NULL, "%.60s: message \"%s\" lacks \"%s\"", text, err, why);
}

static void expect_bad(const char *text, const char *why) { expect_bad_n(text, strlen(text), why); }

/* Parse one scalar document; returns its root through a kept doc. */
static const mte_json *scalar(const char *text, mte_json_doc **doc) {
  char err[256];
  if (parse_n(text, strlen(text), NULL, doc, err, sizeof err) != MTE_OK) return NULL;
  return mte_json_root(*doc);
}

static void test_valid(void) {
  static const char *docs[] = {
      "0", "-0", "1", "-1", "1.5", "1e3", "1E-3", "-0.0e+0", "true", "false", "null", "\"\"",
      "[]", "{}", "[[]]", "[1,[2,[3]]]", " \t\n\r[1] \n ", "{\"a\":1,\"b\":[true,null,\"x\"]}",
      "{\"a\":1,\"A\":2}", "{\"\":0}", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u00e9\\uD83D\\uDE00\"",
      "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"", "1e-400", "[1, 2 ,3 ]",
      "{\"k\" : {\"k\" : {}}}"};
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; ++i) expect_ok(docs[i]);
}

static void test_invalid(void) {
  static const struct { const char *text, *why; } bad[] = {
      {"", "end of input"}, {"   ", "end of input"}, {"[", "end of input"},
      {"]", "invalid value"}, {"[1,]", "invalid value"}, {"[,1]", "invalid value"},
      {"[1 2]", "expected ','"}, {"{\"a\"}", "':'"}, {"{\"a\":}", "invalid value"},
      {"{\"a\":1,}", "string key"}, {"{a:1}", "string key"}, {"{\"a\":1 \"b\":2}", "','"},
      {"{\"a\":1,\"a\":2}", "duplicate key \"a\""}, {"NaN", "NaN"}, {"Infinity", "NaN"},
      {"-Infinity", "invalid value"}, {"nan", "invalid value"}, {"[1e400]", "range"},
      {"-1e400", "range"}, {"01", "leading zero"}, {"-01", "leading zero"}, {"-", "invalid"},
      {"1.", "decimal point"}, {".5", "invalid value"}, {"1e", "exponent"}, {"1e+", "exponent"},
      {"+1", "invalid value"}, {"0x10", "trailing"}, {"[1] x", "trailing"}, {"[1]]", "trailing"},
      {"{} {}", "trailing"}, {"tru", "invalid value"}, {"nul", "invalid value"},
      {"truex", "trailing"}, {"\"abc", "unterminated string"}, {"\"abc\\\"", "unterminated"},
      {"\"\\x\"", "invalid escape"}, {"\"\\u12\"", "4 hex"}, {"\"\\u12G4\"", "4 hex"},
      {"\"\\ud800\"", "lone high surrogate"}, {"\"\\udc00\"", "lone low surrogate"},
      {"\"\\ud800\\u0041\"", "lone high"}, {"\"\\ud800\\ud800\"", "lone high"},
      {"\"\\u0000\"", "\\u0000"}, {"\"a\tb\"", "control character"},
      {"\"a\nb\"", "control character"}, {"\xef\xbb\xbf[]", "byte order mark"},
      {"\"\xc0\xaf\"", "UTF-8"}, {"\"\xc1\xbf\"", "UTF-8"}, {"\"\xe0\x80\xaf\"", "UTF-8"},
      {"\"\xed\xa0\x80\"", "UTF-8"}, {"\"\xf4\x90\x80\x80\"", "UTF-8"}, {"\"\xf5\x80\x80\x80\"", "UTF-8"},
      {"\"\xff\"", "UTF-8"}, {"\"\xe2\x82\"", "UTF-8"}, {"\"\x80\"", "UTF-8"},
      {"\"\xf0\x9f\x98\"", "UTF-8"}, {"[1]\xc3\xa9", "trailing"}, {"'a'", "invalid value"},
      {"[1 /*c*/]", "expected ','"}, {"{\"a\":1}//", "trailing"}, {"[\"a\" : 1]", "','"},
      {"{\"a\" 1}", "':'"}, {"{1:2}", "string key"}, {"[True]", "invalid value"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) expect_bad(bad[i].text, bad[i].why);
  expect_bad_n("[1\0]", 4, "expected ','");
  expect_bad_n("\"a\0\"", 4, "control character");
  expect_bad_n("1\0", 2, "trailing");
  /* a duplicate among many keys (the sorted check) */
  char big[2048] = "{";
  for (int i = 0; i < 40; ++i) sprintf(big + strlen(big), "\"k%d\":%d,", i, i);
  strcat(big, "\"k17\":0}");
  expect_bad(big, "duplicate key \"k17\"");
  big[strlen(big) - 6] = '9'; /* the last key becomes "k97"... */
  big[strlen(big) - 7] = '9'; /* ... then "997": unique */
  expect_ok(big);
}

static void test_numbers(void) {
  mte_json_doc *doc = NULL;
  const mte_json *v;
  v = scalar("9223372036854775807", &doc);
  CHECK(v && v->type == MTE_JSON_INT && v->u.i == INT64_MAX, "INT64_MAX");
  mte_json_free(doc);
  v = scalar("-9223372036854775808", &doc);
  CHECK(v && v->type == MTE_JSON_INT && v->u.i == INT64_MIN, "INT64_MIN");
  mte_json_free(doc);
  v = scalar("9223372036854775808", &doc);
  CHECK(v && v->type == MTE_JSON_DOUBLE && v->u.d == 9223372036854775808.0, "2**63 is a double");
  mte_json_free(doc);
  v = scalar("-9223372036854775809", &doc);
  CHECK(v && v->type == MTE_JSON_DOUBLE, "below INT64_MIN is a double");
  mte_json_free(doc);
  v = scalar("-0", &doc);
  CHECK(v && v->type == MTE_JSON_INT && v->u.i == 0, "-0 is int 0");
  mte_json_free(doc);
  v = scalar("1.0", &doc);
  CHECK(v && v->type == MTE_JSON_DOUBLE && v->u.d == 1.0, "1.0 is a double (as Python's json)");
  mte_json_free(doc);
  v = scalar("1e2", &doc);
  CHECK(v && v->type == MTE_JSON_DOUBLE && v->u.d == 100.0, "1e2 is a double");
  mte_json_free(doc);
  v = scalar("0.1", &doc);
  CHECK(v && v->type == MTE_JSON_DOUBLE && v->u.d == 0.1, "0.1 rounds like strtod");
  mte_json_free(doc);
  v = scalar("-2.5e-3", &doc);
  CHECK(v && v->type == MTE_JSON_DOUBLE && v->u.d == -2.5e-3, "-2.5e-3");
  mte_json_free(doc);
  v = scalar("1.7976931348623157e308", &doc);
  CHECK(v && v->type == MTE_JSON_DOUBLE && v->u.d == 1.7976931348623157e308, "DBL_MAX");
  mte_json_free(doc);
  /* a number token of 512 characters is fine, 513 is over the limit */
  char num[600] = "0.";
  memset(num + 2, '0', 509);
  num[511] = '1';
  num[512] = 0;
  expect_ok(num);
  num[512] = '1';
  num[513] = 0;
  expect_bad(num, "more than 512");
  /* a locale with a decimal comma does not change how numbers parse */
  const char *locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "ru_RU.UTF-8"};
  for (size_t i = 0; i < 4; ++i) {
    if (!setlocale(LC_NUMERIC, locales[i])) continue;
    v = scalar("1.5", &doc);
    CHECK(v && v->type == MTE_JSON_DOUBLE && v->u.d == 1.5, "1.5 under %s", locales[i]);
    mte_json_free(doc);
    break;
  }
  setlocale(LC_NUMERIC, "C");
}

static void test_strings(void) {
  mte_json_doc *doc = NULL;
  const mte_json *v = scalar("\"a\\u00e9\\uD83D\\uDE00\\n\\/\"", &doc);
  CHECK(v && v->type == MTE_JSON_STRING && v->u.str.len == 9 &&
            memcmp(v->u.str.s, "a\xc3\xa9\xf0\x9f\x98\x80\n/", 9) == 0,
        "escapes decode to UTF-8");
  CHECK(v && v->u.str.s[v->u.str.len] == 0, "NUL-terminated");
  mte_json_free(doc);
  v = scalar("\"\\u0041\\u07FF\\u0800\\uFFFF\\uDBFF\\uDFFF\"", &doc);
  CHECK(v && v->u.str.len == 1 + 2 + 3 + 3 + 4 &&
            memcmp(v->u.str.s, "A\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf4\x8f\xbf\xbf", 13) == 0,
        "UTF-8 boundaries");
  mte_json_free(doc);
}

static void test_dom(void) {
  mte_json_doc *doc = NULL;
  char err[256];
  const char *text = "{\"shape\": [2, 3], \"dtype\": \"F32\", \"x\": {\"y\": null}}";
  CHECK(parse_n(text, strlen(text), NULL, &doc, err, sizeof err) == MTE_OK, "%s", err);
  const mte_json *root = mte_json_root(doc);
  const mte_json *shape = mte_json_get(root, "shape");
  CHECK(shape && shape->type == MTE_JSON_ARRAY && shape->u.list.n == 2 &&
            shape->u.list.items[1].u.i == 3, "array items");
  CHECK(mte_json_get(root, "dtype") && !strcmp(mte_json_get(root, "dtype")->u.str.s, "F32"),
        "string member");
  CHECK(mte_json_get(root, "missing") == NULL && mte_json_get(shape, "x") == NULL, "absent");
  CHECK(mte_json_get(mte_json_get(root, "x"), "y")->type == MTE_JSON_NULL, "nested");
  CHECK(!strcmp(mte_json_type_name(shape), "array"), "type name");
  mte_json_free(doc);
  mte_json_free(NULL);
}

static int parse_lim(const char *text, const mte_json_limits *lim) {
  mte_json_doc *doc = NULL;
  char err[256];
  int st = parse_n(text, strlen(text), lim, &doc, err, sizeof err);
  mte_json_free(doc);
  return st;
}

static void test_limits(void) {
  mte_json_limits lim = mte_json_default_limits();
  CHECK(lim.max_depth == 64, "default depth");
  size_t n = 100000;
  char *deep = malloc(2 * n + 1);
  memset(deep, '[', 64);
  memset(deep + 64, ']', 64);
  deep[128] = 0;
  CHECK(parse_lim(deep, NULL) == MTE_OK, "64 levels are fine");
  memset(deep, '[', 65);
  memset(deep + 65, ']', 65);
  deep[130] = 0;
  expect_bad(deep, "nested deeper than 64");
  memset(deep, '[', n);
  memset(deep + n, ']', n);
  deep[2 * n] = 0;
  CHECK(parse_lim(deep, NULL) == MTE_EFORMAT, "100000 levels are refused, without recursion");
  for (size_t i = 0; i < n; ++i) deep[2 * i] = '{', deep[2 * i + 1] = '[';
  CHECK(parse_lim(deep, NULL) == MTE_EFORMAT, "deep mixed nesting is refused");
  free(deep);
  lim.max_depth = 2;
  CHECK(parse_lim("[[1]]", &lim) == MTE_OK && parse_lim("[[[1]]]", &lim) == MTE_EFORMAT, "depth");
  lim = mte_json_default_limits();
  lim.max_string_bytes = 4;
  CHECK(parse_lim("\"abcd\"", &lim) == MTE_OK && parse_lim("\"abcde\"", &lim) == MTE_EFORMAT,
        "string length");
  CHECK(parse_lim("{\"abcde\":1}", &lim) == MTE_EFORMAT, "key length");
  CHECK(parse_lim("\"\\u00e9\\u00e9\"", &lim) == MTE_OK, "decoded length counts");
  lim = mte_json_default_limits();
  lim.max_elements = 3;
  CHECK(parse_lim("[1,2]", &lim) == MTE_OK && parse_lim("[1,2,3]", &lim) == MTE_EFORMAT,
        "element count");
  lim = mte_json_default_limits();
  lim.max_input_bytes = 5;
  CHECK(parse_lim("[1,2]", &lim) == MTE_OK && parse_lim("[1,22]", &lim) == MTE_EFORMAT,
        "input size");
  /* a large flat array goes through the growing scratch stack */
  size_t count = 200000;
  char *flat = malloc(2 * count + 2);
  flat[0] = '[';
  for (size_t i = 0; i < count; ++i) flat[1 + 2 * i] = '7', flat[2 + 2 * i] = ',';
  flat[2 * count] = ']';
  flat[2 * count + 1] = 0;
  mte_json_doc *doc = NULL;
  char err[256];
  CHECK(parse_n(flat, strlen(flat), NULL, &doc, err, sizeof err) == MTE_OK &&
            mte_json_root(doc)->u.list.n == count && mte_json_root(doc)->u.list.items[count - 1].u.i == 7,
        "a flat array of %zu: %s", count, err);
  mte_json_free(doc);
  free(flat);
}

/* Flip, insert and delete bytes of valid documents: success or MTE_EFORMAT, never a crash. */
static void test_fuzz(void) {
  static const char *seeds[] = {
      "{\"__metadata__\":{\"a\":\"b\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],"
      "\"data_offsets\":[0,24]}}",
      "[1,-2.5e3,\"\\u00e9\\ud83d\\ude00\",true,false,null,{\"k\":[[],{}]}]"};
  int iters = quick ? 2000 : 20000, bad_status = 0;
  char buf[512];
  for (int it = 0; it < iters; ++it) {
    const char *seed = seeds[it % 2];
    size_t len = strlen(seed);
    memcpy(buf, seed, len);
    int edits = 1 + mte_test_pick(4);
    for (int k = 0; k < edits; ++k) {
      size_t at = len ? (size_t)mte_test_pick((int)len) : 0;
      int what = mte_test_pick(3);
      if (what == 0 && len) buf[at] = (char)mte_test_next();
      else if (what == 1 && len < sizeof buf - 1) {
        memmove(buf + at + 1, buf + at, len - at);
        buf[at] = "[]{}\",:\\u0e-.\x80\xff"[mte_test_pick(16)];
        ++len;
      } else if (len) {
        memmove(buf + at, buf + at + 1, len - at - 1);
        --len;
      }
    }
    mte_json_doc *doc = NULL;
    char err[256];
    int st = parse_n(buf, len, NULL, &doc, err, sizeof err);
    if (st != MTE_OK && st != MTE_EFORMAT) ++bad_status;
    if ((st == MTE_OK) != (doc != NULL)) ++bad_status;
    mte_json_free(doc);
  }
  CHECK(bad_status == 0, "%d mutated documents gave an unexpected status", bad_status);
}

int main(int argc, char **argv) {
  quick = argc > 1 && !strcmp(argv[1], "--quick");
  test_valid();
  test_invalid();
  test_numbers();
  test_strings();
  test_dom();
  test_limits();
  test_fuzz();
  return mte_test_summary("test_runtime_json");
}
