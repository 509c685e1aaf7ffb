// Known data and its expected results, for tests and comm-bench: each
// rank's input is a function of (rank, element) whose reductions are exact
// in every dtype (small integers; powers of two for products), so a
// result is compared exactly except for AVG's division.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static double value(uint32_t redop, int32_t rank, size_t i) {
  if (redop == WM_COMM_PROD) {
    static const double v[] = {1, -1, 2, -2, 1, 1, -1};
    return v[(i * 3 + (size_t)rank * 5) % 7];
  }
  return (double)((i * 7 + (size_t)rank * 13) % 9) - 4;
}

static void put(void *buf, size_t i, uint32_t dtype, double v) {
  switch (dtype) {
    case 1:
      ((float *)buf)[i] = (float)v;
      break;
    case 2:
      ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v;
      break;
    case 3:
      ((int8_t *)buf)[i] = (int8_t)(int64_t)v;
      break;
    case 6:
      ((int32_t *)buf)[i] = (int32_t)v;
      break;
    case 7:
      ((int64_t *)buf)[i] = (int64_t)v;
      break;
    case 10:
      ((f16_t *)buf)[i] = (f16_t)(float)v;
      break;
    case 11:
      ((double *)buf)[i] = v;
      break;
    case 16:
      ((uint16_t *)buf)[i] = comm_f32_to_bf16((float)v);
      break;
    default:
      break;
  }
}

static double get(const void *buf, size_t i, uint32_t dtype) {
  switch (dtype) {
    case 1:
      return ((const float *)buf)[i];
    case 2:
      return ((const uint8_t *)buf)[i];
    case 3:
      return ((const int8_t *)buf)[i];
    case 6:
      return ((const int32_t *)buf)[i];
    case 7:
      return (double)((const int64_t *)buf)[i];
    case 10:
      return (double)((const f16_t *)buf)[i];
    case 11:
      return ((const double *)buf)[i];
    case 16:
      return comm_bf16_to_f32(((const uint16_t *)buf)[i]);
    default:
      return 0;
  }
}

void wm_comm_fill(void *buf, size_t count, uint32_t dtype, uint32_t redop,
                  int32_t rank, size_t first) {
  for (size_t i = 0; i < count; i++) {
    put(buf, i, dtype, value(redop, rank, first + i));
  }
}

// The reduction of element |i| over |size| ranks, as the dtype holds it.
static double as_dtype(uint32_t dtype, double v) {
  char cell[8];
  put(cell, 0, dtype, v);
  return get(cell, 0, dtype);
}

static double expect_reduced(uint32_t dtype, uint32_t redop, int32_t size,
                             size_t i) {
  double acc = as_dtype(dtype, value(redop, 0, i));
  for (int32_t r = 1; r < size; r++) {
    double v = as_dtype(dtype, value(redop, r, i));
    switch (redop) {
      case WM_COMM_PROD:
        acc *= v;
        break;
      case WM_COMM_MIN:
        acc = v < acc ? v : acc;
        break;
      case WM_COMM_MAX:
        acc = v > acc ? v : acc;
        break;
      default:
        acc += v;
        break;
    }
  }
  acc = as_dtype(dtype, acc);  // integers wrap
  if (redop == WM_COMM_AVG) {
    acc = dtype == 11 ? acc / size
                      : as_dtype(dtype, (double)((float)acc / (float)size));
  }
  return acc;
}

wm_status_t wm_comm_verify(uint32_t op, const void *recv, size_t count,
                           uint32_t dtype, uint32_t arg, int32_t rank,
                           int32_t size) {
  size_t n = op == WM_COMM_ALL_GATHER ? count * (size_t)size : count;
  bool reduces = op == WM_COMM_ALL_REDUCE || op == WM_COMM_REDUCE_SCATTER;
  uint32_t redop = reduces ? arg : WM_COMM_SUM;
  for (size_t i = 0; i < n; i++) {
    double want;
    switch (op) {
      case WM_COMM_ALL_REDUCE:
        want = expect_reduced(dtype, redop, size, i);
        break;
      case WM_COMM_REDUCE_SCATTER:
        want = expect_reduced(dtype, redop, size, (size_t)rank * count + i);
        break;
      case WM_COMM_ALL_GATHER:
        want = value(redop, (int32_t)(i / count), i % count);
        break;
      default:  // Broadcast, Send/Recv: the root's or peer's data
        want = value(redop, (int32_t)arg, i);
        break;
    }
    want = as_dtype(dtype, want);
    double got = get(recv, i, dtype);
    if (got != want && !(isnan(got) && isnan(want))) {
      return WM_ERROR(DATA_LOSS,
                      "%s of %zu %s%s%s on rank %d of %d: element %zu is %.9g, "
                      "want %.9g",
                      wm_comm_op_name(op), count, wm_comm_dtype_name(dtype),
                      reduces ? " " : "",
                      reduces ? wm_comm_redop_name(redop) : "", rank, size, i,
                      got, want);
    }
  }
  return NULL;
}

// One call of the sweep: fills, runs, verifies.
static wm_status_t one(wm_comm_t *c, uint32_t op, size_t count, uint32_t dtype,
                       uint32_t redop, bool in_place) {
  int32_t r = wm_comm_rank(c), n = wm_comm_size(c);
  size_t es = wm_comm_dtype_size(dtype);
  size_t total = count * (size_t)n;
  char *a = calloc(total * es + 64, 1), *b = calloc(total * es + 64, 1);
  if (!a || !b) {
    free(a);
    free(b);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for the check");
  }
  wm_status_t s = NULL;
  int32_t root = (int32_t)(count % (size_t)n);
  switch (op) {
    case WM_COMM_ALL_REDUCE:
      wm_comm_fill(a, count, dtype, redop, r, 0);
      s = wm_comm_all_reduce(c, a, in_place ? a : b, count, dtype, redop);
      if (!s) {
        s = wm_comm_verify(op, in_place ? a : b, count, dtype, redop, r, n);
      }
      break;
    case WM_COMM_REDUCE_SCATTER:
      wm_comm_fill(a, total, dtype, redop, r, 0);
      s = wm_comm_reduce_scatter(
          c, a, in_place ? a + (size_t)r * count * es : b, count, dtype, redop);
      if (!s) {
        s = wm_comm_verify(op, in_place ? a + (size_t)r * count * es : b, count,
                           dtype, redop, r, n);
      }
      break;
    case WM_COMM_ALL_GATHER: {
      char *mine = in_place ? b + (size_t)r * count * es : a;
      wm_comm_fill(mine, count, dtype, WM_COMM_SUM, r, 0);
      s = wm_comm_all_gather(c, mine, b, count, dtype);
      if (!s) {
        s = wm_comm_verify(op, b, count, dtype, 0, r, n);
      }
      break;
    }
    default:  // Broadcast
      if (r == root) {
        wm_comm_fill(a, count, dtype, WM_COMM_SUM, r, 0);
      }
      s = wm_comm_broadcast(c, a, in_place ? a : b, count, dtype, root);
      if (!s) {
        s = wm_comm_verify(op, in_place ? a : b, count, dtype, (uint32_t)root,
                           r, n);
      }
      break;
  }
  free(a);
  free(b);
  return s;
}

wm_status_t wm_comm_conform(wm_comm_t *comm, size_t large, size_t *out_calls) {
  static const uint32_t dtypes[] = {1, 10, 16, 11, 6, 7, 3, 2};
  const size_t counts[] = {0, 1, 17, 1000, large};
  static const wm_comm_algo_t algos[] = {WM_COMM_ALGO_AUTO, WM_COMM_ALGO_RING,
                                         WM_COMM_ALGO_DIRECT, WM_COMM_ALGO_RD};
  size_t calls = 0;
  wm_status_t s = NULL;
  for (size_t a = 0; !s && a < 4; a++) {
    wm_status_t e = wm_comm_set_algo(comm, algos[a]);
    if (e) {  // not this transport's
      wm_status_free(e);
      continue;
    }
    for (uint32_t op = WM_COMM_ALL_REDUCE; !s && op <= WM_COMM_BROADCAST;
         op++) {
      bool reduces = op == WM_COMM_ALL_REDUCE || op == WM_COMM_REDUCE_SCATTER;
      for (size_t d = 0; !s && d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
        for (uint32_t redop = 0; !s && redop <= (reduces ? WM_COMM_AVG : 0);
             redop++) {
          if (reduces && !wm_comm_redop_ok(dtypes[d], redop)) {
            continue;
          }
          for (size_t k = 0; !s && k < sizeof(counts) / sizeof(counts[0]);
               k++) {
            for (int ip = 0; !s && ip < 2; ip++) {
              s = one(comm, op, counts[k], dtypes[d], redop, ip == 1);
              calls++;
              if (s) {
                s = wm_status_annotate(s, "%s algorithm, %s",
                                       wm_comm_algo_name(algos[a]),
                                       ip ? "in place" : "out of place");
              }
            }
          }
        }
      }
    }
  }
  if (!s) {
    s = wm_comm_set_algo(comm, WM_COMM_ALGO_AUTO);
  }
  if (out_calls) {
    *out_calls = calls;
  }
  return s;
}
