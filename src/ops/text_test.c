// Tests of the text family: StringNormalizer's case mapping, stopwords,
// shapes and locales; TfIdfVectorizer's modes, string pools, skip-grams
// and its checks of hostile attributes; StringConcat, StringSplit and the
// RE2-to-POSIX translation of RegexFullMatch.
#include <stdint.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

// Builds StringNormalizer over the strings |x| of shape |dims|.
static wm_status_t strnorm_node(wm_op_fixture_t *f, int32_t rank,
                                const int64_t *dims, const char *const *x,
                                const char *action, bool sensitive,
                                const char *const *stops, size_t n_stops) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 10));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_strings(f, "x", rank, dims, x));
  const char *in[1] = {"x"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "StringNormalizer", in, 1, 1));
  if (action) {
    WM_RETURN_IF_ERROR(
        wm_op_fixture_attr_string(f, "case_change_action", action));
  }
  WM_RETURN_IF_ERROR(
      wm_op_fixture_attr_int(f, "is_case_sensitive", sensitive ? 1 : 0));
  if (n_stops) {
    WM_RETURN_IF_ERROR(
        wm_op_fixture_attr_strings(f, "stopwords", stops, n_stops));
  }
  return NULL;
}

WM_TEST(strnorm_drops_stopwords_ignoring_case_and_lowers_unicode) {
  static const char *const x[5] = {"Monday", "TUESDAY", "\xC3\x84RGER",
                                   "MONDAY", "\xCE\xA3\xCE\x86"};
  static const char *const stops[1] = {"monday"};
  int64_t d[1] = {5};
  wm_op_fixture_t f;
  WM_CHECK_OK(strnorm_node(&f, 1, d, x, "LOWER", false, stops, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // "ÄRGER" -> "ärger", "ΣΆ" -> "σά".
  static const char *const want[3] = {"tuesday", "\xC3\xA4rger",
                                      "\xCF\x83\xCE\xAC"};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 1, (const int64_t[]){3}) &&
            wm_op_fixture_strings_are(f.out[0], want, 3);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(strnorm_uppers_with_simple_mapping_and_matches_case_sensitively) {
  // "straße" keeps ß (simple mapping); "ſ" and "ı" fold to ASCII; "ÿ"
  // becomes "Ÿ"; the stopword "Monday" only drops the exact spelling.
  static const char *const x[4] = {
      "stra\xC3\x9F"
      "e",
      "\xC5\xBF\xC4\xB1\xC3\xBF", "Monday", "monday"};
  static const char *const stops[1] = {"Monday"};
  int64_t d[2] = {1, 4};
  wm_op_fixture_t f;
  WM_CHECK_OK(strnorm_node(&f, 2, d, x, "UPPER", true, stops, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const char *const want[3] = {
      "STRA\xC3\x9F"
      "E",
      "SI\xC5\xB8", "MONDAY"};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){1, 3}) &&
            wm_op_fixture_strings_are(f.out[0], want, 3);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(strnorm_keeps_one_empty_string_when_every_element_is_dropped) {
  static const char *const x[2] = {"a", "A"};
  static const char *const stops[1] = {"a"};
  int64_t d[2] = {1, 2};
  wm_op_fixture_t f;
  WM_CHECK_OK(strnorm_node(&f, 2, d, x, NULL, false, stops, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const char *const want[1] = {""};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){1, 1}) &&
            wm_op_fixture_strings_are(f.out[0], want, 1);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(strnorm_infers_length_only_without_stopwords) {
  for (int c = 0; c < 2; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 10));
    int64_t d[1] = {4};
    WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_STRING, 1, d));
    const char *in[1] = {"x"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "StringNormalizer", in, 1, 1));
    if (c == 1) {
      static const char *const stops[1] = {"a"};
      WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "stopwords", stops, 1));
    }
    wm_type_t t;
    wm_status_t s = wm_op_fixture_infer(&f, &t);
    wm_op_fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_STRING);
    WM_CHECK_INT_EQ(t.shape.rank, 1);
    WM_CHECK_INT_EQ(t.shape.dims[0], c == 0 ? 4 : -1);
  }
}

WM_TEST(strnorm_rejects_bad_action_shape_and_utf8) {
  static const char *const x[2] = {"a", "b"};
  int64_t d1[1] = {2};
  wm_op_fixture_t f;
  WM_CHECK_OK(strnorm_node(&f, 1, d1, x, "TITLE", true, NULL, 0));
  wm_status_t s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "want LOWER, UPPER or NONE");

  int64_t d2[2] = {2, 1};
  WM_CHECK_OK(strnorm_node(&f, 2, d2, x, NULL, true, NULL, 0));
  s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "has shape [2,1], want [C] or [1,C]");

  static const char *const bad[2] = {"ok", "\xC3("};
  WM_CHECK_OK(strnorm_node(&f, 1, d1, bad, "UPPER", true, NULL, 0));
  s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "element 1 of input 0 is not valid UTF-8");
}

WM_TEST(strnorm_refuses_locales_with_special_casing_only_when_casing) {
  static const char *const x[1] = {"i"};
  int64_t d[1] = {1};
  static const struct {
    const char *locale;
    const char *action;
    const char *error;  // NULL = accepted
  } cases[] = {
      {"en_US", "UPPER", NULL},
      {"de_DE.UTF-8", "LOWER", NULL},
      {"fr-CA", "UPPER", NULL},
      {"C", "UPPER", NULL},
      {"tr_TR", "NONE", NULL},
      {"tr_TR", "UPPER", "dotted and dotless i"},
      {"az", "LOWER", "dotted and dotless i"},
      {"en_US.ISO-8859-1", "UPPER", "not supported for case changes"},
      {"English_United States.1252", "UPPER", "not supported"},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(strnorm_node(&f, 1, d, x, cases[c].action, true, NULL, 0));
    WM_CHECK_OK(wm_op_fixture_attr_string(&f, "locale", cases[c].locale));
    wm_status_t s = wm_op_fixture_run(&f);
    wm_op_fixture_deinit(&f);
    if (cases[c].error) {
      WM_CHECK_ERR(s, UNIMPLEMENTED, cases[c].error);
    } else {
      WM_CHECK_OK(s);
    }
  }
}

// Builds TfIdfVectorizer over int64 |x| of shape |dims| with an int pool.
static wm_status_t tfidf_node(wm_op_fixture_t *f, int32_t rank,
                              const int64_t *dims, const int64_t *x,
                              const char *mode, int64_t min_n, int64_t max_n,
                              int64_t skip) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 9));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const_i64(f, "x", WM_DTYPE_INT64, rank, dims, x));
  const char *in[1] = {"x"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "TfIdfVectorizer", in, 1, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "mode", mode));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "min_gram_length", min_n));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "max_gram_length", max_n));
  return wm_op_fixture_attr_int(f, "max_skip_count", skip);
}

WM_TEST(tfidf_weights_string_ngrams_in_each_mode) {
  // Unigrams a, b and the bigram "a b" over "x a b a b c": each occurs
  // twice.
  static const char *const x[6] = {"x", "a", "b", "a", "b", "c"};
  static const char *const pool[4] = {"a", "b", "a", "b"};
  static const int64_t counts[2] = {0, 2};
  static const int64_t indexes[3] = {2, 0, 1};  // a -> 2, b -> 0, ab -> 1
  static const float weights[3] = {0.5f, 2.0f, 3.0f};
  static const char *const modes[3] = {"TF", "IDF", "TFIDF"};
  static const double want[2][3][3] = {
      {{2, 2, 2}, {1, 1, 1}, {2, 2, 2}},    // no weights
      {{2, 2, 2}, {0.5, 2, 3}, {1, 4, 6}},  // weights by column
  };
  for (int w = 0; w < 2; w++) {
    for (int m = 0; m < 3; m++) {
      wm_op_fixture_t f;
      int64_t d[1] = {6};
      WM_CHECK_OK(wm_op_fixture_init(&f, 9));
      WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x", 1, d, x));
      const char *in[1] = {"x"};
      WM_CHECK_OK(wm_op_fixture_add_node(&f, "TfIdfVectorizer", in, 1, 1));
      WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", modes[m]));
      WM_CHECK_OK(wm_op_fixture_attr_int(&f, "min_gram_length", 1));
      WM_CHECK_OK(wm_op_fixture_attr_int(&f, "max_gram_length", 2));
      WM_CHECK_OK(wm_op_fixture_attr_int(&f, "max_skip_count", 0));
      WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "pool_strings", pool, 4));
      WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_counts", counts, 2));
      WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_indexes", indexes, 3));
      if (w) {
        WM_CHECK_OK(
            wm_graph_add_attr_floats(f.graph, f.node, "weights", weights, 3));
      }
      wm_status_t s = wm_op_fixture_run(&f);
      bool ok =
          !s && f.out[0]->dtype == WM_DTYPE_FLOAT &&
          wm_op_fixture_values_near(f.out[0], want[w][m], 3, WM_OP_FIXTURE_TOL);
      WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
    }
  }
}

WM_TEST(tfidf_counts_skip_grams_per_row_and_unigrams_once) {
  // Rows "1 2 1 2" and "2 2 9 1"; pool: unigram 2, bigram (1, 2).
  static const int64_t x[8] = {1, 2, 1, 2, 2, 2, 9, 1};
  static const int64_t pool[3] = {2, 1, 2};
  static const int64_t counts[2] = {0, 1};
  static const int64_t indexes[2] = {0, 1};
  int64_t d[2] = {2, 4};
  wm_op_fixture_t f;
  WM_CHECK_OK(tfidf_node(&f, 2, d, x, "TF", 1, 2, 2));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "pool_int64s", pool, 3));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_counts", counts, 2));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_indexes", indexes, 2));
  wm_status_t s = wm_op_fixture_run(&f);
  // Row 0: "2" twice; (1,2) at distance 1 (twice) and 3 (once).
  // Row 1: "2" twice; no (1,2).
  static const double want[4] = {2, 3, 2, 0};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 2}) &&
            wm_op_fixture_values_near(f.out[0], want, 4, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(tfidf_bounds_huge_skip_and_gram_lengths_by_the_row) {
  // max_skip_count and max_gram_length at INT64_MAX must not loop over
  // them: only distances below the row length can gather an n-gram.
  enum { C = 2000 };
  int64_t *x = malloc(C * sizeof(int64_t));
  WM_CHECK(x != NULL);
  for (int i = 0; i < C; i++) {
    x[i] = i % 2 ? 7 : 5;
  }
  static const int64_t pool[3] = {5, 5, 7};
  static const int64_t counts[2] = {0, 1};
  static const int64_t indexes[2] = {0, 1};
  int64_t d[1] = {C};
  wm_op_fixture_t f;
  wm_status_t s = tfidf_node(&f, 1, d, x, "TF", 1, INT64_MAX, INT64_MAX);
  free(x);
  WM_CHECK_OK(s);
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "pool_int64s", pool, 3));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_counts", counts, 2));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_indexes", indexes, 2));
  s = wm_op_fixture_run(&f);
  // 1000 fives; (5, 7) pairs at odd distances d from every even start s
  // with s + d < C: sum over the 1000 starts of (C - s) / 2.
  double pairs = 0;
  for (int st = 0; st < C; st += 2) {
    pairs += (C - st) / 2;
  }
  double want[2] = {1000, pairs};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 2, 0.5);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(tfidf_indexes_a_large_pool) {
  // 50000 unigrams: a lookup per element, not a scan of the pool.
  enum { P = 50000 };
  int64_t *pool = malloc(P * sizeof(int64_t));
  int64_t *indexes = malloc(P * sizeof(int64_t));
  WM_CHECK(pool != NULL && indexes != NULL);
  for (int i = 0; i < P; i++) {
    pool[i] = (int64_t)i * 3;
    indexes[i] = P - 1 - i;
  }
  static const int64_t x[4] = {0, 3, 4, (P - 1) * 3};
  static const int64_t counts[1] = {0};
  int64_t d[1] = {4};
  wm_op_fixture_t f;
  wm_status_t s = tfidf_node(&f, 1, d, x, "TF", 1, 1, 0);
  if (!s) {
    s = wm_op_fixture_attr_ints(&f, "pool_int64s", pool, P);
  }
  if (!s) {
    s = wm_op_fixture_attr_ints(&f, "ngram_counts", counts, 1);
  }
  if (!s) {
    s = wm_op_fixture_attr_ints(&f, "ngram_indexes", indexes, P);
  }
  free(pool);
  free(indexes);
  if (!s) {
    s = wm_op_fixture_run(&f);
  }
  bool ok = !s && f.out[0]->count == P &&
            ((float *)f.out[0]->data)[P - 1] == 1.0f &&
            ((float *)f.out[0]->data)[P - 2] == 1.0f &&
            ((float *)f.out[0]->data)[0] == 1.0f &&
            ((float *)f.out[0]->data)[1] == 0.0f;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(tfidf_rejects_hostile_attributes_and_inputs) {
  static const int64_t x[3] = {1, 2, 3};
  static const int64_t pool[4] = {1, 2, 1, 2};
  static const int64_t ok_counts[2] = {0, 2};
  static const int64_t ok_indexes[3] = {0, 1, 2};
  const struct {
    const int64_t *counts;
    size_t n_counts;
    const int64_t *indexes;
    size_t n_indexes;
    size_t n_weights;
    int32_t rank;
    const char *error;
  } cases[] = {
      {(const int64_t[]){0, 5}, 2, ok_indexes, 3, 0, 1, "ngram_counts[1] is 5"},
      {(const int64_t[]){3, 1}, 2, ok_indexes, 3, 0, 1, "ngram_counts[1] is 1"},
      {(const int64_t[]){0, 1}, 2, ok_indexes, 3, 0, 1, "not a multiple of 2"},
      {ok_counts, 2, (const int64_t[]){0, -1, 2}, 3, 0, 1,
       "ngram_indexes[1] is -1"},
      {ok_counts, 2, ok_indexes, 2, 0, 1, "has 2 entries"},
      {ok_counts, 2, (const int64_t[]){0, 1, 9}, 3, 3, 1,
       "n-gram 2 has output column 9"},
      {ok_counts, 2, ok_indexes, 3, 0, 3, "want [C] or [N,C]"},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    int64_t d1[1] = {3}, d3[3] = {1, 1, 3};
    wm_op_fixture_t f;
    WM_CHECK_OK(tfidf_node(&f, cases[c].rank, cases[c].rank == 1 ? d1 : d3, x,
                           "IDF", 1, 2, 0));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "pool_int64s", pool, 4));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_counts", cases[c].counts,
                                        cases[c].n_counts));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_indexes", cases[c].indexes,
                                        cases[c].n_indexes));
    if (cases[c].n_weights) {
      static const float w[3] = {1, 1, 1};
      WM_CHECK_OK(wm_graph_add_attr_floats(f.graph, f.node, "weights", w,
                                           cases[c].n_weights));
    }
    wm_status_t s = wm_op_fixture_run(&f);
    wm_op_fixture_deinit(&f);
    WM_CHECK_ERR(s, INVALID_ARGUMENT, cases[c].error);
  }

  // A string input with an int pool; both pools; a bad mode.
  static const char *const xs[1] = {"a"};
  static const char *const ps[2] = {"a", "b"};
  for (int c = 0; c < 3; c++) {
    wm_op_fixture_t f;
    int64_t d[1] = {1};
    WM_CHECK_OK(wm_op_fixture_init(&f, 9));
    WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x", 1, d, xs));
    const char *in[1] = {"x"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "TfIdfVectorizer", in, 1, 1));
    WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", c == 2 ? "BM25" : "TF"));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "min_gram_length", 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "max_gram_length", 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "max_skip_count", 0));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_counts", ok_counts, 1));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_indexes", ok_indexes, 2));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "pool_int64s", pool, 2));
    if (c == 1) {
      WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "pool_strings", ps, 2));
    }
    wm_status_t s = wm_op_fixture_run(&f);
    wm_op_fixture_deinit(&f);
    static const char *const want[3] = {
        "input 0 is string but the pool holds integers",
        "has both of pool_int64s and pool_strings", "want TF, IDF or TFIDF"};
    WM_CHECK_ERR(s, INVALID_ARGUMENT, want[c]);
  }
}

WM_TEST(tfidf_infers_columns_with_unknown_batch) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 9));
  int64_t d[2] = {-1, 5};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_INT32, 2, d));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "TfIdfVectorizer", in, 1, 1));
  static const int64_t pool[2] = {1, 2};
  static const int64_t counts[1] = {0};
  static const int64_t indexes[2] = {0, 6};
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", "TF"));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "min_gram_length", 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "max_gram_length", 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "max_skip_count", 0));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "pool_int64s", pool, 2));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_counts", counts, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_indexes", indexes, 2));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 7);
}

// ---------------------------------------------- StringConcat, StringSplit

WM_TEST(string_concat_broadcasts_and_rejects_non_strings) {
  static const char *const a[2] = {"x", "yy"};
  static const char *const b[3] = {"1", "", "\xE4\xB8\xAD"};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  WM_CHECK_OK(
      wm_op_fixture_add_strings(&f, "a", 2, (const int64_t[]){2, 1}, a));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "b", 1, (const int64_t[]){3}, b));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "StringConcat", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const char *const want[6] = {"x1",  "x",  "x\xE4\xB8\xAD",
                                      "yy1", "yy", "yy\xE4\xB8\xAD"};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 3}) &&
            wm_op_fixture_strings_are(f.out[0], want, 6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "a", 1, (const int64_t[]){2}, a));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 1,
                                      (const int64_t[]){2}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "StringConcat", in, 2, 1));
  s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "input 1 has dtype float, want string");
}

// Builds StringSplit over |x| (1-D) with |delim| (NULL: absent) and
// |maxsplit| (< -1: absent).
static wm_status_t split_node(wm_op_fixture_t *f, const char *const *x,
                              int64_t n, const char *delim, int64_t maxsplit) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 20));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_strings(f, "x", 1, (const int64_t[]){n}, x));
  const char *in[1] = {"x"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "StringSplit", in, 1, 2));
  if (delim) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "delimiter", delim));
  }
  if (maxsplit >= -1) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "maxsplit", maxsplit));
  }
  return NULL;
}

WM_TEST(string_split_follows_python_for_separators_and_maxsplit) {
  // Whitespace with maxsplit: the remainder keeps its trailing blanks.
  static const char *const x1[2] = {"  a b  c  ", ""};
  wm_op_fixture_t f;
  WM_CHECK_OK(split_node(&f, x1, 2, NULL, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const char *const want1[4] = {"a", "b  c  ", "", ""};
  static const double len1[2] = {2, 0};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 2}) &&
            wm_op_fixture_strings_are(f.out[0], want1, 4) &&
            wm_op_fixture_values_near(f.out[1], len1, 2, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  // A multi-byte separator; an empty string still gives one piece.
  static const char *const x2[2] = {"xabyabab", ""};
  WM_CHECK_OK(split_node(&f, x2, 2, "ab", -2));
  s = wm_op_fixture_run(&f);
  static const char *const want2[8] = {"x", "y", "", "", "", "", "", ""};
  static const double len2[2] = {4, 1};
  ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 4}) &&
       wm_op_fixture_strings_are(f.out[0], want2, 8) &&
       wm_op_fixture_values_near(f.out[1], len2, 2, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  // maxsplit 0 keeps the string whole.
  static const char *const x3[1] = {"a.b.c"};
  WM_CHECK_OK(split_node(&f, x3, 1, ".", 0));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_strings_are(f.out[0], x3, 1);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(string_split_static_shape_leaves_the_piece_count_unknown) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_STRING, 2,
                                      (const int64_t[]){3, -1}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "StringSplit", in, 1, 2));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_STRING);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], 3);
  WM_CHECK_INT_EQ(t.shape.dims[1], -1);
  WM_CHECK_INT_EQ(t.shape.dims[2], -1);

  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  int64_t d8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_STRING, 8, d8));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "StringSplit", in, 1, 2));
  s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "input 0 has rank 8, want at most 7");
}

// ---------------------------------------------------------- RegexFullMatch

// Runs RegexFullMatch with |pattern| over the |n| strings |x|.
static wm_status_t regex_run_with(wm_op_fixture_t *f, const char *pattern,
                                  const char *const *x, int64_t n) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 20));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_strings(f, "x", 1, (const int64_t[]){n}, x));
  const char *in[1] = {"x"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "RegexFullMatch", in, 1, 1));
  if (pattern) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "pattern", pattern));
  }
  return wm_op_fixture_run(f);
}

WM_TEST(regex_translates_re2_escapes_groups_lazy_and_brackets) {
  static const struct {
    const char *pattern;
    const char *x[3];
    double want[3];
  } cases[] = {
      {"\\d{3}-\\d{4}", {"555-1234", "55-1234", "555-12345"}, {1, 0, 0}},
      {"[\\w.\\-]+@x\\.com",
       {"a.b-c@x.com", "a b@x.com", "_@x.com"},
       {1, 0, 1}},
      {"a.*?b", {"axxb", "a\nb", "ab"}, {1, 0, 1}},
      {"(?:ab)+", {"abab", "aba", ""}, {1, 0, 0}},
      {"[]a]+", {"]a]", "a", "b"}, {1, 1, 0}},
      {"[\\^x]\\s\\S", {"^ a", "x\tb", "y c"}, {1, 1, 0}},
      {"a|b", {"a", "b", "ab"}, {1, 1, 0}},
      {"\\x41\\+", {"A+", "AA", "A"}, {1, 0, 0}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    wm_op_fixture_t f;
    wm_status_t s = regex_run_with(&f, cases[c].pattern, cases[c].x, 3);
    bool ok = !s && f.out[0]->dtype == WM_DTYPE_BOOL &&
              wm_op_fixture_values_near(f.out[0], cases[c].want, 3, 0);
    if (!ok) {
      printf("  pattern %s\n", cases[c].pattern);
    }
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(regex_refuses_syntax_without_a_posix_form) {
  static const char *const patterns[5] = {"(?i)abc", "\\pL+", "(?P<n>a)",
                                          "[\\W]", "(a)\\1"};
  static const char *const x[1] = {"abc"};
  for (int c = 0; c < 5; c++) {
    wm_op_fixture_t f;
    wm_status_t s = regex_run_with(&f, patterns[c], x, 1);
    wm_op_fixture_deinit(&f);
    WM_CHECK_ERR(s, UNIMPLEMENTED, "which has no POSIX regular expression");
  }
  wm_op_fixture_t f;
  wm_status_t s = regex_run_with(&f, "(ab", x, 1);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "does not compile");
  s = regex_run_with(&f, NULL, x, 1);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "attribute \"pattern\" is required");
}

WM_TEST(regex_refuses_non_ascii_input_only_for_byte_wise_patterns) {
  static const char *const x[1] = {"\xC3\xA9\xC3\xA9"};  // "éé"
  wm_op_fixture_t f;
  wm_status_t s = regex_run_with(&f, "(\xC3\xA9)+", x, 1);
  static const double yes[1] = {1};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], yes, 1, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  s = regex_run_with(&f, "..", x, 1);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, UNIMPLEMENTED, "element 0 of input 0 is not ASCII");
}

// Runs the node of |f| with the Nth allocation failing, N = 1, 2, ...
// until it succeeds; every failure must be RESOURCE_EXHAUSTED.
static bool survives_failing_allocations(wm_op_fixture_t *f) {
  for (int64_t n = 1; n < 1000; n++) {
    wm_alloc_fail_after(n);
    wm_status_t s = wm_op_fixture_run(f);
    wm_alloc_fail_after(0);
    if (!s) {
      return true;
    }
    wm_status_code_t code = wm_status_code(s);
    if (code != WM_STATUS_RESOURCE_EXHAUSTED) {
      printf("  allocation %lld: %s\n", (long long)n, wm_status_message(s));
      wm_status_free(s);
      return false;
    }
    wm_status_free(s);
  }
  return false;
}

WM_TEST(text_ops_fail_cleanly_on_every_allocation) {
  static const char *const x[4] = {"A", "b", "C", "b"};
  static const char *const stops[2] = {"B", "zz"};
  int64_t d[1] = {4};
  wm_op_fixture_t f;
  WM_CHECK_OK(strnorm_node(&f, 1, d, x, "LOWER", false, stops, 2));
  bool ok = survives_failing_allocations(&f);
  static const char *const want[2] = {"a", "c"};
  ok = ok && wm_op_fixture_strings_are(f.out[0], want, 2);
  WM_OP_FIXTURE_CHECK_DONE(&f, NULL, ok);

  static const char *const pool[3] = {"A", "b", "C"};
  static const int64_t counts[2] = {0, 1};
  static const int64_t indexes[2] = {0, 1};
  WM_CHECK_OK(wm_op_fixture_init(&f, 9));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x", 1, d, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "TfIdfVectorizer", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", "TF"));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "min_gram_length", 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "max_gram_length", 2));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "max_skip_count", 1));
  WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "pool_strings", pool, 3));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_counts", counts, 2));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ngram_indexes", indexes, 2));
  ok = survives_failing_allocations(&f);
  static const double want_y[2] = {1, 1};  // "A"; ("b", "C")
  ok = ok && wm_op_fixture_values_near(f.out[0], want_y, 2, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, NULL, ok);

  static const char *const words[2] = {"a b", "c"};
  WM_CHECK_OK(split_node(&f, words, 2, NULL, -2));
  ok = survives_failing_allocations(&f);
  static const char *const pieces[4] = {"a", "b", "c", ""};
  ok = ok && wm_op_fixture_strings_are(f.out[0], pieces, 4);
  WM_OP_FIXTURE_CHECK_DONE(&f, NULL, ok);

  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "a", 1, d, x));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "b", 1, d, x));
  const char *in2[2] = {"a", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "StringConcat", in2, 2, 1));
  ok = survives_failing_allocations(&f);
  static const char *const joined[4] = {"AA", "bb", "CC", "bb"};
  ok = ok && wm_op_fixture_strings_are(f.out[0], joined, 4);
  WM_OP_FIXTURE_CHECK_DONE(&f, NULL, ok);
}

static const wm_test_case_t cases[] = {
    WM_CASE(strnorm_drops_stopwords_ignoring_case_and_lowers_unicode),
    WM_CASE(strnorm_uppers_with_simple_mapping_and_matches_case_sensitively),
    WM_CASE(strnorm_keeps_one_empty_string_when_every_element_is_dropped),
    WM_CASE(strnorm_infers_length_only_without_stopwords),
    WM_CASE(strnorm_rejects_bad_action_shape_and_utf8),
    WM_CASE(strnorm_refuses_locales_with_special_casing_only_when_casing),
    WM_CASE(tfidf_weights_string_ngrams_in_each_mode),
    WM_CASE(tfidf_counts_skip_grams_per_row_and_unigrams_once),
    WM_CASE(tfidf_bounds_huge_skip_and_gram_lengths_by_the_row),
    WM_CASE(tfidf_indexes_a_large_pool),
    WM_CASE(tfidf_rejects_hostile_attributes_and_inputs),
    WM_CASE(tfidf_infers_columns_with_unknown_batch),
    WM_CASE(string_concat_broadcasts_and_rejects_non_strings),
    WM_CASE(string_split_follows_python_for_separators_and_maxsplit),
    WM_CASE(string_split_static_shape_leaves_the_piece_count_unknown),
    WM_CASE(regex_translates_re2_escapes_groups_lazy_and_brackets),
    WM_CASE(regex_refuses_syntax_without_a_posix_form),
    WM_CASE(regex_refuses_non_ascii_input_only_for_byte_wise_patterns),
    WM_CASE(text_ops_fail_cleanly_on_every_allocation),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
