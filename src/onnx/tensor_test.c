// TensorProto reading: raw_data, every typed field, malformed tensors,
// SequenceProto/OptionalProto files and tensor files written by wmap.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx/onnx_internal.h"
#include "wm_test.h"
#include "wmap/onnx.h"

// Packs |p| and reads it back through the public tensor reader.
static wm_status_t load(Onnx__TensorProto *p, wm_tensor_t **out) {
  size_t n = onnx__tensor_proto__get_packed_size(p);
  uint8_t *buf = malloc(n ? n : 1);
  onnx__tensor_proto__pack(p, buf);
  char *name = NULL;
  wm_status_t s = wm_onnx_tensor_load_buffer(buf, n, out, &name);
  free(buf);
  free(name);
  return s;
}

static Onnx__TensorProto make(wm_dtype_t dtype, int64_t *dims, size_t rank) {
  Onnx__TensorProto p = ONNX__TENSOR_PROTO__INIT;
  p.name = "t";
  p.has_data_type = true;
  p.data_type = (int32_t)dtype;
  p.dims = dims;
  p.n_dims = rank;
  return p;
}

WM_TEST(int32_data_carries_narrow_ints_bool_and_half_float_bits) {
  static const struct {
    wm_dtype_t dtype;
    int32_t raw[3];  // int32_data
    double want[3];  // element values
  } cases[] = {
      {WM_DTYPE_INT8, {-128, 127, 5}, {-128, 127, 5}},
      {WM_DTYPE_UINT8, {0, 255, 7}, {0, 255, 7}},
      {WM_DTYPE_INT16, {-32768, 32767, 1}, {-32768, 32767, 1}},
      {WM_DTYPE_UINT16, {0, 65535, 2}, {0, 65535, 2}},
      {WM_DTYPE_INT32, {INT32_MIN, INT32_MAX, 3}, {INT32_MIN, INT32_MAX, 3}},
      {WM_DTYPE_BOOL, {0, 1, 1}, {0, 1, 1}},
      {WM_DTYPE_FLOAT16, {0x3c00, 0xc000, 0x3800}, {1.0, -2.0, 0.5}},
      {WM_DTYPE_BFLOAT16, {0x3f80, 0xc000, 0x3f00}, {1.0, -2.0, 0.5}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    int64_t dims[1] = {3};
    Onnx__TensorProto p = make(cases[c].dtype, dims, 1);
    p.int32_data = (int32_t *)cases[c].raw;
    p.n_int32_data = 3;
    wm_tensor_t *t;
    WM_CHECK_OK(load(&p, &t));
    WM_CHECK_INT_EQ(t->dtype, cases[c].dtype);
    for (size_t i = 0; i < 3; i++) {
      WM_CHECK_DBL_NEAR(wm_tensor_get_f64(t, i), cases[c].want[i], 0);
    }
    wm_tensor_destroy(t);
  }
}

WM_TEST(float_double_int64_and_uint64_fields_load) {
  int64_t dims[1] = {2};
  float f[] = {1.5f, -2.0f};
  double d[] = {1e300, -0.25};
  int64_t i64[] = {INT64_MIN, 42};
  uint64_t u64[] = {UINT64_MAX, 0};
  uint64_t u32[] = {4294967295u, 1};
  wm_tensor_t *t;
  Onnx__TensorProto p = make(WM_DTYPE_FLOAT, dims, 1);
  p.float_data = f;
  p.n_float_data = 2;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK_DBL_NEAR(((float *)t->data)[1], -2.0, 0);
  wm_tensor_destroy(t);
  p = make(WM_DTYPE_DOUBLE, dims, 1);
  p.double_data = d;
  p.n_double_data = 2;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK(((double *)t->data)[0] == 1e300);
  wm_tensor_destroy(t);
  p = make(WM_DTYPE_INT64, dims, 1);
  p.int64_data = i64;
  p.n_int64_data = 2;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK(((int64_t *)t->data)[0] == INT64_MIN);
  wm_tensor_destroy(t);
  p = make(WM_DTYPE_UINT64, dims, 1);
  p.uint64_data = u64;
  p.n_uint64_data = 2;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK(((uint64_t *)t->data)[0] == UINT64_MAX);
  wm_tensor_destroy(t);
  p = make(WM_DTYPE_UINT32, dims, 1);
  p.uint64_data = u32;
  p.n_uint64_data = 2;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK(((uint32_t *)t->data)[0] == 4294967295u);
  wm_tensor_destroy(t);
}

WM_TEST(complex_numbers_take_two_entries_per_element) {
  int64_t dims[1] = {2};
  float f[] = {1, 2, 3, 4};
  double d[] = {5, 6, 7, 8};
  wm_tensor_t *t;
  Onnx__TensorProto p = make(WM_DTYPE_COMPLEX64, dims, 1);
  p.float_data = f;
  p.n_float_data = 4;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK_INT_EQ(t->count, 2);
  WM_CHECK(memcmp(t->data, f, sizeof(f)) == 0);
  wm_tensor_destroy(t);
  p = make(WM_DTYPE_COMPLEX128, dims, 1);
  p.double_data = d;
  p.n_double_data = 3;
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT,
               "double_data has 3 values, want 4 for complex128[2]");
  p.n_double_data = 4;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK(memcmp(t->data, d, sizeof(d)) == 0);
  wm_tensor_destroy(t);
}

WM_TEST(string_data_fills_string_tensors) {
  int64_t dims[1] = {3};
  ProtobufCBinaryData s[3] = {
      {3, (uint8_t *)"one"}, {0, NULL}, {5, (uint8_t *)"three"}};
  Onnx__TensorProto p = make(WM_DTYPE_STRING, dims, 1);
  p.string_data = s;
  p.n_string_data = 3;
  wm_tensor_t *t;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK_STR_EQ(((char **)t->data)[0], "one");
  WM_CHECK_STR_EQ(((char **)t->data)[1], "");
  WM_CHECK_STR_EQ(((char **)t->data)[2], "three");
  wm_tensor_destroy(t);
}

WM_TEST(raw_data_is_little_endian_and_scalars_and_empties_load) {
  int64_t dims[1] = {2};
  uint8_t raw[8] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  Onnx__TensorProto p = make(WM_DTYPE_INT32, dims, 1);
  p.has_raw_data = true;
  p.raw_data.data = raw;
  p.raw_data.len = 8;
  wm_tensor_t *t;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(t, 0), 1);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(t, 1), -1);
  wm_tensor_destroy(t);
  float one = 1.0f;
  p = make(WM_DTYPE_FLOAT, NULL, 0);
  p.float_data = &one;
  p.n_float_data = 1;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK_INT_EQ(t->shape.rank, 0);
  WM_CHECK_INT_EQ(t->count, 1);
  wm_tensor_destroy(t);
  int64_t empty[2] = {0, 3};
  p = make(WM_DTYPE_FLOAT, empty, 2);
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK_INT_EQ(t->count, 0);
  wm_tensor_destroy(t);
}

WM_TEST(inconsistent_tensors_are_refused_with_the_reason) {
  int64_t dims[2] = {2, 3};
  float f[6] = {0};
  int32_t big[2] = {1, 70000};
  uint8_t raw[4] = {0};
  wm_tensor_t *t = NULL;
  Onnx__TensorProto p = make(WM_DTYPE_FLOAT, dims, 2);
  p.float_data = f;
  p.n_float_data = 5;
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT,
               "tensor \"t\": float_data has 5 values, want 6 for "
               "float[2,3]");
  p.n_float_data = 6;
  p.has_raw_data = true;
  p.raw_data.data = raw;
  p.raw_data.len = 4;
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT,
               "float tensor has float_data (6 values) besides raw_data");
  p = make(WM_DTYPE_FLOAT, dims, 2);
  p.int32_data = big;
  p.n_int32_data = 2;
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT,
               "float tensor has int32_data (2 values)");
  p = make(WM_DTYPE_INT16, dims, 1);
  p.int32_data = big;
  p.n_int32_data = 2;
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT,
               "int32_data[1] = 70000 does not fit int16");
  p = make((wm_dtype_t)0, NULL, 0);
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT, "unknown data_type 0");
  int64_t neg[1] = {-1};
  p = make(WM_DTYPE_FLOAT, neg, 1);
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT, "dim 0 is negative (-1)");
  int64_t huge[2] = {INT64_MAX, 4};
  p = make(WM_DTYPE_FLOAT, huge, 2);
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT, "overflows");
  int64_t deep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  p = make(WM_DTYPE_FLOAT, deep, 9);
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT, "rank 9 exceeds the maximum 8");
  p = make(WM_DTYPE_STRING, NULL, 0);
  p.has_raw_data = true;
  p.raw_data.data = raw;
  p.raw_data.len = 4;
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT, "string tensor has raw_data");
  ProtobufCBinaryData nul = {3, (uint8_t *)"a\0b"};
  p = make(WM_DTYPE_STRING, NULL, 0);
  p.string_data = &nul;
  p.n_string_data = 1;
  WM_CHECK_ERR(load(&p, &t), UNIMPLEMENTED, "holds a NUL byte");
  WM_CHECK(t == NULL);
}

WM_TEST(garbage_and_truncated_buffers_are_data_loss) {
  wm_tensor_t *t = NULL;
  char *name = NULL;
  static const uint8_t garbage[] = {0x0f, 0xff, 0xff};
  WM_CHECK_ERR(wm_onnx_tensor_load_buffer(garbage, sizeof(garbage), &t, &name),
               DATA_LOSS, "corrupt protobuf");
  static const uint8_t cut[] = {0x4a, 0x10, 1, 2};  // raw_data of 16, has 2
  WM_CHECK_ERR(wm_onnx_tensor_load_buffer(cut, sizeof(cut), &t, &name),
               DATA_LOSS, "length runs past the end at byte 0");
  WM_CHECK(t == NULL && name == NULL);
}

// Appends a length-delimited field to |buf| (payloads under 128 bytes).
static size_t put(uint8_t *buf, size_t at, int field, const uint8_t *data,
                  size_t len) {
  buf[at++] = (uint8_t)(field << 3 | 2);
  buf[at++] = (uint8_t)len;
  memcpy(buf + at, data, len);
  return at + len;
}

// Test buffers: a float[2] TensorProto, SequenceProto{name: "seq",
// elem_type: TENSOR, tensor_values: 2 of them}, OptionalProto{name: "opt",
// elem_type: UNDEFINED} (none) and OptionalProto{elem_type: SEQUENCE,
// sequence_value: a sequence of one tensor}.
typedef struct containers {
  uint8_t tensor[64], seq[256], opt[16], nested[300], inner[128];
  size_t tlen, seq_len, opt_len, nested_len;
} containers_t;

static void make_containers(containers_t *c) {
  static float v[2] = {1, 2};
  int64_t dims[1] = {2};
  Onnx__TensorProto p = make(WM_DTYPE_FLOAT, dims, 1);
  p.float_data = v;
  p.n_float_data = 2;
  c->tlen = onnx__tensor_proto__pack(&p, c->tensor);
  size_t n = put(c->seq, 0, 1, (const uint8_t *)"seq", 3);
  c->seq[n++] = 0x10;
  c->seq[n++] = 1;
  n = put(c->seq, n, 3, c->tensor, c->tlen);
  c->seq_len = put(c->seq, n, 3, c->tensor, c->tlen);
  n = put(c->opt, 0, 1, (const uint8_t *)"opt", 3);
  c->opt[n++] = 0x10;
  c->opt[n++] = 0;
  c->opt_len = n;
  size_t m = put(c->nested, 0, 1, (const uint8_t *)"o", 1);
  c->nested[m++] = 0x10;
  c->nested[m++] = 3;
  n = put(c->inner, 0, 1, (const uint8_t *)"s", 1);
  c->inner[n++] = 0x10;
  c->inner[n++] = 1;
  n = put(c->inner, n, 3, c->tensor, c->tlen);
  c->nested_len = put(c->nested, m, 5, c->inner, n);
}

WM_TEST(sequence_and_optional_files_are_refused_as_tensors) {
  containers_t c;
  make_containers(&c);
  wm_tensor_t *t = NULL;
  WM_CHECK_ERR(wm_onnx_tensor_load_buffer(c.seq, c.seq_len, &t, NULL),
               INVALID_ARGUMENT,
               "holds a sequence or optional of 2 values (SequenceProto or "
               "OptionalProto), not a tensor");
  WM_CHECK_ERR(wm_onnx_tensor_load_buffer(c.opt, c.opt_len, &t, NULL),
               INVALID_ARGUMENT, "not a tensor");
  WM_CHECK_ERR(wm_onnx_tensor_load_buffer(c.nested, c.nested_len, &t, NULL),
               INVALID_ARGUMENT, "SequenceProto or OptionalProto");
  WM_CHECK(t == NULL);
}

WM_TEST(sequence_and_optional_files_load_as_items) {
  containers_t c;
  make_containers(&c);
  wm_item_t item;
  char *name = NULL;
  WM_CHECK_OK(wm_onnx_item_load_buffer(c.seq, c.seq_len, WM_TYPE_SEQUENCE,
                                       &item, &name));
  WM_CHECK_STR_EQ(name, "seq");
  WM_CHECK_INT_EQ(item.kind, WM_TYPE_SEQUENCE);
  WM_CHECK_INT_EQ(item.count, 2);
  WM_CHECK_INT_EQ(item.elem_dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(item.elems[1].kind, WM_TYPE_TENSOR);
  WM_CHECK_INT_EQ(wm_tensor_get_f64(item.elems[1].tensor, 1), 2.0);
  char text[96];
  WM_CHECK_STR_EQ(wm_item_format(&item, text, sizeof(text)),
                  "sequence of 2 float tensors");
  wm_item_deinit(&item);
  free(name);
  // A tensor hint falls back to the containers.
  WM_CHECK_OK(
      wm_onnx_item_load_buffer(c.seq, c.seq_len, WM_TYPE_TENSOR, &item, NULL));
  WM_CHECK_INT_EQ(item.kind, WM_TYPE_SEQUENCE);
  wm_item_deinit(&item);
  WM_CHECK_OK(wm_onnx_item_load_buffer(c.opt, c.opt_len, WM_TYPE_OPTIONAL,
                                       &item, NULL));
  WM_CHECK_INT_EQ(item.kind, WM_TYPE_OPTIONAL);
  WM_CHECK_INT_EQ(item.count, 0);
  WM_CHECK_STR_EQ(wm_item_format(&item, text, sizeof(text)),
                  "optional tensor (none)");
  wm_item_deinit(&item);
  WM_CHECK_OK(wm_onnx_item_load_buffer(c.nested, c.nested_len, WM_TYPE_OPTIONAL,
                                       &item, NULL));
  WM_CHECK_INT_EQ(item.count, 1);
  WM_CHECK_INT_EQ(item.elem_kind, WM_TYPE_SEQUENCE);
  WM_CHECK_INT_EQ(item.elems[0].kind, WM_TYPE_SEQUENCE);
  WM_CHECK_INT_EQ(item.elems[0].count, 1);
  WM_CHECK_INT_EQ(item.elem_dtype, WM_DTYPE_FLOAT);
  wm_item_deinit(&item);
  // A plain tensor file is a tensor item.
  WM_CHECK_OK(
      wm_onnx_item_load_buffer(c.tensor, c.tlen, WM_TYPE_TENSOR, &item, NULL));
  WM_CHECK_INT_EQ(item.kind, WM_TYPE_TENSOR);
  WM_CHECK_INT_EQ(item.tensor->count, 2);
  wm_item_deinit(&item);
}

WM_TEST(malformed_containers_are_refused_with_the_reason) {
  containers_t c;
  make_containers(&c);
  wm_item_t item;
  // elem_type SEQUENCE but tensor values.
  uint8_t bad[256];
  memcpy(bad, c.seq, c.seq_len);
  bad[6] = 3;
  WM_CHECK_ERR(
      wm_onnx_item_load_buffer(bad, c.seq_len, WM_TYPE_SEQUENCE, &item, NULL),
      DATA_LOSS, "elem_type 3 does not match its values (field 3)");
  // An "optional" with two values is read as the sequence it is.
  WM_CHECK_OK(wm_onnx_item_load_buffer(c.seq, c.seq_len, WM_TYPE_OPTIONAL,
                                       &item, NULL));
  WM_CHECK_INT_EQ(item.kind, WM_TYPE_SEQUENCE);
  WM_CHECK_INT_EQ(item.count, 2);
  wm_item_deinit(&item);
  // An optional holding values of two fields is neither.
  memcpy(bad, c.opt, c.opt_len);
  size_t n = put(bad, c.opt_len, 3, c.tensor, c.tlen);
  n = put(bad, n, 5, c.inner, 8);
  WM_CHECK_ERR(wm_onnx_item_load_buffer(bad, n, WM_TYPE_OPTIONAL, &item, NULL),
               DATA_LOSS, "OptionalProto holds values in fields 3 and 5");
  // Maps are not read.
  uint8_t map[8] = {0x10, 4, 0x32, 0};
  WM_CHECK_ERR(wm_onnx_item_load_buffer(map, 4, WM_TYPE_SEQUENCE, &item, NULL),
               UNIMPLEMENTED, "SequenceProto of map elements: not supported");
  // Cut in the middle of a value.
  WM_CHECK_ERR(wm_onnx_item_load_buffer(c.seq, c.seq_len - 3, WM_TYPE_SEQUENCE,
                                        &item, NULL),
               DATA_LOSS, "truncated or corrupt SequenceProto");
  WM_CHECK_INT_EQ(item.kind, WM_TYPE_TENSOR);
  WM_CHECK(item.elems == NULL && item.tensor == NULL);
}

WM_TEST(saved_items_load_back_equal) {
  containers_t c;
  make_containers(&c);
  char path[] = "/tmp/wm_onnx_item_testXXXXXX";
  int fd = mkstemp(path);
  WM_CHECK(fd >= 0);
  close(fd);
  wm_item_t item, back;
  char *name = NULL;
  WM_CHECK_OK(wm_onnx_item_load_buffer(c.nested, c.nested_len, WM_TYPE_OPTIONAL,
                                       &item, NULL));
  WM_CHECK_OK(wm_onnx_item_save(&item, "y", path));
  WM_CHECK_OK(wm_onnx_item_load(path, WM_TYPE_OPTIONAL, &back, &name));
  WM_CHECK_STR_EQ(name, "y");
  WM_CHECK_INT_EQ(back.kind, WM_TYPE_OPTIONAL);
  WM_CHECK_INT_EQ(back.count, 1);
  WM_CHECK_INT_EQ(back.elems[0].count, 1);
  WM_CHECK(wm_tensor_equal(back.elems[0].elems[0].tensor,
                           item.elems[0].elems[0].tensor));
  wm_item_deinit(&back);
  free(name);
  // An empty sequence keeps its kind.
  wm_item_deinit(&item);
  WM_CHECK_OK(
      wm_item_init(&item, WM_TYPE_SEQUENCE, WM_TYPE_TENSOR, WM_DTYPE_FLOAT, 0));
  WM_CHECK_OK(wm_onnx_item_save(&item, "e", path));
  WM_CHECK_OK(wm_onnx_item_load(path, WM_TYPE_SEQUENCE, &back, NULL));
  WM_CHECK_INT_EQ(back.kind, WM_TYPE_SEQUENCE);
  WM_CHECK_INT_EQ(back.count, 0);
  wm_item_deinit(&back);
  wm_item_deinit(&item);
  unlink(path);
}

WM_TEST(saved_tensors_of_every_dtype_load_back_equal) {
  char path[] = "/tmp/wm_onnx_tensor_testXXXXXX";
  int fd = mkstemp(path);
  WM_CHECK(fd >= 0);
  close(fd);
  int64_t dims[2] = {2, 3};
  wm_shape_t shape = wm_shape_make(2, dims);
  for (int d = 1; d < WM_DTYPE_COUNT; d++) {
    wm_tensor_t *t, *back = NULL;
    char *name = NULL;
    WM_CHECK_OK(wm_tensor_create((wm_dtype_t)d, &shape, &t));
    for (size_t i = 0; i < t->count; i++) {
      if (d == WM_DTYPE_STRING) {
        char s[32];
        snprintf(s, sizeof(s), "s%zu", i);
        WM_CHECK_OK(wm_tensor_set_string(t, i, s, strlen(s)));
      } else if (wm_dtype_bits((wm_dtype_t)d) < 8) {
        wm_tensor_set_i64(t, i, (int64_t)i + 1);  // packed types wrap
      } else {
        ((uint8_t *)t->data)[i * wm_dtype_size((wm_dtype_t)d)] =
            (uint8_t)(i + 1);
      }
    }
    wm_status_t s = wm_onnx_tensor_save(t, "saved", path);
    if (!s) {
      s = wm_onnx_tensor_load(path, &back, &name);
    }
    bool ok = !s && wm_tensor_equal(t, back) && strcmp(name, "saved") == 0;
    wm_status_free(s);
    wm_tensor_destroy(t);
    wm_tensor_destroy(back);
    free(name);
    if (!ok) {
      unlink(path);
      wm_test_fail(__FILE__, __LINE__, "dtype %s does not survive",
                   wm_dtype_name((wm_dtype_t)d));
      return;
    }
  }
  unlink(path);
}

// Packs |t| through the exporter and returns its raw_data bytes.
static wm_status_t exported_raw(const wm_tensor_t *t, wm_arena_t *arena,
                                ProtobufCBinaryData *out) {
  Onnx__TensorProto p = ONNX__TENSOR_PROTO__INIT;
  WM_RETURN_IF_ERROR(wm_onnx_tensor_to_proto(t, "t", arena, &p));
  *out = p.raw_data;
  return NULL;
}

WM_TEST(four_and_two_bit_raw_data_unpacks_low_bits_first) {
  // 5 int4: -1 7 -8 0 3 -> bytes 0x7f 0x08 0x03 (high nibble of the
  // last byte is padding).
  int64_t d5[1] = {5};
  uint8_t raw4[3] = {0x7f, 0x08, 0xf3};
  Onnx__TensorProto p = make(WM_DTYPE_INT4, d5, 1);
  p.has_raw_data = true;
  p.raw_data.data = raw4;
  p.raw_data.len = 3;
  wm_tensor_t *t;
  WM_CHECK_OK(load(&p, &t));
  int64_t want4[5] = {-1, 7, -8, 0, 3};
  for (size_t i = 0; i < 5; i++) {
    WM_CHECK_INT_EQ(wm_tensor_get_i64(t, i), want4[i]);
  }
  wm_arena_t arena;
  wm_arena_init(&arena);
  ProtobufCBinaryData back;
  WM_CHECK_OK(exported_raw(t, &arena, &back));
  WM_CHECK_INT_EQ(back.len, 3);
  WM_CHECK_INT_EQ(back.data[0], 0x7f);
  WM_CHECK_INT_EQ(back.data[1], 0x08);
  WM_CHECK_INT_EQ(back.data[2], 0x03);  // padding written as zero
  wm_tensor_destroy(t);
  // 6 uint2: 1 2 3 0 3 1 -> 0b00111001 0b0111.
  int64_t d6[1] = {6};
  uint8_t raw2[2] = {0x39, 0x07};
  p = make(WM_DTYPE_UINT2, d6, 1);
  p.has_raw_data = true;
  p.raw_data.data = raw2;
  p.raw_data.len = 2;
  WM_CHECK_OK(load(&p, &t));
  int64_t want2[6] = {1, 2, 3, 0, 3, 1};
  for (size_t i = 0; i < 6; i++) {
    WM_CHECK_INT_EQ(wm_tensor_get_i64(t, i), want2[i]);
  }
  WM_CHECK_OK(exported_raw(t, &arena, &back));
  WM_CHECK_INT_EQ(back.len, 2);
  WM_CHECK_INT_EQ(back.data[0], 0x39);
  WM_CHECK_INT_EQ(back.data[1], 0x07);
  wm_tensor_destroy(t);
  // 3 float4e2m1: 0.5 -6 1.5 -> codes 1 f 3.
  int64_t d3[1] = {3};
  uint8_t rawf[2] = {0xf1, 0x03};
  p = make(WM_DTYPE_FLOAT4E2M1, d3, 1);
  p.has_raw_data = true;
  p.raw_data.data = rawf;
  p.raw_data.len = 2;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(t, 0), 0.5, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(t, 1), -6, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(t, 2), 1.5, 0);
  wm_tensor_destroy(t);
  wm_arena_deinit(&arena);
  // The byte count is that of the packed form.
  p = make(WM_DTYPE_INT4, d5, 1);
  p.has_raw_data = true;
  p.raw_data.data = raw4;
  p.raw_data.len = 2;
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT,
               "raw_data holds 2 bytes, want 3 for int4[5]");
}

WM_TEST(int32_data_carries_float8_codes_and_packed_bytes) {
  int64_t d3[1] = {3};
  int32_t f8[3] = {0x7e, 0xfe, 0x7f};
  Onnx__TensorProto p = make(WM_DTYPE_FLOAT8E4M3FN, d3, 1);
  p.int32_data = f8;
  p.n_int32_data = 3;
  wm_tensor_t *t;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(t, 0), 448, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(t, 1), -448, 0);
  WM_CHECK(isnan(wm_tensor_get_f64(t, 2)));
  wm_tensor_destroy(t);
  // 3 uint4 in two packed entries.
  int32_t u4[2] = {0x21, 0x0f};
  p = make(WM_DTYPE_UINT4, d3, 1);
  p.int32_data = u4;
  p.n_int32_data = 2;
  WM_CHECK_OK(load(&p, &t));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(t, 0), 1);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(t, 1), 2);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(t, 2), 15);
  wm_tensor_destroy(t);
  p.n_int32_data = 3;
  int32_t u4_3[3] = {1, 2, 3};
  p.int32_data = u4_3;
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT,
               "int32_data has 3 values, want 2 for uint4[3]");
  int32_t bad[3] = {0x7e, 256, 0};
  p = make(WM_DTYPE_FLOAT8E5M2, d3, 1);
  p.int32_data = bad;
  p.n_int32_data = 3;
  WM_CHECK_ERR(load(&p, &t), INVALID_ARGUMENT,
               "int32_data[1] = 256 does not fit float8e5m2");
}

WM_TEST(an_empty_item_file_is_refused_not_an_empty_sequence) {
  static const uint8_t none[1] = {0};
  wm_item_t item;
  WM_CHECK_ERR(wm_onnx_item_load_buffer(none, 0, WM_TYPE_TENSOR, &item, NULL),
               INVALID_ARGUMENT, "empty (0 bytes), want a TensorProto");
  WM_CHECK_ERR(wm_onnx_item_load_buffer(none, 0, WM_TYPE_SEQUENCE, &item, NULL),
               INVALID_ARGUMENT, "empty (0 bytes), want a SequenceProto");
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(int32_data_carries_narrow_ints_bool_and_half_float_bits),
      WM_CASE(float_double_int64_and_uint64_fields_load),
      WM_CASE(complex_numbers_take_two_entries_per_element),
      WM_CASE(string_data_fills_string_tensors),
      WM_CASE(raw_data_is_little_endian_and_scalars_and_empties_load),
      WM_CASE(inconsistent_tensors_are_refused_with_the_reason),
      WM_CASE(garbage_and_truncated_buffers_are_data_loss),
      WM_CASE(sequence_and_optional_files_are_refused_as_tensors),
      WM_CASE(sequence_and_optional_files_load_as_items),
      WM_CASE(malformed_containers_are_refused_with_the_reason),
      WM_CASE(saved_items_load_back_equal),
      WM_CASE(saved_tensors_of_every_dtype_load_back_equal),
      WM_CASE(four_and_two_bit_raw_data_unpacks_low_bits_first),
      WM_CASE(int32_data_carries_float8_codes_and_packed_bytes),
      WM_CASE(an_empty_item_file_is_refused_not_an_empty_sequence),
      {NULL, NULL}};
  return wm_test_main(cases);
}
