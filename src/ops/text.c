// Text operators: StringNormalizer, TfIdfVectorizer, StringConcat,
// StringSplit and RegexFullMatch (RE2 patterns run through POSIX regcomp
// after a translation described at RegexFullMatch).
//
// Case mapping is Unicode's simple (one code point to one code point)
// mapping for Latin, Greek, Cyrillic, Armenian, Georgian, Roman numerals,
// circled and full-width letters; other code points are left unchanged.
// Locales whose casing departs from those default rules (Turkic dotted i,
// Lithuanian) and non-UTF-8 codesets are refused rather than
// approximated. TfIdfVectorizer indexes its pool as a trie whose edges
// live in one hash table, so a lookup costs O(1) whatever the pool size.
#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// ------------------------------------------------------------- helpers

// Reads the int attribute |name| into *out; |def| when absent, an error
// when absent and |required|.
static wm_status_t attr_int(const wm_op_ctx_t *ctx, const char *name,
                            bool required, int64_t def, int64_t *out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  *out = def;
  if (!a) {
    return required ? WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                                  "attribute \"%s\" is required", name)
                    : NULL;
  }
  if (a->type != WM_ATTR_INT) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"%s\" has kind %s, want int", name,
                       wm_attr_type_name(a->type));
  }
  *out = a->i;
  return NULL;
}

// Reads the string attribute |name|; |def| when absent, an error when
// absent and |required|.
static wm_status_t attr_string(const wm_op_ctx_t *ctx, const char *name,
                               bool required, const char *def,
                               const char **out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  *out = def;
  if (!a) {
    return required ? WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                                  "attribute \"%s\" is required", name)
                    : NULL;
  }
  if (a->type != WM_ATTR_STRING) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"%s\" has kind %s, want string", name,
                       wm_attr_type_name(a->type));
  }
  *out = a->s;
  return NULL;
}

// Returns string element |i| of |t| ("" for an unset element).
static const char *elem_string(const wm_tensor_t *t, size_t i) {
  const char *s = ((char *const *)t->data)[i];
  return s ? s : "";
}

// ------------------------------------------------------------ UTF-8 case

// Decodes the code point at s[*pos] (well-formed UTF-8 only: no overlong
// forms, surrogates or values above U+10FFFF) and advances *pos.
static bool utf8_next(const unsigned char *s, size_t n, size_t *pos,
                      uint32_t *out) {
  size_t i = *pos;
  unsigned b0 = s[i];
  if (b0 < 0x80) {
    *out = b0;
    *pos = i + 1;
    return true;
  }
  size_t len;
  uint32_t c;
  unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    c = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    c = b0 & 0x0F;
    lo = b0 == 0xE0 ? 0xA0 : 0x80;
    hi = b0 == 0xED ? 0x9F : 0xBF;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    c = b0 & 0x07;
    lo = b0 == 0xF0 ? 0x90 : 0x80;
    hi = b0 == 0xF4 ? 0x8F : 0xBF;
  } else {
    return false;
  }
  if (n - i < len) {
    return false;
  }
  for (size_t k = 1; k < len; k++) {
    unsigned b = s[i + k];
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) {
      return false;
    }
    c = (c << 6) | (b & 0x3F);
  }
  *out = c;
  *pos = i + len;
  return true;
}

// Encodes |c| at out[*pos], advancing *pos (the caller leaves 4 bytes).
static void utf8_put(uint32_t c, char *out, size_t *pos) {
  unsigned char *o = (unsigned char *)out + *pos;
  if (c < 0x80) {
    o[0] = (unsigned char)c;
    *pos += 1;
  } else if (c < 0x800) {
    o[0] = (unsigned char)(0xC0 | (c >> 6));
    o[1] = (unsigned char)(0x80 | (c & 0x3F));
    *pos += 2;
  } else if (c < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (c >> 12));
    o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (c & 0x3F));
    *pos += 3;
  } else {
    o[0] = (unsigned char)(0xF0 | (c >> 18));
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    *pos += 4;
  }
}

// A run of upper-case code points whose lower case is |delta| above;
// with |step| 2 only every other code point from |lo| is upper case.
typedef struct case_range {
  uint32_t lo;    // first upper-case code point
  uint32_t hi;    // last one
  int32_t delta;  // lower = upper + delta
  uint32_t step;  // 1 or 2
} case_range_t;

static const case_range_t case_ranges[] = {
    {0x0041, 0x005A, 32, 1},
    {0x00C0, 0x00D6, 32, 1},
    {0x00D8, 0x00DE, 32, 1},
    {0x0100, 0x012E, 1, 2},
    {0x0132, 0x0136, 1, 2},
    {0x0139, 0x0147, 1, 2},
    {0x014A, 0x0176, 1, 2},
    {0x0179, 0x017D, 1, 2},
    {0x0386, 0x0386, 38, 1},
    {0x0388, 0x038A, 37, 1},
    {0x038C, 0x038C, 64, 1},
    {0x038E, 0x038F, 63, 1},
    {0x0391, 0x03A1, 32, 1},
    {0x03A3, 0x03AB, 32, 1},
    {0x03D8, 0x03EE, 1, 2},
    {0x0400, 0x040F, 80, 1},
    {0x0410, 0x042F, 32, 1},
    {0x0460, 0x0480, 1, 2},
    {0x048A, 0x04BE, 1, 2},
    {0x04C1, 0x04CD, 1, 2},
    {0x04D0, 0x052E, 1, 2},
    {0x0531, 0x0556, 48, 1},
    {0x10A0, 0x10C5, 0x2D00 - 0x10A0, 1},
    {0x1E00, 0x1E94, 1, 2},
    {0x1EA0, 0x1EFE, 1, 2},
    {0x2160, 0x216F, 16, 1},
    {0x24B6, 0x24CF, 26, 1},
    {0xFF21, 0xFF3A, 32, 1},
};
enum { CASE_RANGE_COUNT = sizeof(case_ranges) / sizeof(case_ranges[0]) };

// Returns the simple lower-case (or upper-case) mapping of |c|.
static uint32_t map_case(uint32_t c, bool upper) {
  if (c < 0x80) {  // the common case
    if (upper) {
      return c >= 'a' && c <= 'z' ? c - 32 : c;
    }
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
  }
  if (upper) {
    switch (c) {
      case 0x00B5:  // micro sign
        return 0x039C;
      case 0x00FF:
        return 0x0178;
      case 0x0131:  // dotless i
        return 0x0049;
      case 0x017F:  // long s
        return 0x0053;
      case 0x03C2:  // final sigma
        return 0x03A3;
      case 0x04CF:
        return 0x04C0;
      default:
        break;
    }
  } else {
    switch (c) {
      case 0x0130:  // capital I with dot above
        return 0x0069;
      case 0x0178:
        return 0x00FF;
      case 0x1E9E:  // capital sharp s
        return 0x00DF;
      case 0x04C0:
        return 0x04CF;
      default:
        break;
    }
  }
  for (int i = 0; i < CASE_RANGE_COUNT; i++) {
    const case_range_t *r = &case_ranges[i];
    int64_t u = upper ? (int64_t)c - r->delta : (int64_t)c;
    if (u >= r->lo && u <= r->hi && ((uint32_t)u - r->lo) % r->step == 0) {
      return upper ? (uint32_t)u : c + (uint32_t)r->delta;
    }
  }
  return c;
}

// Writes |s| (|n| bytes) with its case mapped into |out| (room for n + 1
// bytes) and NUL-terminates it; false when |s| is not well-formed UTF-8.
static bool utf8_map_case(const char *s, size_t n, bool upper, char *out,
                          size_t *out_len) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, o = 0;
  while (i < n) {
    size_t from = i;
    uint32_t c;
    if (!utf8_next(u, n, &i, &c)) {
      return false;
    }
    size_t before = o;
    utf8_put(map_case(c, upper), out, &o);
    // Every mapping above keeps or shortens the UTF-8 form, so the output
    // never overtakes the input.
    WM_ASSERT(o - before <= i - from);
  }
  out[o] = '\0';
  *out_len = o;
  return true;
}

// ------------------------------------------------------ StringNormalizer

enum { CASE_NONE = 0, CASE_LOWER = 1, CASE_UPPER = 2 };

// The resolved attributes of a StringNormalizer node.
typedef struct strnorm {
  int action;          // CASE_NONE, CASE_LOWER or CASE_UPPER
  bool sensitive;      // stopwords match byte for byte
  wm_strmap_t stops;   // stopwords, lower-cased unless |sensitive|
  wm_arena_t arena;    // lower-cased stopword copies
  char *scratch;       // one element's case-mapped form
  size_t scratch_cap;  // bytes at |scratch|
} strnorm_t;

static void strnorm_deinit(strnorm_t *p) {
  wm_strmap_deinit(&p->stops);
  wm_arena_deinit(&p->arena);
  free(p->scratch);
  p->scratch = NULL;
}

// Makes room for a string of |n| bytes in p->scratch.
static wm_status_t strnorm_reserve(const wm_op_ctx_t *ctx, strnorm_t *p,
                                   size_t n) {
  if (n < p->scratch_cap) {
    return NULL;
  }
  size_t cap;
  if (!wm_checked_add(n, 1, &cap)) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "string of %zu bytes", n);
  }
  char *b = wm_malloc(cap);
  if (!b) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  free(p->scratch);
  p->scratch = b;
  p->scratch_cap = cap;
  return NULL;
}

// Returns true when the |n| bytes at |a| equal |b| ignoring ASCII case.
static bool ascii_case_equal(const char *a, size_t n, const char *b) {
  if (strlen(b) != n) {
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) {
      return false;
    }
  }
  return true;
}

// Checks the locale of a node that changes case (|casing|; otherwise the
// locale plays no part). Accepted: "" (the default), C, POSIX and
// lang[_territory][.codeset][@modifier] with a UTF-8 codeset, all cased
// with the Unicode default mapping above. Refused with UNIMPLEMENTED:
// Turkic and Lithuanian languages (tr, az, lt), whose dotted and dotless
// i differ from the default; other codesets; names of other forms.
static wm_status_t check_locale(const wm_op_ctx_t *ctx, const char *loc,
                                bool casing) {
  if (!casing || !*loc || strcmp(loc, "C") == 0 || strcmp(loc, "POSIX") == 0 ||
      strcmp(loc, "C.UTF-8") == 0 || strcmp(loc, "C.utf8") == 0) {
    return NULL;
  }
  size_t i = 0, n = strlen(loc);
  while (i < n && isalpha((unsigned char)loc[i])) {
    i++;
  }
  size_t lang = i;
  bool ok = lang == 2 || lang == 3;
  if (ok && i < n && (loc[i] == '_' || loc[i] == '-')) {
    size_t t = ++i;
    while (i < n && isalnum((unsigned char)loc[i])) {
      i++;
    }
    ok = i - t >= 2 && i - t <= 4;
  }
  const char *codeset = NULL;
  size_t codeset_len = 0;
  if (ok && i < n && loc[i] == '.') {
    codeset = loc + ++i;
    while (i < n && loc[i] != '@') {
      i++;
    }
    codeset_len = (size_t)(loc + i - codeset);
    ok = ascii_case_equal(codeset, codeset_len, "UTF-8") ||
         ascii_case_equal(codeset, codeset_len, "utf8");
  }
  if (ok && i < n && loc[i] == '@') {
    i = n;  // a modifier (e.g. @euro) does not change the casing
  }
  if (!ok || i != n) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "locale \"%s\" is not supported for case changes "
                       "(supported: C, POSIX, lang[_territory][.UTF-8])",
                       loc);
  }
  static const char *const special[] = {"tr", "az", "lt"};
  for (int k = 0; k < 3; k++) {
    if (ascii_case_equal(loc, lang, special[k])) {
      return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                         "locale \"%s\" has language-specific casing "
                         "(dotted and dotless i), which is not supported",
                         loc);
    }
  }
  return NULL;
}

// Reads and checks the attributes and builds the stopword set.
static wm_status_t strnorm_init(const wm_op_ctx_t *ctx, strnorm_t *p) {
  memset(p, 0, sizeof(*p));
  wm_strmap_init(&p->stops);
  wm_arena_init(&p->arena);
  const char *action, *loc;
  int64_t sensitive;
  const wm_attr_t *stops;
  WM_RETURN_IF_ERROR(
      attr_string(ctx, "case_change_action", false, "NONE", &action));
  WM_RETURN_IF_ERROR(attr_int(ctx, "is_case_sensitive", false, 0, &sensitive));
  WM_RETURN_IF_ERROR(attr_string(ctx, "locale", false, "", &loc));
  WM_RETURN_IF_ERROR(
      wm_op_attr_find(ctx, "stopwords", WM_ATTR_STRINGS, false, &stops));
  if (strcmp(action, "NONE") == 0) {
    p->action = CASE_NONE;
  } else if (strcmp(action, "LOWER") == 0) {
    p->action = CASE_LOWER;
  } else if (strcmp(action, "UPPER") == 0) {
    p->action = CASE_UPPER;
  } else {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"case_change_action\" is \"%s\", want "
                       "LOWER, UPPER or NONE",
                       action);
  }
  p->sensitive = sensitive != 0;
  size_t n_stops = stops ? stops->count : 0;
  bool casing = p->action != CASE_NONE || (!p->sensitive && n_stops > 0);
  WM_RETURN_IF_ERROR(check_locale(ctx, loc, casing));
  for (size_t i = 0; i < n_stops; i++) {
    const char *w = stops->strings[i];
    size_t len = stops->string_lens[i];
    if (strlen(w) != len) {
      continue;  // holds a NUL byte: no tensor string can equal it
    }
    if (!p->sensitive) {
      char *f = wm_arena_alloc(&p->arena, len + 1);
      if (!f) {
        return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
      }
      size_t flen;
      if (!utf8_map_case(w, len, false, f, &flen)) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "stopword %zu is not valid UTF-8", i);
      }
      w = f;
    }
    wm_status_t s = wm_strmap_put(&p->stops, w, 1);
    if (s) {
      return wm_status_annotate(s, "node \"%s\" (%s)", ctx->label,
                                ctx->node->op_type);
    }
  }
  return NULL;
}

// Sets *out to whether element |i| of |x| is a stopword.
static wm_status_t strnorm_is_stop(const wm_op_ctx_t *ctx, strnorm_t *p,
                                   const wm_tensor_t *x, size_t i, bool *out) {
  *out = false;
  if (p->stops.count == 0) {
    return NULL;
  }
  const char *s = elem_string(x, i);
  if (p->sensitive) {
    *out = wm_strmap_get(&p->stops, s, NULL);
    return NULL;
  }
  size_t n = strlen(s), flen;
  WM_RETURN_IF_ERROR(strnorm_reserve(ctx, p, n));
  if (!utf8_map_case(s, n, false, p->scratch, &flen)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "element %zu of input 0 is not valid UTF-8", i);
  }
  *out = wm_strmap_get(&p->stops, p->scratch, NULL);
  return NULL;
}

// Checks the input shape: [C] or [1, C].
static wm_status_t strnorm_check_shape(const wm_op_ctx_t *ctx) {
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  if (x->rank < 0) {
    return NULL;
  }
  if (x->rank == 1 || (x->rank == 2 && x->dims[0] < 0)) {
    return NULL;
  }
  if (x->rank == 2 && x->dims[0] == 1) {
    return NULL;
  }
  char buf[64];
  return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                     "input 0 has shape %s, want [C] or [1,C]",
                     wm_shape_format(x, buf, sizeof(buf)));
}

// Counts the elements of the known input that are not stopwords.
static wm_status_t strnorm_count(const wm_op_ctx_t *ctx, strnorm_t *p,
                                 size_t *out) {
  const wm_tensor_t *x = ctx->in[0];
  size_t kept = 0;
  for (size_t i = 0; i < x->count; i++) {
    bool stop;
    WM_RETURN_IF_ERROR(strnorm_is_stop(ctx, p, x, i, &stop));
    kept += !stop;
  }
  *out = kept;
  return NULL;
}

// Output shape: the input's rank with C replaced by the kept count (1
// when nothing is kept: the output is then one empty string); -1 when
// unknown.
static wm_status_t strnorm_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(strnorm_check_shape(ctx));
  strnorm_t p;
  wm_status_t s = strnorm_init(ctx, &p);
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  wm_shape_t y = *x;
  if (!s && x->rank > 0) {
    int64_t c = -1;
    if (ctx->in[0]) {
      size_t kept = 0;
      s = strnorm_count(ctx, &p, &kept);
      c = (int64_t)kept;
    } else if (p.stops.count == 0) {
      c = x->dims[x->rank - 1];
    }
    y.dims[x->rank - 1] = c == 0 ? 1 : c;
    if (x->rank == 2) {
      y.dims[0] = 1;
    }
  }
  strnorm_deinit(&p);
  WM_RETURN_IF_ERROR(s);
  wm_op_set_out(ctx, 0, WM_DTYPE_STRING, &y);
  return NULL;
}

static wm_status_t strnorm_fill(const wm_op_ctx_t *ctx, strnorm_t *p,
                                wm_tensor_t *y) {
  const wm_tensor_t *x = ctx->in[0];
  size_t o = 0;
  for (size_t i = 0; i < x->count; i++) {
    bool stop;
    WM_RETURN_IF_ERROR(strnorm_is_stop(ctx, p, x, i, &stop));
    if (stop) {
      continue;
    }
    if (o >= y->count) {
      return WM_OP_ERROR(ctx, INTERNAL, "output has %zu elements, want more",
                         y->count);
    }
    const char *s = elem_string(x, i);
    size_t n = strlen(s);
    if (p->action != CASE_NONE) {
      WM_RETURN_IF_ERROR(strnorm_reserve(ctx, p, n));
      if (!utf8_map_case(s, n, p->action == CASE_UPPER, p->scratch, &n)) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "element %zu of input 0 is not valid UTF-8", i);
      }
      s = p->scratch;
    }
    WM_RETURN_IF_ERROR(wm_tensor_set_string(y, o++, s, n));
  }
  // Nothing kept: the output is the one empty string its shape holds.
  return NULL;
}

static wm_status_t strnorm_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  strnorm_t p;
  wm_status_t s = strnorm_init(ctx, &p);
  if (!s) {
    s = strnorm_fill(ctx, &p, y);
  }
  strnorm_deinit(&p);
  return s;
}

// ------------------------------------------------------- TfIdfVectorizer

enum { TFIDF_TF = 0, TFIDF_IDF = 1, TFIDF_TFIDF = 2 };

// The checked attributes of a TfIdfVectorizer node.
typedef struct tfidf_attrs {
  int mode;                // TFIDF_TF, TFIDF_IDF or TFIDF_TFIDF
  int64_t min_n;           // min_gram_length
  int64_t max_n;           // max_gram_length
  int64_t max_skip;        // max_skip_count
  const int64_t *counts;   // ngram_counts: start of each size in the pool
  size_t n_counts;         // entries of |counts|
  const int64_t *indexes;  // ngram_indexes: output column per n-gram
  size_t n_indexes;        // entries of |indexes|
  const float *weights;    // weights per output column, or NULL
  size_t n_weights;        // entries of |weights|
  const wm_attr_t *pool;   // pool_int64s or pool_strings
  bool strings;            // the pool holds strings
  size_t pool_size;        // items in the pool
  int64_t out_size;        // max(ngram_indexes) + 1
} tfidf_attrs_t;

// The first pool item and the item count of the n-grams of size i + 1.
static void tfidf_sizes(const tfidf_attrs_t *a, size_t i, size_t *out_start,
                        size_t *out_items) {
  size_t start = (size_t)a->counts[i];
  size_t end = i + 1 < a->n_counts ? (size_t)a->counts[i + 1] : a->pool_size;
  *out_start = start;
  *out_items = end - start;
}

// Reads and checks every attribute.
static wm_status_t tfidf_attrs(const wm_op_ctx_t *ctx, tfidf_attrs_t *a) {
  memset(a, 0, sizeof(*a));
  const char *mode;
  WM_RETURN_IF_ERROR(attr_string(ctx, "mode", true, "", &mode));
  if (strcmp(mode, "TF") == 0) {
    a->mode = TFIDF_TF;
  } else if (strcmp(mode, "IDF") == 0) {
    a->mode = TFIDF_IDF;
  } else if (strcmp(mode, "TFIDF") == 0) {
    a->mode = TFIDF_TFIDF;
  } else {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"mode\" is \"%s\", want TF, IDF or TFIDF",
                       mode);
  }
  WM_RETURN_IF_ERROR(attr_int(ctx, "min_gram_length", true, 0, &a->min_n));
  WM_RETURN_IF_ERROR(attr_int(ctx, "max_gram_length", true, 0, &a->max_n));
  WM_RETURN_IF_ERROR(attr_int(ctx, "max_skip_count", true, 0, &a->max_skip));
  if (a->min_n < 1 || a->max_n < a->min_n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "min_gram_length %lld and max_gram_length %lld, want "
                       "1 <= min <= max",
                       (long long)a->min_n, (long long)a->max_n);
  }
  if (a->max_skip < 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"max_skip_count\" is %lld, want >= 0",
                       (long long)a->max_skip);
  }
  const wm_attr_t *ints, *strs, *counts, *indexes, *weights;
  WM_RETURN_IF_ERROR(
      wm_op_attr_find(ctx, "pool_int64s", WM_ATTR_INTS, false, &ints));
  WM_RETURN_IF_ERROR(
      wm_op_attr_find(ctx, "pool_strings", WM_ATTR_STRINGS, false, &strs));
  WM_RETURN_IF_ERROR(
      wm_op_attr_find(ctx, "ngram_counts", WM_ATTR_INTS, true, &counts));
  WM_RETURN_IF_ERROR(
      wm_op_attr_find(ctx, "ngram_indexes", WM_ATTR_INTS, true, &indexes));
  WM_RETURN_IF_ERROR(
      wm_op_attr_find(ctx, "weights", WM_ATTR_FLOATS, false, &weights));
  if ((ints != NULL) == (strs != NULL)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "has %s of pool_int64s and pool_strings, want "
                       "exactly one",
                       ints ? "both" : "neither");
  }
  a->pool = ints ? ints : strs;
  a->strings = strs != NULL;
  a->pool_size = a->pool->count;
  a->counts = counts->ints;
  a->n_counts = counts->count;
  a->indexes = indexes->ints;
  a->n_indexes = indexes->count;
  if (weights) {
    a->weights = weights->floats;
    a->n_weights = weights->count;
  }
  if (a->n_indexes == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"ngram_indexes\" is empty");
  }
  int64_t max_index = 0;
  for (size_t i = 0; i < a->n_indexes; i++) {
    int64_t v = a->indexes[i];
    if (v < 0 || v == INT64_MAX) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "ngram_indexes[%zu] is %lld, want >= 0", i,
                         (long long)v);
    }
    max_index = v > max_index ? v : max_index;
  }
  a->out_size = max_index + 1;
  int64_t prev = 0;
  for (size_t i = 0; i < a->n_counts; i++) {
    int64_t v = a->counts[i];
    if (v < prev || v > (int64_t)a->pool_size) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "ngram_counts[%zu] is %lld, want non-decreasing "
                         "starts within the pool of %zu items",
                         i, (long long)v, a->pool_size);
    }
    prev = v;
  }
  // Every n-gram needs an output column; columns of countable n-grams
  // need a weight when the mode uses weights.
  size_t id = 0;
  for (size_t i = 0; i < a->n_counts; i++) {
    size_t n = i + 1, start, items;
    tfidf_sizes(a, i, &start, &items);
    if (items % n != 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "the pool has %zu items for %zu-grams, not a "
                         "multiple of %zu",
                         items, n, n);
    }
    size_t k = items / n;
    if (k > a->n_indexes - id) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute \"ngram_indexes\" has %zu entries, the "
                         "pool has more n-grams",
                         a->n_indexes);
    }
    bool counted = (int64_t)n >= a->min_n && (int64_t)n <= a->max_n;
    if (counted && a->weights && a->mode != TFIDF_TF) {
      for (size_t j = id; j < id + k; j++) {
        if ((uint64_t)a->indexes[j] >= a->n_weights) {
          return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                             "n-gram %zu has output column %lld, but "
                             "\"weights\" has %zu entries",
                             j, (long long)a->indexes[j], a->n_weights);
        }
      }
    }
    id += k;
  }
  return NULL;
}

// Checks the input type and shape and computes the output shape (-1 for
// dims not known yet).
static wm_status_t tfidf_shape(const wm_op_ctx_t *ctx, const tfidf_attrs_t *a,
                               wm_shape_t *out) {
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (dt != WM_DTYPE_UNDEFINED && (dt == WM_DTYPE_STRING) != a->strings) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 is %s but the pool holds %s", wm_dtype_name(dt),
                       a->strings ? "strings" : "integers");
  }
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  out->rank = x->rank;
  if (x->rank < 0) {
    return NULL;
  }
  if (x->rank != 1 && x->rank != 2) {
    char buf[64];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has shape %s, want [C] or [N,C]",
                       wm_shape_format(x, buf, sizeof(buf)));
  }
  out->dims[0] = x->rank == 2 ? x->dims[0] : a->out_size;
  out->dims[x->rank - 1] = a->out_size;
  return NULL;
}

static wm_status_t tfidf_infer(wm_op_ctx_t *ctx) {
  tfidf_attrs_t a;
  WM_RETURN_IF_ERROR(tfidf_attrs(ctx, &a));
  wm_shape_t y;
  WM_RETURN_IF_ERROR(tfidf_shape(ctx, &a, &y));
  wm_op_set_out(ctx, 0, WM_DTYPE_FLOAT, &y);
  return NULL;
}

// The pool as a trie: node 0 is the root; an edge (parent, token) is a
// slot of an open-addressing table.
typedef struct tfidf_trie {
  size_t *node_id;      // per node: n-gram number + 1, 0 = no n-gram ends
  size_t n_nodes;       // nodes in use
  size_t cap;           // table slots (power of two)
  size_t *edge_child;   // per slot: child node, 0 = empty slot
  size_t *edge_parent;  // per slot: parent node
  int64_t *edge_token;  // per slot: token
  wm_strmap_t tokens;   // pool string -> token (string pools)
} tfidf_trie_t;

static void tfidf_trie_deinit(tfidf_trie_t *t) {
  free(t->node_id);
  free(t->edge_child);
  free(t->edge_parent);
  free(t->edge_token);
  wm_strmap_deinit(&t->tokens);
}

static size_t edge_hash(size_t parent, int64_t token) {
  uint64_t h = (uint64_t)token ^ ((uint64_t)parent * 0x9E3779B97F4A7C15u);
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9u;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBu;
  h ^= h >> 31;
  return (size_t)h;
}

// Returns the slot of edge (parent, token): the edge's or the empty one
// where it would go.
static size_t edge_slot(const tfidf_trie_t *t, size_t parent, int64_t token) {
  size_t mask = t->cap - 1;
  size_t i = edge_hash(parent, token) & mask;
  while (t->edge_child[i] &&
         (t->edge_parent[i] != parent || t->edge_token[i] != token)) {
    i = (i + 1) & mask;
  }
  return i;
}

// Returns the child of |parent| along |token|, 0 when none.
static size_t trie_child(const tfidf_trie_t *t, size_t parent, int64_t token) {
  return t->edge_child[edge_slot(t, parent, token)];
}

// Token of pool item |i|: the value for integers; for strings the index
// of the string's first occurrence (negative for strings holding a NUL
// byte, which no tensor string can equal).
static wm_status_t pool_token(const wm_op_ctx_t *ctx, const tfidf_attrs_t *a,
                              tfidf_trie_t *t, size_t i, int64_t *out) {
  if (!a->strings) {
    *out = a->pool->ints[i];
    return NULL;
  }
  const char *s = a->pool->strings[i];
  if (strlen(s) != a->pool->string_lens[i]) {
    *out = -2 - (int64_t)i;
    return NULL;
  }
  if (wm_strmap_get(&t->tokens, s, out)) {
    return NULL;
  }
  *out = (int64_t)i;
  wm_status_t st = wm_strmap_put(&t->tokens, s, (int64_t)i);
  return st ? wm_status_annotate(st, "node \"%s\" (%s)", ctx->label,
                                 ctx->node->op_type)
            : NULL;
}

// Builds the trie of the n-grams whose size is counted.
static wm_status_t tfidf_trie_build(const wm_op_ctx_t *ctx,
                                    const tfidf_attrs_t *a, tfidf_trie_t *t) {
  memset(t, 0, sizeof(*t));
  wm_strmap_init(&t->tokens);
  size_t nodes = a->pool_size + 1, cap = 16;
  while (cap < nodes * 2) {
    cap *= 2;  // pool_size is an attribute's length: no overflow
  }
  t->cap = cap;
  t->node_id = wm_calloc(nodes, sizeof(size_t));
  t->edge_child = wm_calloc(cap, sizeof(size_t));
  t->edge_parent = wm_calloc(cap, sizeof(size_t));
  t->edge_token = wm_calloc(cap, sizeof(int64_t));
  if (!t->node_id || !t->edge_child || !t->edge_parent || !t->edge_token) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  t->n_nodes = 1;
  size_t id = 0;
  for (size_t i = 0; i < a->n_counts; i++) {
    size_t n = i + 1, start, items;
    tfidf_sizes(a, i, &start, &items);
    size_t k = items / n;
    if ((int64_t)n < a->min_n || (int64_t)n > a->max_n) {
      id += k;
      continue;
    }
    for (size_t j = 0; j < k; j++, id++) {
      size_t node = 0;
      for (size_t m = 0; m < n; m++) {
        int64_t tok;
        WM_RETURN_IF_ERROR(pool_token(ctx, a, t, start + j * n + m, &tok));
        size_t slot = edge_slot(t, node, tok);
        if (!t->edge_child[slot]) {
          t->edge_child[slot] = t->n_nodes++;
          t->edge_parent[slot] = node;
          t->edge_token[slot] = tok;
        }
        node = t->edge_child[slot];
      }
      t->node_id[node] = id + 1;  // a repeated n-gram keeps the last id
    }
  }
  return NULL;
}

// Maps every input element to its pool token (-1 for strings not in the
// pool).
static wm_status_t tfidf_tokens(const wm_op_ctx_t *ctx, const tfidf_trie_t *t,
                                int64_t **out) {
  const wm_tensor_t *x = ctx->in[0];
  *out = wm_calloc(x->count ? x->count : 1, sizeof(int64_t));
  if (!*out) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < x->count; i++) {
    if (x->dtype == WM_DTYPE_STRING) {
      int64_t v;
      (*out)[i] = wm_strmap_get(&t->tokens, elem_string(x, i), &v) ? v : -1;
    } else {
      (*out)[i] = wm_tensor_get_i64(x, i);
    }
  }
  return NULL;
}

// Counts the pool n-grams of one row of |c| tokens into |freq|.
static void tfidf_count_row(const tfidf_attrs_t *a, const tfidf_trie_t *t,
                            const int64_t *tok, size_t c, uint64_t *freq) {
  // Skip distances at or beyond c cannot gather an n-gram of size >= 2.
  size_t max_dist =
      (uint64_t)a->max_skip >= c ? (c ? c : 1) : (size_t)a->max_skip + 1;
  size_t start_n = (size_t)a->min_n;
  for (size_t dist = 1; dist <= max_dist; dist++) {
    for (size_t s = 0; s < c; s++) {
      // Stop when an n-gram of start_n items from s would leave the row.
      if (start_n - 1 > (c - 1 - s) / dist) {
        break;
      }
      size_t node = 0, item = s;
      for (size_t n = 1; n <= (size_t)a->max_n && item < c; n++) {
        node = trie_child(t, node, tok[item]);
        if (!node) {
          break;
        }
        size_t id = t->node_id[node];
        if (n >= start_n && id) {
          freq[a->indexes[id - 1]]++;
        }
        item += dist;
      }
    }
    // Unigrams do not depend on the skip distance: count them once.
    if (start_n == 1) {
      start_n = 2;
      if ((int64_t)start_n > a->max_n) {
        break;
      }
    }
  }
}

// Writes one row of the output from the n-gram frequencies.
static void tfidf_write_row(const tfidf_attrs_t *a, const uint64_t *freq,
                            float *y) {
  for (size_t col = 0; col < (size_t)a->out_size; col++) {
    double f = (double)freq[col];
    double w = a->weights && col < a->n_weights ? a->weights[col] : 1.0;
    double v;
    if (a->mode == TFIDF_TF) {
      v = f;
    } else if (a->mode == TFIDF_IDF) {
      v = freq[col] ? w : 0.0;
    } else {
      v = w * f;
    }
    y[col] = (float)v;
  }
}

static wm_status_t tfidf_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  tfidf_attrs_t a;
  WM_RETURN_IF_ERROR(tfidf_attrs(ctx, &a));
  const wm_tensor_t *x = ctx->in[0];
  size_t rows = x->shape.rank == 2 ? (size_t)x->shape.dims[0] : 1;
  size_t c = (size_t)x->shape.dims[x->shape.rank - 1];
  size_t want;
  if (!wm_checked_mul(rows, (size_t)a.out_size, &want) || want != y->count) {
    return WM_OP_ERROR(ctx, INTERNAL, "output has %zu elements, want %zu",
                       y->count, want);
  }
  tfidf_trie_t t;
  int64_t *tok = NULL;
  uint64_t *freq = NULL;
  wm_status_t s = tfidf_trie_build(ctx, &a, &t);
  if (!s) {
    s = tfidf_tokens(ctx, &t, &tok);
  }
  if (!s) {
    freq = wm_calloc((size_t)a.out_size, sizeof(uint64_t));
    if (!freq) {
      s = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  for (size_t r = 0; !s && r < rows; r++) {
    memset(freq, 0, (size_t)a.out_size * sizeof(uint64_t));
    tfidf_count_row(&a, &t, tok + r * c, c, freq);
    tfidf_write_row(&a, freq, (float *)y->data + r * (size_t)a.out_size);
  }
  free(freq);
  free(tok);
  tfidf_trie_deinit(&t);
  return s;
}

// Trie lookups: every start position walks up to max_gram_length items
// for each skip distance.
static void tfidf_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  size_t n;
  if (!wm_shape_numel(wm_op_in_shape(ctx, 0), &n)) {
    return;
  }
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  double c = x->rank > 0 ? (double)x->dims[x->rank - 1] : 1.0;
  double skip = (double)wm_node_attr_int(ctx->node, "max_skip_count", 0) + 1;
  double grams = (double)wm_node_attr_int(ctx->node, "max_gram_length", 1);
  skip = skip < c ? skip : c;
  out->flops = (double)n * (skip > 1 ? skip : 1) * (grams > 1 ? grams : 1) +
               (double)wm_op_out_numel(ctx);
}

// ------------------------------------------------------------ StringConcat

static wm_status_t check_string_input(const wm_op_ctx_t *ctx, int32_t i) {
  wm_dtype_t d = wm_op_in_dtype(ctx, i);
  if (d != WM_DTYPE_UNDEFINED && d != WM_DTYPE_STRING) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has dtype %s, want string", i,
                       wm_dtype_name(d));
  }
  return NULL;
}

static wm_status_t concat_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_string_input(ctx, 0));
  WM_RETURN_IF_ERROR(check_string_input(ctx, 1));
  return wm_op_infer_broadcast(ctx, WM_DTYPE_STRING);
}

static wm_status_t concat_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  const wm_tensor_t *a = ctx->in[0], *b = ctx->in[1];
  int64_t sa[WM_MAX_RANK], sb[WM_MAX_RANK];
  wm_broadcast_strides(&a->shape, &y->shape, sa);
  wm_broadcast_strides(&b->shape, &y->shape, sb);
  wm_strbuf_t buf;
  wm_strbuf_init(&buf);
  wm_status_t st = NULL;
  for (size_t i = 0; i < y->count && !st; i++) {
    const char *u = elem_string(a, wm_broadcast_offset(&y->shape, sa, i));
    const char *v = elem_string(b, wm_broadcast_offset(&y->shape, sb, i));
    buf.len = 0;
    wm_strbuf_append(&buf, u, strlen(u));
    wm_strbuf_append(&buf, v, strlen(v));
    if (buf.failed) {
      st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory joining element %zu", i);
      break;
    }
    st = wm_tensor_set_string(y, i, wm_strbuf_str(&buf), buf.len);
  }
  wm_strbuf_deinit(&buf);
  return st;
}

static void concat_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  (void)ctx;
  memset(out, 0, sizeof(*out));  // data movement only
}

// ------------------------------------------------------------- StringSplit

// Python's str.split whitespace for ASCII text.
static bool is_split_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F);
}

// Splits |s| like Python's str.split(sep or None, maxsplit): calls |emit|
// for each piece unless it is NULL and returns the number of pieces.
// |maxsplit| < 0 means no limit.
typedef struct split_sink {
  wm_tensor_t *t;  // destination, or NULL to count only
  size_t base;     // first element of this row
  wm_status_t st;  // first failure
} split_sink_t;

static void split_put(split_sink_t *k, size_t idx, const char *s, size_t n) {
  if (k->t && !k->st) {
    k->st = wm_tensor_set_string(k->t, k->base + idx, s, n);
  }
}

static size_t split_one(const char *s, const char *sep, int64_t maxsplit,
                        split_sink_t *k) {
  size_t n = strlen(s), count = 0, seplen = sep ? strlen(sep) : 0;
  if (seplen > 0) {
    size_t start = 0;
    for (size_t i = 0; i + seplen <= n;) {
      if ((maxsplit < 0 || (int64_t)count < maxsplit) &&
          memcmp(s + i, sep, seplen) == 0) {
        split_put(k, count++, s + start, i - start);
        i += seplen;
        start = i;
      } else {
        i++;
      }
    }
    split_put(k, count++, s + start, n - start);
    return count;
  }
  size_t i = 0;
  while (i < n) {
    while (i < n && is_split_space((unsigned char)s[i])) {
      i++;
    }
    if (i == n) {
      break;
    }
    if (maxsplit >= 0 && (int64_t)count >= maxsplit) {
      // The remainder keeps its trailing whitespace, as in Python.
      split_put(k, count++, s + i, n - i);
      break;
    }
    size_t start = i;
    while (i < n && !is_split_space((unsigned char)s[i])) {
      i++;
    }
    split_put(k, count++, s + start, i - start);
  }
  return count;
}

static wm_status_t split_attrs(const wm_op_ctx_t *ctx, const char **out_sep,
                               int64_t *out_maxsplit) {
  WM_RETURN_IF_ERROR(attr_string(ctx, "delimiter", false, NULL, out_sep));
  const wm_attr_t *a = wm_node_attr(ctx->node, "delimiter");
  if (a && a->type == WM_ATTR_STRING && a->s_len != strlen(a->s)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"delimiter\" holds a NUL byte");
  }
  WM_RETURN_IF_ERROR(attr_int(ctx, "maxsplit", false, -1, out_maxsplit));
  return check_string_input(ctx, 0);
}

// Outputs: substrings X.shape + [most pieces] and length X.shape (int64).
static wm_status_t split_infer(wm_op_ctx_t *ctx) {
  const char *sep;
  int64_t maxsplit;
  WM_RETURN_IF_ERROR(split_attrs(ctx, &sep, &maxsplit));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, WM_DTYPE_STRING);
    wm_op_set_out_unknown(ctx, 1, WM_DTYPE_INT64);
    return NULL;
  }
  if (xs->rank >= WM_MAX_RANK) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has rank %d, want at most %d", xs->rank,
                       WM_MAX_RANK - 1);
  }
  wm_shape_t ys = *xs;
  ys.rank = xs->rank + 1;
  ys.dims[xs->rank] = -1;
  const wm_tensor_t *x = ctx->in[0];
  if (x) {
    size_t most = 0;
    split_sink_t k = {NULL, 0, NULL};
    for (size_t i = 0; i < x->count; i++) {
      size_t c = split_one(elem_string(x, i), sep, maxsplit, &k);
      most = c > most ? c : most;
    }
    ys.dims[xs->rank] = (int64_t)most;
    size_t total;
    if (!wm_checked_mul(x->count, most, &total)) {
      return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                         "%zu strings of up to %zu pieces overflow", x->count,
                         most);
    }
  }
  wm_op_set_out(ctx, 0, WM_DTYPE_STRING, &ys);
  wm_op_set_out(ctx, 1, WM_DTYPE_INT64, xs);
  return NULL;
}

static wm_status_t split_run(wm_op_ctx_t *ctx) {
  const char *sep;
  int64_t maxsplit;
  WM_RETURN_IF_ERROR(split_attrs(ctx, &sep, &maxsplit));
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = wm_op_has_output(ctx, 0) ? ctx->out[0] : NULL;
  wm_tensor_t *len = wm_op_has_output(ctx, 1) ? ctx->out[1] : NULL;
  size_t most = 0;
  if (y) {
    int32_t r = y->shape.rank;
    most = r > 0 ? (size_t)y->shape.dims[r - 1] : 0;
  }
  for (size_t i = 0; i < x->count; i++) {
    split_sink_t k = {y, i * most, NULL};
    size_t c = split_one(elem_string(x, i), sep, maxsplit, &k);
    WM_RETURN_IF_ERROR(k.st);
    if (y && c > most) {
      return WM_OP_ERROR(ctx, INTERNAL, "element %zu has %zu pieces, want %zu",
                         i, c, most);
    }
    if (len) {
      wm_tensor_set_i64(len, i, (int64_t)c);
    }
  }
  return NULL;
}

// ---------------------------------------------------------- RegexFullMatch

// RE2 patterns are translated to POSIX extended syntax: escapes \w \d \s
// and their negations become bracket expressions, (?: becomes (, lazy
// quantifiers become greedy (the same strings match in full), and . stops
// at a newline as in RE2. Word boundaries \b \B need glibc's extension.
// Syntax without a translation (flags, named groups, back-references,
// Unicode classes) is refused. A translated pattern matches bytes, so
// ., negated classes and \W \D \S are refused on non-ASCII input, where a
// byte is not a character.
typedef struct regex_tr {
  wm_strbuf_t out;   // the POSIX pattern
  bool byte_wise;    // some part matches single bytes
  const char *what;  // refused construct, or NULL
  size_t at;         // its byte offset
} regex_tr_t;

static void re_literal(wm_strbuf_t *b, unsigned char c) {
  if (strchr(".[\\()*+?{|^$", c) && c != '\0') {
    wm_strbuf_append(b, "\\", 1);
  }
  wm_strbuf_append(b, (const char *)&c, 1);
}

// The class of escape letter |c| outside brackets, or NULL.
static const char *re_class(char c) {
  switch (c) {
    case 'w':
      return "[[:alnum:]_]";
    case 'W':
      return "[^[:alnum:]_]";
    case 'd':
      return "[[:digit:]]";
    case 'D':
      return "[^[:digit:]]";
    case 's':
      return "[\t\n\f\r ]";
    case 'S':
      return "[^\t\n\f\r ]";
    default:
      return NULL;
  }
}

// The literal byte of a single-character escape, or -1.
static int re_escape_char(const char *p, size_t n, size_t *i) {
  unsigned char c = (unsigned char)p[*i];
  switch (c) {
    case 'n':
      return '\n';
    case 't':
      return '\t';
    case 'r':
      return '\r';
    case 'f':
      return '\f';
    case 'v':
      return '\v';
    case 'a':
      return '\a';
    case 'x': {
      if (*i + 2 >= n) {
        return -1;
      }
      int v = 0;
      for (size_t k = 1; k <= 2; k++) {
        char h = p[*i + k];
        int d = h >= '0' && h <= '9'   ? h - '0'
                : h >= 'a' && h <= 'f' ? h - 'a' + 10
                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                       : -1;
        if (d < 0) {
          return -1;
        }
        v = v * 16 + d;
      }
      if (v == 0 || v >= 0x80) {
        return -1;
      }
      *i += 2;
      return v;
    }
    default:
      break;
  }
  if (c != '\0' && c < 0x80 &&
      !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
        (c >= 'A' && c <= 'Z'))) {
    return c;  // escaped punctuation is itself
  }
  return -1;
}

static void re_refuse(regex_tr_t *t, const char *what, size_t at) {
  if (!t->what) {
    t->what = what;
    t->at = at;
  }
}

// Translates the bracket expression starting at p[*i] == '['.
static void re_bracket(regex_tr_t *t, const char *p, size_t n, size_t *i) {
  size_t start = *i, k = *i + 1;
  bool neg = false, rb = false, lb = false, caret = false, dash = false;
  wm_strbuf_t body;
  wm_strbuf_init(&body);
  if (k < n && p[k] == '^') {
    neg = true;
    k++;
  }
  bool first = true;
  for (;;) {
    if (k >= n) {
      re_refuse(t, "an unterminated [", start);
      break;
    }
    unsigned char c = (unsigned char)p[k];
    if (c == ']' && !first) {
      k++;
      break;
    }
    first = false;
    if (c == '[' && k + 1 < n && p[k + 1] == ':') {
      const char *end = strstr(p + k + 2, ":]");
      if (!end) {
        re_refuse(t, "an unterminated [:", k);
        break;
      }
      wm_strbuf_append(&body, p + k, (size_t)(end - (p + k)) + 2);
      k = (size_t)(end - p) + 2;
      continue;
    }
    int lo;
    if (c == '\\') {
      if (k + 1 >= n) {
        re_refuse(t, "a trailing \\", k);
        break;
      }
      char e = p[k + 1];
      if (e == 'w' || e == 'd' || e == 's') {
        const char *cls = e == 'w'   ? "[:alnum:]_"
                          : e == 'd' ? "[:digit:]"
                                     : "\t\n\f\r ";
        wm_strbuf_append(&body, cls, strlen(cls));
        k += 2;
        continue;
      }
      size_t j = k + 1;
      lo = re_escape_char(p, n, &j);
      if (lo < 0) {
        re_refuse(t, "an escape inside [] without a POSIX form", k);
        break;
      }
      k = j + 1;
    } else {
      if (c >= 0x80) {
        re_refuse(t, "a non-ASCII character inside []", k);
        break;
      }
      lo = c;
      k++;
    }
    if (k + 1 < n && p[k] == '-' && p[k + 1] != ']') {
      int hi;
      unsigned char h = (unsigned char)p[k + 1];
      if (h == '\\') {
        size_t j = k + 2;
        hi = j < n ? re_escape_char(p, n, &j) : -1;
        k = j + 1;
      } else {
        hi = h < 0x80 ? h : -1;
        k += 2;
      }
      if (hi < 0 || strchr("]-^[", lo) || strchr("]-^[", hi) || hi < lo) {
        re_refuse(t, "a range inside [] without a POSIX form", k);
        break;
      }
      unsigned char r[3] = {(unsigned char)lo, '-', (unsigned char)hi};
      wm_strbuf_append(&body, (const char *)r, 3);
      continue;
    }
    if (lo == ']') {
      rb = true;
    } else if (lo == '[') {
      lb = true;
    } else if (lo == '^') {
      caret = true;
    } else if (lo == '-') {
      dash = true;
    } else {
      unsigned char b = (unsigned char)lo;
      wm_strbuf_append(&body, (const char *)&b, 1);
    }
  }
  *i = k;
  if (!t->what) {
    if (neg) {
      t->byte_wise = true;
    }
    if (!neg && !rb && body.len == 0 && !lb && caret && !dash) {
      wm_strbuf_append(&t->out, "\\^", 2);
    } else {
      bool caret_first = !rb && body.len == 0 && !lb && caret;
      wm_strbuf_append(&t->out, neg ? "[^" : "[", neg ? 2 : 1);
      if (caret_first) {
        wm_strbuf_append(&t->out, "-^", 2);  // '-' first is literal
        dash = false;
        caret = false;
      }
      if (rb) {
        wm_strbuf_append(&t->out, "]", 1);
      }
      wm_strbuf_append(&t->out, wm_strbuf_str(&body), body.len);
      if (lb) {
        wm_strbuf_append(&t->out, "[", 1);
      }
      if (caret) {
        wm_strbuf_append(&t->out, "^", 1);
      }
      if (dash) {
        wm_strbuf_append(&t->out, "-", 1);
      }
      wm_strbuf_append(&t->out, "]", 1);
    }
  }
  if (body.failed) {
    t->out.failed = true;
  }
  wm_strbuf_deinit(&body);
}

// Translates RE2 pattern |p| of |n| bytes into t->out as ^(...)$.
static void re_translate(regex_tr_t *t, const char *p, size_t n) {
  wm_strbuf_init(&t->out);
  t->byte_wise = false;
  t->what = NULL;
  t->at = 0;
  wm_strbuf_append(&t->out, "^(", 2);
  bool after_quant = false;
  for (size_t i = 0; i < n && !t->what;) {
    unsigned char c = (unsigned char)p[i];
    bool quant = false;
    if (c == '?' && after_quant) {
      i++;  // lazy quantifier: the same strings match in full
      after_quant = false;
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= n) {
        re_refuse(t, "a trailing \\", i);
        break;
      }
      char e = p[i + 1];
      const char *cls = re_class(e);
      if (cls) {
        wm_strbuf_append(&t->out, cls, strlen(cls));
        if (e == 'W' || e == 'D' || e == 'S') {
          t->byte_wise = true;
        }
        i += 2;
      } else if (e == 'b' || e == 'B') {
#ifdef __GLIBC__
        wm_strbuf_append(&t->out, e == 'b' ? "\\b" : "\\B", 2);
        i += 2;
#else
        re_refuse(t, "a word boundary (\\b, \\B)", i);
#endif
      } else {
        size_t j = i + 1;
        int v = re_escape_char(p, n, &j);
        if (v < 0) {
          re_refuse(t, "an escape without a POSIX form", i);
          break;
        }
        re_literal(&t->out, (unsigned char)v);
        i = j + 1;
      }
    } else if (c == '[') {
      re_bracket(t, p, n, &i);
    } else if (c == '(') {
      if (i + 1 < n && p[i + 1] == '?') {
        if (i + 2 < n && p[i + 2] == ':') {
          wm_strbuf_append(&t->out, "(", 1);
          i += 3;
          continue;
        }
        re_refuse(t, "a group with flags or a name (?...)", i);
        break;
      }
      wm_strbuf_append(&t->out, "(", 1);
      i++;
    } else if (c == '.') {
      wm_strbuf_append(&t->out, "[^\n]", 4);
      t->byte_wise = true;
      i++;
    } else if (c == '{') {
      const char *end = memchr(p + i, '}', n - i);
      if (!end) {
        re_literal(&t->out, c);
        i++;
      } else {
        size_t len = (size_t)(end - (p + i)) + 1;
        wm_strbuf_append(&t->out, p + i, len);
        i += len;
        quant = true;
      }
    } else {
      quant = c == '*' || c == '+' || c == '?';
      wm_strbuf_append(&t->out, (const char *)&c, 1);
      i++;
    }
    after_quant = quant;
  }
  wm_strbuf_append(&t->out, ")$", 2);
}

// A compiled RegexFullMatch pattern.
typedef struct regex_prog {
  regex_t re;      // compiled POSIX pattern
  bool byte_wise;  // refuse non-ASCII input
} regex_prog_t;

static wm_status_t regex_compile(const wm_op_ctx_t *ctx, regex_prog_t *out) {
  const wm_attr_t *a;
  WM_RETURN_IF_ERROR(wm_op_attr_find(ctx, "pattern", WM_ATTR_STRING, true, &a));
  if (a->s_len != strlen(a->s)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"pattern\" holds a NUL byte");
  }
  regex_tr_t t;
  re_translate(&t, a->s, a->s_len);
  wm_status_t st = NULL;
  if (t.what) {
    st = WM_OP_ERROR(ctx, UNIMPLEMENTED,
                     "pattern \"%s\" uses %s at byte %zu, which has no POSIX "
                     "regular expression form",
                     a->s, t.what, t.at);
  } else if (t.out.failed) {
    st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                     "out of memory translating the pattern");
  } else {
    int rc = regcomp(&out->re, wm_strbuf_str(&t.out), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char msg[128];
      regerror(rc, &out->re, msg, sizeof(msg));
      st = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "pattern \"%s\" does not compile: %s", a->s, msg);
    }
  }
  out->byte_wise = t.byte_wise;
  wm_strbuf_deinit(&t.out);
  return st;
}

static wm_status_t regex_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_string_input(ctx, 0));
  const wm_attr_t *a;
  WM_RETURN_IF_ERROR(wm_op_attr_find(ctx, "pattern", WM_ATTR_STRING, true, &a));
  wm_op_set_out(ctx, 0, WM_DTYPE_BOOL, wm_op_in_shape(ctx, 0));
  return NULL;
}

static bool is_ascii(const char *s) {
  for (; *s; s++) {
    if ((unsigned char)*s >= 0x80) {
      return false;
    }
  }
  return true;
}

static wm_status_t regex_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  regex_prog_t prog;
  WM_RETURN_IF_ERROR(regex_compile(ctx, &prog));
  const wm_tensor_t *x = ctx->in[0];
  bool *out = y->data;
  wm_status_t st = NULL;
  for (size_t i = 0; i < x->count; i++) {
    const char *s = elem_string(x, i);
    if (prog.byte_wise && !is_ascii(s)) {
      st = WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "element %zu of input 0 is not ASCII, and the pattern "
                       "matches single bytes where RE2 matches characters",
                       i);
      break;
    }
    out[i] = regexec(&prog.re, s, 0, NULL, 0) == 0;
  }
  regfree(&prog.re);
  return st;
}

#define TFIDF_TYPES (WM_T(STRING) | WM_T(INT32) | WM_T(INT64))

const wm_op_def_t wm_ops_text[] = {
    {"StringNormalizer", "", 10, 1, 1, 1, 1, WM_T(STRING), strnorm_infer,
     strnorm_run, NULL},
    {"TfIdfVectorizer", "", 9, 1, 1, 1, 1, TFIDF_TYPES, tfidf_infer, tfidf_run,
     tfidf_cost},
    {"StringConcat", "", 20, 2, 2, 1, 1, WM_T(STRING), concat_infer, concat_run,
     concat_cost},
    {"StringSplit", "", 20, 1, 1, 1, 2, WM_T(STRING), split_infer, split_run,
     NULL},
    {"RegexFullMatch", "", 20, 1, 1, 1, 1, WM_T(STRING), regex_infer, regex_run,
     NULL},
    WM_OPS_END,
};
