/*
 * json.h - a strict JSON parser (RFC 8259 minus a few things, see README.md) with a DOM
 * in a pool allocator, for the headers of .mte model files.
 *
 * The idea: parse once into a tree of mte_json nodes that all live in one mte_pool, so
 * freeing the document is one call and nothing in it can leak. The parser never reads
 * past the buffer it is given, never recurses deeper than the depth limit, and rejects
 * everything a loader should not have to think about: duplicate keys, NaN/Infinity,
 * numbers that overflow a double, trailing garbage, invalid UTF-8, unescaped control
 * characters, lone surrogates, U+0000 inside strings and a byte order mark.
 *
 *     mte_json_doc *doc;
 *     char err[256];
 *     if (mte_json_parse(text, len, NULL, &doc, err, sizeof err) != MTE_OK) ... err says why
 *     const mte_json *v = mte_json_get(mte_json_root(doc), "key");
 *     mte_json_free(doc);
 *
 * Numbers: a token without fraction or exponent that fits in int64 is MTE_JSON_INT (exact);
 * every other number is MTE_JSON_DOUBLE (strtod, correctly for any C locale).
 */
#ifndef MTE_RUNTIME_JSON_H
#define MTE_RUNTIME_JSON_H

#include <stddef.h>
#include <stdint.h>

/* ---- a pool: bump allocation in chunks, freed at once ------------------------------- */

typedef struct mte_pool mte_pool;
mte_pool *mte_pool_create(void);
void mte_pool_destroy(mte_pool *pool);                  /* NULL is fine */
/* `bytes` of zeroed memory aligned to 16 (64 if align64), or NULL if out of memory. */
void *mte_pool_alloc(mte_pool *pool, size_t bytes, int align64);
/* calloc-like: n * size with overflow check */
void *mte_pool_array(mte_pool *pool, size_t n, size_t size);

/* ---- the DOM ------------------------------------------------------------------------- */

typedef enum mte_json_type {
  MTE_JSON_NULL = 0,
  MTE_JSON_BOOL,
  MTE_JSON_INT,    /* integral token in int64 range: .i */
  MTE_JSON_DOUBLE, /* any other number: .d (finite) */
  MTE_JSON_STRING, /* .s, .len: UTF-8, NUL-terminated, no embedded NUL */
  MTE_JSON_ARRAY,  /* .items[0 .. n) */
  MTE_JSON_OBJECT  /* .items[0 .. n), each with .key / .key_len, keys unique */
} mte_json_type;

typedef struct mte_json {
  mte_json_type type;
  const char *key; /* set on object members */
  size_t key_len;
  union {
    int b;
    int64_t i;
    double d;
    struct {
      const char *s;
      size_t len;
    } str;
    struct {
      struct mte_json *items;
      size_t n;
    } list;
  } u;
} mte_json;

typedef struct mte_json_limits {
  int max_depth;           /* nesting of arrays/objects (default 64) */
  size_t max_string_bytes; /* decoded length of one string or key (default 1 MiB) */
  size_t max_elements;     /* values in the whole document (default 1 << 20) */
  size_t max_input_bytes;  /* the text itself (default 100,000,000) */
} mte_json_limits;

typedef struct mte_json_doc mte_json_doc;

/* The defaults above. */
mte_json_limits mte_json_default_limits(void);

/* Parse text[0 .. len) (need not be NUL-terminated). limits NULL: the defaults. On error
 * returns MTE_EFORMAT (bad JSON) or MTE_ENOMEM / MTE_EOVERFLOW (a limit), *out = NULL
 * and err holds "at byte N: what". */
int mte_json_parse(const char *text, size_t len, const mte_json_limits *limits,
                   mte_json_doc **out, char *err, size_t errlen);
void mte_json_free(mte_json_doc *doc); /* NULL is fine */
const mte_json *mte_json_root(const mte_json_doc *doc);

/* Member `key` of an object, or NULL (also when v is not an object). */
const mte_json *mte_json_get(const mte_json *v, const char *key);
/* Printable name of a type: "null", "bool", "int", "float", "string", "array", "object". */
const char *mte_json_type_name(const mte_json *v);

#endif
