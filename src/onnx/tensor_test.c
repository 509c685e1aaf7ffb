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

WM_TEST(sequence_and_optional_files_are_refused_as_such) {
  float v[2] = {1, 2};
  int64_t dims[1] = {2};
  Onnx__TensorProto p = make(WM_DTYPE_FLOAT, dims, 1);
  p.float_data = v;
  p.n_float_data = 2;
  uint8_t tensor[64];
  size_t tlen = onnx__tensor_proto__pack(&p, tensor);
  // SequenceProto{name: "seq", elem_type: TENSOR, tensor_values: 2}.
  uint8_t seq[256];
  size_t n = put(seq, 0, 1, (const uint8_t *)"seq", 3);
  seq[n++] = 0x10;
  seq[n++] = 1;
  n = put(seq, n, 3, tensor, tlen);
  n = put(seq, n, 3, tensor, tlen);
  wm_tensor_t *t = NULL;
  WM_CHECK_ERR(wm_onnx_tensor_load_buffer(seq, n, &t, NULL), UNIMPLEMENTED,
               "holds a sequence (SequenceProto of 2 values), not a tensor");
  // OptionalProto{name: "opt", elem_type: UNDEFINED}: an empty optional.
  uint8_t opt[16];
  n = put(opt, 0, 1, (const uint8_t *)"opt", 3);
  opt[n++] = 0x10;
  opt[n++] = 0;
  WM_CHECK_ERR(wm_onnx_tensor_load_buffer(opt, n, &t, NULL), UNIMPLEMENTED,
               "not a tensor");
  // OptionalProto{elem_type: SEQUENCE, sequence_value: the sequence}.
  uint8_t nested[300];
  size_t m = put(nested, 0, 1, (const uint8_t *)"o", 1);
  nested[m++] = 0x10;
  nested[m++] = 3;
  n = put(seq, 0, 1, (const uint8_t *)"s", 1);
  seq[n++] = 0x10;
  seq[n++] = 1;
  n = put(seq, n, 3, tensor, tlen);
  m = put(nested, m, 5, seq, n);
  WM_CHECK_ERR(wm_onnx_tensor_load_buffer(nested, m, &t, NULL), UNIMPLEMENTED,
               "SequenceProto or OptionalProto");
  WM_CHECK(t == NULL);
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

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(int32_data_carries_narrow_ints_bool_and_half_float_bits),
      WM_CASE(float_double_int64_and_uint64_fields_load),
      WM_CASE(complex_numbers_take_two_entries_per_element),
      WM_CASE(string_data_fills_string_tensors),
      WM_CASE(raw_data_is_little_endian_and_scalars_and_empties_load),
      WM_CASE(inconsistent_tensors_are_refused_with_the_reason),
      WM_CASE(garbage_and_truncated_buffers_are_data_loss),
      WM_CASE(sequence_and_optional_files_are_refused_as_such),
      WM_CASE(saved_tensors_of_every_dtype_load_back_equal),
      WM_CASE(four_and_two_bit_raw_data_unpacks_low_bits_first),
      WM_CASE(int32_data_carries_float8_codes_and_packed_bytes),
      {NULL, NULL}};
  return wm_test_main(cases);
}
