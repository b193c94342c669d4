/*
 * json.c - the strict JSON parser of json.h: recursive descent bounded by the depth limit,
 * values collected on a scratch stack and copied into the pool as one contiguous array
 * when their array/object closes (so items are indexable), strings decoded and validated
 * (UTF-8, escapes, surrogates) in one pass, numbers classified as exact int64 or double.
 */
#include "json.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mte_runtime.h"

/* ================================================================ the pool */

#define POOL_CHUNK (64u * 1024u)

typedef struct pool_chunk {
  struct pool_chunk *next;
  size_t size, used;
  /* data follows, 64-byte aligned */
} pool_chunk;

struct mte_pool {
  pool_chunk *head;
};

mte_pool *mte_pool_create(void) { return calloc(1, sizeof(mte_pool)); }

void mte_pool_destroy(mte_pool *pool) {
  if (!pool) return;
  for (pool_chunk *c = pool->head; c;) {
    pool_chunk *next = c->next;
    free(c);
    c = next;
  }
  free(pool);
}

#define CHUNK_HEADER 64u /* sizeof(pool_chunk) rounded up: data starts 64-aligned */

void *mte_pool_alloc(mte_pool *pool, size_t bytes, int align64) {
  size_t align = align64 ? 64 : 16;
  if (bytes > SIZE_MAX / 2) return NULL;
  pool_chunk *c = pool->head;
  size_t at = c ? (c->used + align - 1) & ~(align - 1) : 0;
  if (!c || at > c->size || c->size - at < bytes) {
    size_t size = bytes > POOL_CHUNK ? bytes : POOL_CHUNK;
    /* aligned_alloc needs a multiple of the alignment */
    size_t total = (CHUNK_HEADER + size + 63) & ~(size_t)63;
    c = aligned_alloc(64, total);
    if (!c) return NULL;
    c->size = total - CHUNK_HEADER;
    c->used = 0;
    c->next = pool->head;
    pool->head = c;
    at = 0;
  }
  unsigned char *p = (unsigned char *)c + CHUNK_HEADER + at;
  c->used = at + bytes;
  memset(p, 0, bytes);
  return p;
}

void *mte_pool_array(mte_pool *pool, size_t n, size_t size) {
  if (size && n > SIZE_MAX / 2 / size) return NULL;
  return mte_pool_alloc(pool, n && size ? n * size : 1, 0);
}

/* ================================================================ the parser state */

struct mte_json_doc {
  mte_pool *pool;
  mte_json root;
};

typedef struct parser {
  const unsigned char *s;
  size_t len, pos;
  int depth;
  size_t elements;
  mte_json_limits lim;
  mte_pool *pool;
  mte_json *stack; /* scratch: children of the open containers */
  size_t sp, cap;
  int status;
  char *err;
  size_t errlen;
} parser;

static int fail(parser *p, int status, const char *fmt, ...) {
  if (p->status == MTE_OK) {
    p->status = status;
    if (p->err && p->errlen) {
      int n = snprintf(p->err, p->errlen, "at byte %zu: ", p->pos);
      if (n >= 0 && (size_t)n < p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
      }
    }
  }
  return status;
}

static int oom(parser *p) { return fail(p, MTE_ENOMEM, "out of memory"); }

mte_json_limits mte_json_default_limits(void) {
  mte_json_limits l = {64, 1u << 20, 1u << 20, 100000000u};
  return l;
}

static void skip_ws(parser *p) {
  while (p->pos < p->len) {
    unsigned char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++p->pos;
  }
}

static int push(parser *p, const mte_json *v) {
  if (p->sp == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 256;
    mte_json *s = realloc(p->stack, cap * sizeof *s);
    if (!s) return oom(p);
    p->stack = s;
    p->cap = cap;
  }
  p->stack[p->sp++] = *v;
  return MTE_OK;
}

/* Move stack[base .. sp) into the pool as the items of container v. */
static int pop_into(parser *p, size_t base, mte_json *v) {
  size_t n = p->sp - base;
  v->u.list.n = n;
  v->u.list.items = NULL;
  if (n) {
    mte_json *items = mte_pool_array(p->pool, n, sizeof *items);
    if (!items) return oom(p);
    memcpy(items, p->stack + base, n * sizeof *items);
    v->u.list.items = items;
  }
  p->sp = base;
  return MTE_OK;
}

/* ================================================================ strings */

static int hex4(const unsigned char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; ++i) {
    unsigned c = s[i], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return 0;
    v = v * 16 + d;
  }
  *out = v;
  return 1;
}

static size_t put_utf8(unsigned char *o, unsigned cp) {
  if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xC0 | (cp >> 6));
    o[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (cp >> 12));
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | (cp >> 18));
  o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Length of the valid UTF-8 sequence at s[0 .. avail) (lead byte >= 0x80), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t avail) {
  unsigned c = s[0];
  size_t n;
  unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  /* no overlongs */
    if (c == 0xED) hi = 0x9F;  /* no UTF-16 surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  /* <= U+10FFFF */
  } else return 0;
  if (avail < n || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return n;
}

/* One escape after the backslash at s[*i]; writes UTF-8 at o, advances *i past it. */
static int escape(parser *p, size_t end, size_t *i, unsigned char *o, size_t *olen) {
  unsigned char c = p->s[*i + 1];
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  const char *hit = c ? strchr(from, c) : NULL;
  if (hit) {
    *o = (unsigned char)to[hit - from];
    *olen = 1;
    *i += 2;
    return MTE_OK;
  }
  if (c != 'u')
    return c >= 0x20 && c < 0x7f ? fail(p, MTE_EFORMAT, "invalid escape \\%c in a string", c)
                                 : fail(p, MTE_EFORMAT, "invalid escape (byte 0x%02X) in a string", c);
  unsigned cp, lo;
  if (*i + 6 > end || !hex4(p->s + *i + 2, &cp))
    return fail(p, MTE_EFORMAT, "\\u needs 4 hex digits");
  *i += 6;
  if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(p, MTE_EFORMAT, "lone low surrogate \\u%04X", cp);
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (*i + 6 > end || p->s[*i] != '\\' || p->s[*i + 1] != 'u' || !hex4(p->s + *i + 2, &lo) ||
        lo < 0xDC00 || lo > 0xDFFF)
      return fail(p, MTE_EFORMAT, "lone high surrogate \\u%04X", cp);
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    *i += 6;
  }
  if (cp == 0) return fail(p, MTE_EFORMAT, "\\u0000 is not allowed in strings");
  *olen = put_utf8(o, cp);
  return MTE_OK;
}

/* The string starting at the quote at p->pos: decoded into the pool. */
static int parse_string(parser *p, const char **out, size_t *out_len) {
  size_t start = p->pos + 1, end = start;
  while (end < p->len && p->s[end] != '"') end += (p->s[end] == '\\') ? 2 : 1;
  if (end >= p->len) return fail(p, MTE_EFORMAT, "unterminated string");
  unsigned char *o = mte_pool_alloc(p->pool, end - start + 1, 0);
  if (!o) return oom(p);
  size_t n = 0, i = start;
  while (i < end) {
    unsigned char c = p->s[i];
    p->pos = i;
    if (c == '\\') {
      size_t k = 0;
      if (escape(p, end, &i, o + n, &k)) return p->status;
      n += k;
    } else if (c < 0x20) {
      return fail(p, MTE_EFORMAT, "unescaped control character 0x%02X in a string", c);
    } else if (c < 0x80) {
      o[n++] = c;
      ++i;
    } else {
      size_t k = utf8_seq(p->s + i, end - i);
      if (!k) return fail(p, MTE_EFORMAT, "invalid UTF-8 in a string");
      memcpy(o + n, p->s + i, k);
      n += k;
      i += k;
    }
  }
  if (n > p->lim.max_string_bytes)
    return fail(p, MTE_EFORMAT, "a string of %zu bytes is over the limit of %zu", n,
                p->lim.max_string_bytes);
  o[n] = 0;
  *out = (const char *)o;
  *out_len = n;
  p->pos = end + 1;
  return MTE_OK;
}

/* ================================================================ numbers */

#define MAX_NUMBER_CHARS 512

static size_t digits(const unsigned char *s, size_t i, size_t len) {
  size_t j = i;
  while (j < len && s[j] >= '0' && s[j] <= '9') ++j;
  return j - i;
}

/* An integral token to int64; 0 when it does not fit. */
static int to_int64(const unsigned char *s, size_t n, int64_t *out) {
  int neg = s[0] == '-';
  uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (size_t i = (size_t)neg; i < n; ++i) {
    unsigned d = s[i] - '0';
    if (v > (limit - d) / 10) return 0;
    v = v * 10 + d;
  }
  *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  return 1;
}

/* strtod on a copy whose '.' is the current locale's decimal point. */
static int to_double(const unsigned char *s, size_t n, double *out) {
  char buf[MAX_NUMBER_CHARS + 8];
  const char *dp = localeconv()->decimal_point;
  size_t dl = dp && *dp ? strlen(dp) : 1, k = 0;
  if (dl > 4) return 0;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] == '.' && dp && *dp) {
      memcpy(buf + k, dp, dl);
      k += dl;
    } else buf[k++] = (char)s[i];
  }
  buf[k] = 0;
  char *endp;
  errno = 0;
  double d = strtod(buf, &endp);
  if (endp != buf + k || !isfinite(d)) return 0;
  *out = d;
  return 1;
}

static int parse_number(parser *p, mte_json *v) {
  const unsigned char *s = p->s;
  size_t i = p->pos, start = i;
  int integral = 1;
  if (i < p->len && s[i] == '-') ++i;
  size_t d = digits(s, i, p->len);
  if (d == 0) return fail(p, MTE_EFORMAT, "invalid value");
  if (s[i] == '0' && d > 1) return fail(p, MTE_EFORMAT, "a number with a leading zero");
  i += d;
  if (i < p->len && s[i] == '.') {
    integral = 0;
    d = digits(s, ++i, p->len);
    if (d == 0) return fail(p, MTE_EFORMAT, "a digit must follow the decimal point");
    i += d;
  }
  if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
    integral = 0;
    if (++i < p->len && (s[i] == '+' || s[i] == '-')) ++i;
    d = digits(s, i, p->len);
    if (d == 0) return fail(p, MTE_EFORMAT, "a digit must follow the exponent");
    i += d;
  }
  if (i - start > MAX_NUMBER_CHARS)
    return fail(p, MTE_EFORMAT, "a number of more than %d characters", MAX_NUMBER_CHARS);
  if (integral && to_int64(s + start, i - start, &v->u.i)) {
    v->type = MTE_JSON_INT;
  } else if (to_double(s + start, i - start, &v->u.d)) {
    v->type = MTE_JSON_DOUBLE;
  } else {
    return fail(p, MTE_EFORMAT, "number out of the range of a double");
  }
  p->pos = i;
  return MTE_OK;
}

/* ================================================================ values */

static int parse_value(parser *p, mte_json *v);

static int literal(parser *p, const char *word, mte_json_type type, int b, mte_json *v) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
    return fail(p, MTE_EFORMAT, "invalid value (NaN, Infinity and bare words are not JSON)");
  p->pos += n;
  v->type = type;
  v->u.b = b;
  return MTE_OK;
}

static int key_cmp(const void *a, const void *b) {
  const mte_json *x = *(const mte_json *const *)a, *y = *(const mte_json *const *)b;
  if (x->key_len != y->key_len) return x->key_len < y->key_len ? -1 : 1;
  return memcmp(x->key, y->key, x->key_len);
}

/* A key twice in the object: sort pointers to the members and compare neighbours. */
static int check_duplicates(parser *p, const mte_json *obj) {
  size_t n = obj->u.list.n;
  if (n < 2) return MTE_OK;
  const mte_json **idx = malloc(n * sizeof *idx);
  if (!idx) return oom(p);
  for (size_t i = 0; i < n; ++i) idx[i] = &obj->u.list.items[i];
  qsort(idx, n, sizeof *idx, key_cmp);
  for (size_t i = 1; i < n; ++i) {
    if (key_cmp(&idx[i - 1], &idx[i]) == 0) {
      fail(p, MTE_EFORMAT, "duplicate key \"%.200s\" in an object", idx[i]->key);
      break;
    }
  }
  free(idx);
  return p->status;
}

static int parse_array(parser *p, mte_json *v) {
  size_t base = p->sp;
  v->type = MTE_JSON_ARRAY;
  ++p->pos;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == ']') {
    ++p->pos;
    return pop_into(p, base, v);
  }
  for (;;) {
    mte_json item = {0};
    if (parse_value(p, &item) || push(p, &item)) return p->status;
    skip_ws(p);
    if (p->pos >= p->len) return fail(p, MTE_EFORMAT, "unterminated array");
    if (p->s[p->pos] == ']') break;
    if (p->s[p->pos] != ',') return fail(p, MTE_EFORMAT, "expected ',' or ']' in an array");
    ++p->pos;
  }
  ++p->pos;
  return pop_into(p, base, v);
}

static int parse_object(parser *p, mte_json *v) {
  size_t base = p->sp;
  v->type = MTE_JSON_OBJECT;
  ++p->pos;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == '}') {
    ++p->pos;
    return pop_into(p, base, v);
  }
  for (;;) {
    mte_json item = {0};
    const char *key;
    size_t key_len;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != '"')
      return fail(p, MTE_EFORMAT, "expected a string key in an object");
    if (parse_string(p, &key, &key_len)) return p->status;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != ':')
      return fail(p, MTE_EFORMAT, "expected ':' after an object key");
    ++p->pos;
    if (parse_value(p, &item)) return p->status;
    item.key = key;
    item.key_len = key_len;
    if (push(p, &item)) return p->status;
    skip_ws(p);
    if (p->pos >= p->len) return fail(p, MTE_EFORMAT, "unterminated object");
    if (p->s[p->pos] == '}') break;
    if (p->s[p->pos] != ',') return fail(p, MTE_EFORMAT, "expected ',' or '}' in an object");
    ++p->pos;
  }
  ++p->pos;
  if (pop_into(p, base, v)) return p->status;
  return check_duplicates(p, v);
}

static int parse_value(parser *p, mte_json *v) {
  skip_ws(p);
  if (p->pos >= p->len) return fail(p, MTE_EFORMAT, "unexpected end of input");
  if (++p->elements > p->lim.max_elements)
    return fail(p, MTE_EFORMAT, "more than %zu values", p->lim.max_elements);
  unsigned char c = p->s[p->pos];
  if (c == '[' || c == '{') {
    if (p->depth >= p->lim.max_depth)
      return fail(p, MTE_EFORMAT, "nested deeper than %d levels", p->lim.max_depth);
    ++p->depth;
    int st = c == '[' ? parse_array(p, v) : parse_object(p, v);
    --p->depth;
    return st;
  }
  if (c == '"') {
    v->type = MTE_JSON_STRING;
    return parse_string(p, &v->u.str.s, &v->u.str.len);
  }
  if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p, v);
  if (c == 't') return literal(p, "true", MTE_JSON_BOOL, 1, v);
  if (c == 'f') return literal(p, "false", MTE_JSON_BOOL, 0, v);
  if (c == 'n') return literal(p, "null", MTE_JSON_NULL, 0, v);
  if (c == 0xEF) return fail(p, MTE_EFORMAT, "a byte order mark is not allowed");
  return fail(p, MTE_EFORMAT, "invalid value (NaN, Infinity and bare words are not JSON)");
}

int mte_json_parse(const char *text, size_t len, const mte_json_limits *limits,
                   mte_json_doc **out, char *err, size_t errlen) {
  parser p = {0};
  p.s = (const unsigned char *)text;
  p.len = len;
  p.lim = limits ? *limits : mte_json_default_limits();
  p.err = err;
  p.errlen = errlen;
  if (err && errlen) err[0] = 0;
  *out = NULL;
  if (!text && len) return fail(&p, MTE_EINVAL, "no text");
  if (len > p.lim.max_input_bytes)
    return fail(&p, MTE_EFORMAT, "%zu bytes of JSON: over the limit of %zu", len,
                p.lim.max_input_bytes);
  mte_json_doc *doc = calloc(1, sizeof *doc);
  if (!doc || !(doc->pool = p.pool = mte_pool_create())) {
    free(doc);
    return oom(&p);
  }
  if (parse_value(&p, &doc->root) == MTE_OK) {
    skip_ws(&p);
    if (p.pos != p.len) fail(&p, MTE_EFORMAT, "trailing characters after the JSON value");
  }
  free(p.stack);
  if (p.status != MTE_OK) {
    mte_json_free(doc);
    return p.status;
  }
  *out = doc;
  return MTE_OK;
}

void mte_json_free(mte_json_doc *doc) {
  if (!doc) return;
  mte_pool_destroy(doc->pool);
  free(doc);
}

const mte_json *mte_json_root(const mte_json_doc *doc) { return doc ? &doc->root : NULL; }

const mte_json *mte_json_get(const mte_json *v, const char *key) {
  if (!v || v->type != MTE_JSON_OBJECT) return NULL;
  size_t n = strlen(key);
  for (size_t i = 0; i < v->u.list.n; ++i) {
    const mte_json *m = &v->u.list.items[i];
    if (m->key_len == n && memcmp(m->key, key, n) == 0) return m;
  }
  return NULL;
}

const char *mte_json_type_name(const mte_json *v) {
  static const char *names[] = {"null", "bool", "int", "float", "string", "array", "object"};
  return v && (unsigned)v->type < 7 ? names[v->type] : "nothing";
}
