// The common layer: names, argument checks, call records, counters, the
// element kernels and the dispatch to a transport.
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

// ONNX TensorProto.DataType numbers (ARCHITECTURE decision 2).
enum {
  DT_FLOAT = 1,
  DT_UINT8 = 2,
  DT_INT8 = 3,
  DT_INT32 = 6,
  DT_INT64 = 7,
  DT_FLOAT16 = 10,
  DT_DOUBLE = 11,
  DT_BFLOAT16 = 16,
};

const char *wm_comm_op_name(uint32_t op) {
  static const char *const names[] = {
      "?",         "AllReduce", "AllGather", "ReduceScatter",
      "Broadcast", "Send",      "Recv",      "Barrier"};
  return op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

const char *wm_comm_redop_name(uint32_t redop) {
  static const char *const names[] = {"sum", "prod", "min", "max", "avg"};
  return redop < sizeof(names) / sizeof(names[0]) ? names[redop] : "?";
}

const char *wm_comm_dtype_name(uint32_t dtype) {
  switch (dtype) {
    case DT_FLOAT:
      return "float32";
    case DT_UINT8:
      return "uint8";
    case DT_INT8:
      return "int8";
    case DT_INT32:
      return "int32";
    case DT_INT64:
      return "int64";
    case DT_FLOAT16:
      return "float16";
    case DT_DOUBLE:
      return "float64";
    case DT_BFLOAT16:
      return "bfloat16";
    default:
      return "?";
  }
}

const char *wm_comm_algo_name(wm_comm_algo_t algo) {
  switch (algo) {
    case WM_COMM_ALGO_AUTO:
      return "auto";
    case WM_COMM_ALGO_RING:
      return "ring";
    case WM_COMM_ALGO_DIRECT:
      return "direct";
    case WM_COMM_ALGO_RD:
      return "rd";
  }
  return "?";
}

bool wm_comm_algo_parse(const char *text, wm_comm_algo_t *out) {
  static const wm_comm_algo_t all[] = {WM_COMM_ALGO_AUTO, WM_COMM_ALGO_RING,
                                       WM_COMM_ALGO_DIRECT, WM_COMM_ALGO_RD};
  for (size_t i = 0; text && i < sizeof(all) / sizeof(all[0]); i++) {
    if (strcmp(text, wm_comm_algo_name(all[i])) == 0) {
      *out = all[i];
      return true;
    }
  }
  return false;
}

size_t wm_comm_dtype_size(uint32_t dtype) {
  switch (dtype) {
    case DT_UINT8:
    case DT_INT8:
      return 1;
    case DT_FLOAT16:
    case DT_BFLOAT16:
      return 2;
    case DT_FLOAT:
    case DT_INT32:
      return 4;
    case DT_INT64:
    case DT_DOUBLE:
      return 8;
    default:
      return 0;
  }
}

static bool is_float(uint32_t dtype) {
  return dtype == DT_FLOAT || dtype == DT_DOUBLE || dtype == DT_FLOAT16 ||
         dtype == DT_BFLOAT16;
}

bool wm_comm_redop_ok(uint32_t dtype, uint32_t redop) {
  if (wm_comm_dtype_size(dtype) == 0) {
    return false;
  }
  return redop <= WM_COMM_MAX || (redop == WM_COMM_AVG && is_float(dtype));
}

double wm_comm_timeout(void) {
  const char *s = getenv("WMAP_COMM_TIMEOUT");
  if (!s || !*s) {
    return 30.0;
  }
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v > 0) || v > 86400) {
    wm_log(WM_LOG_WARN,
           "WMAP_COMM_TIMEOUT=\"%.40s\" is not a number of seconds in "
           "(0, 86400]; using 30",
           s);
    return 30.0;
  }
  return v;
}

// -------------------------------------------------------------- kernels

// NaN wins min and max, as in the ONNX reductions.
#define MINOF(p, q) ((p) < (q) || (p) != (p) ? (p) : (q))
#define MAXOF(p, q) ((p) > (q) || (p) != (p) ? (p) : (q))

#define LOOP(T, EXPR)                \
  do {                               \
    T *d_ = dst;                     \
    const T *x_ = a, *y_ = b;        \
    for (size_t i = 0; i < n; i++) { \
      T p = x_[i], q = y_[i];        \
      d_[i] = (T)(EXPR);             \
    }                                \
  } while (0)

#define BY_REDOP(T)           \
  do {                        \
    switch (redop) {          \
      case WM_COMM_SUM:       \
      case WM_COMM_AVG:       \
        LOOP(T, p + q);       \
        break;                \
      case WM_COMM_PROD:      \
        LOOP(T, p *q);        \
        break;                \
      case WM_COMM_MIN:       \
        LOOP(T, MINOF(p, q)); \
        break;                \
      default:                \
        LOOP(T, MAXOF(p, q)); \
        break;                \
    }                         \
  } while (0)

// Integers wrap as two's complement does (no undefined overflow).
#define INT_LOOP(T, U)               \
  do {                               \
    T *d_ = dst;                     \
    const T *x_ = a, *y_ = b;        \
    for (size_t i = 0; i < n; i++) { \
      T p = x_[i], q = y_[i];        \
      switch (redop) {               \
        case WM_COMM_SUM:            \
          d_[i] = (T)((U)p + (U)q);  \
          break;                     \
        case WM_COMM_PROD:           \
          d_[i] = (T)((U)p * (U)q);  \
          break;                     \
        case WM_COMM_MIN:            \
          d_[i] = p < q ? p : q;     \
          break;                     \
        default:                     \
          d_[i] = p > q ? p : q;     \
          break;                     \
      }                              \
    }                                \
  } while (0)

static void reduce_bf16(uint16_t *dst, const uint16_t *a, const uint16_t *b,
                        size_t n, uint32_t redop) {
  for (size_t i = 0; i < n; i++) {
    float p = comm_bf16_to_f32(a[i]), q = comm_bf16_to_f32(b[i]), r;
    switch (redop) {
      case WM_COMM_SUM:
      case WM_COMM_AVG:
        r = p + q;
        break;
      case WM_COMM_PROD:
        r = p * q;
        break;
      case WM_COMM_MIN:
        r = MINOF(p, q);
        break;
      default:
        r = MAXOF(p, q);
        break;
    }
    dst[i] = comm_f32_to_bf16(r);
  }
}

void comm_reduce(void *dst, const void *a, const void *b, size_t n,
                 uint32_t dtype, uint32_t redop) {
  switch (dtype) {
    case DT_FLOAT:
      BY_REDOP(float);
      break;
    case DT_DOUBLE:
      BY_REDOP(double);
      break;
    case DT_FLOAT16:
      BY_REDOP(f16_t);
      break;
    case DT_BFLOAT16:
      reduce_bf16(dst, a, b, n, redop);
      break;
    case DT_INT32:
      INT_LOOP(int32_t, uint32_t);
      break;
    case DT_INT64:
      INT_LOOP(int64_t, uint64_t);
      break;
    case DT_INT8:
      INT_LOOP(int8_t, uint8_t);
      break;
    case DT_UINT8:
      INT_LOOP(uint8_t, uint8_t);
      break;
    default:
      break;
  }
}

void comm_divide(void *x, size_t n, uint32_t dtype, int32_t div) {
  switch (dtype) {
    case DT_FLOAT: {
      float *p = x;
      for (size_t i = 0; i < n; i++) {
        p[i] /= (float)div;
      }
      break;
    }
    case DT_DOUBLE: {
      double *p = x;
      for (size_t i = 0; i < n; i++) {
        p[i] /= div;
      }
      break;
    }
    case DT_FLOAT16: {
      f16_t *p = x;
      for (size_t i = 0; i < n; i++) {
        p[i] = (f16_t)((float)p[i] / (float)div);
      }
      break;
    }
    case DT_BFLOAT16: {
      uint16_t *p = x;
      for (size_t i = 0; i < n; i++) {
        p[i] = comm_f32_to_bf16(comm_bf16_to_f32(p[i]) / (float)div);
      }
      break;
    }
    default:
      break;
  }
}

void comm_chunk(size_t count, int32_t n, int32_t c, size_t *begin,
                size_t *end) {
  // Units of 16 elements split evenly; the last chunk takes the tail.
  size_t units = count / 16;
  size_t b = units * (size_t)c / (size_t)n * 16;
  size_t e = c + 1 == n ? count : units * (size_t)(c + 1) / (size_t)n * 16;
  if (units < (size_t)n) {  // too small to align: split elements
    b = count * (size_t)c / (size_t)n;
    e = count * (size_t)(c + 1) / (size_t)n;
  }
  *begin = b;
  *end = e;
}

// ------------------------------------------------------------- records

void comm_call_text(const comm_call_t *call, char *buf, size_t cap) {
  const char *op = wm_comm_op_name(call->op);
  const char *dt = wm_comm_dtype_name(call->dtype);
  unsigned long long n = (unsigned long long)call->count;
  switch (call->op) {
    case WM_COMM_ALL_REDUCE:
    case WM_COMM_REDUCE_SCATTER:
      snprintf(buf, cap, "%s of %llu %s (%s)", op, n, dt,
               wm_comm_redop_name(call->redop));
      break;
    case WM_COMM_BROADCAST:
      snprintf(buf, cap, "%s of %llu %s from rank %d", op, n, dt, call->root);
      break;
    case WM_COMM_SEND:
      snprintf(buf, cap, "%s of %llu %s to rank %d", op, n, dt, call->root);
      break;
    case WM_COMM_RECV:
      snprintf(buf, cap, "%s of %llu %s from rank %d", op, n, dt, call->root);
      break;
    case WM_COMM_BARRIER:
      snprintf(buf, cap, "%s", op);
      break;
    default:
      snprintf(buf, cap, "%s of %llu %s", op, n, dt);
      break;
  }
}

bool comm_call_same(const comm_call_t *a, const comm_call_t *b) {
  return a->op == b->op && a->dtype == b->dtype && a->redop == b->redop &&
         a->root == b->root && a->count == b->count && a->seq == b->seq;
}

wm_status_t comm_fail(wm_comm_t *comm, const comm_call_t *call, const char *fmt,
                      ...) {
  atomic_store(&comm->failed, true);
  char what[160];
  comm_call_text(call, what, sizeof(what));
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (call->op == WM_COMM_SEND || call->op == WM_COMM_RECV) {
    return WM_ERROR(UNAVAILABLE, "communicator %s, rank %d of %d: %s: %s",
                    comm->id, comm->rank, comm->size, what, msg);
  }
  return WM_ERROR(UNAVAILABLE,
                  "communicator %s, rank %d of %d: %s, call %llu: %s", comm->id,
                  comm->rank, comm->size, what, (unsigned long long)call->seq,
                  msg);
}

// ------------------------------------------------------------- the API

static _Thread_local wm_comm_t *current;

void wm_comm_set_current(wm_comm_t *comm) {
  current = comm;
}
wm_comm_t *wm_comm_current(void) {
  return current;
}

void wm_comm_new_id(char out[WM_COMM_ID_MAX]) {
  static atomic_uint_fast64_t next = 1;
  unsigned long long n = (unsigned long long)atomic_fetch_add(&next, 1);
  snprintf(out, WM_COMM_ID_MAX, "threads:%ld.%llu", (long)getpid(), n);
}

wm_status_t wm_comm_open(const char *id, int32_t rank, int32_t size,
                         wm_comm_t **out_comm) {
  *out_comm = NULL;
  if (!id || strlen(id) >= WM_COMM_ID_MAX) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "communicator id %s (want \"threads:KEY\" or "
                    "\"mpi:world\", under %d bytes)",
                    id ? "is too long" : "is missing", WM_COMM_ID_MAX);
  }
  if (size < 1 || size > 4096 || rank < 0 || rank >= size) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "communicator %s: rank %d of %d is out of range (size "
                    "1..4096, rank 0..size-1)",
                    id, rank, size);
  }
  wm_comm_t *c = wm_calloc(1, sizeof(*c));
  if (!c) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for communicator %s",
                    id);
  }
  snprintf(c->id, sizeof(c->id), "%s", id);
  c->rank = rank;
  c->size = size;
  c->timeout_s = wm_comm_timeout();
  const char *algo = getenv("WMAP_COMM_ALGO");
  if (algo && *algo && !wm_comm_algo_parse(algo, &c->algo)) {
    wm_log(WM_LOG_WARN,
           "WMAP_COMM_ALGO=\"%.40s\" is not auto, ring, direct or rd; "
           "using auto",
           algo);
  }
  atomic_init(&c->failed, false);
  wm_status_t s;
  if (strncmp(id, "threads:", 8) == 0 && id[8]) {
    c->tr = &comm_threads_transport;
    s = comm_threads_open(c, id + 8);
  } else if (strcmp(id, "mpi:world") == 0) {
    c->tr = &comm_mpi_transport;
    s = comm_mpi_open(c);
  } else {
    s = WM_ERROR(INVALID_ARGUMENT,
                 "communicator id \"%s\" is neither \"threads:KEY\" nor "
                 "\"mpi:world\"",
                 id);
  }
  if (s) {
    free(c);
    return s;
  }
  *out_comm = c;
  return NULL;
}

void wm_comm_destroy(wm_comm_t *comm) {
  if (comm) {
    comm->tr->destroy(comm);
    free(comm);
  }
}

void wm_comm_abort(wm_comm_t *comm) {
  if (comm) {
    atomic_store(&comm->failed, true);
    comm->tr->abort(comm);
  }
}

int32_t wm_comm_rank(const wm_comm_t *comm) {
  return comm->rank;
}
int32_t wm_comm_size(const wm_comm_t *comm) {
  return comm->size;
}
const char *wm_comm_id(const wm_comm_t *comm) {
  return comm->id;
}
const char *wm_comm_transport(const wm_comm_t *comm) {
  return comm->tr->name;
}

wm_status_t wm_comm_set_algo(wm_comm_t *comm, wm_comm_algo_t algo) {
  if (algo != WM_COMM_ALGO_AUTO &&
      !comm->tr->has_algo(WM_COMM_ALL_REDUCE, algo) &&
      !comm->tr->has_algo(WM_COMM_ALL_GATHER, algo)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "communicator %s: the %s transport has no \"%s\" "
                    "algorithm",
                    comm->id, comm->tr->name, wm_comm_algo_name(algo));
  }
  comm->algo = algo;
  return NULL;
}

wm_comm_algo_t wm_comm_algo_for(const wm_comm_t *comm, uint32_t op,
                                size_t bytes) {
  if (comm->algo != WM_COMM_ALGO_AUTO && comm->tr->has_algo(op, comm->algo)) {
    return comm->algo;
  }
  return comm->tr->pick(comm, op, bytes);
}

wm_comm_algo_t wm_comm_algo_rule(const char *transport, uint32_t op,
                                 size_t bytes, int32_t size,
                                 wm_comm_algo_t forced) {
  const comm_transport_t *tr = strcmp(transport, "mpi") == 0
                                   ? &comm_mpi_transport
                                   : &comm_threads_transport;
  wm_comm_t c = {.tr = tr, .size = size, .algo = forced};
  return wm_comm_algo_for(&c, op, bytes);
}

void wm_comm_counts(const wm_comm_t *comm, uint32_t op, uint64_t *out_calls,
                    uint64_t *out_bytes) {
  bool ok = op < COMM_N_OPS;
  *out_calls = ok ? comm->calls[op] : 0;
  *out_bytes = ok ? comm->bytes[op] : 0;
}

// A call refused before it starts: "communicator ID[, rank R of N]: CALL:
// MESSAGE". The call's text is made here only, off the path of calls that
// go ahead.
static wm_status_t refuse(const wm_comm_t *comm, const comm_call_t *call,
                          wm_status_code_t code, bool with_rank,
                          const char *fmt, ...) WM_PRINTF(5, 6);
static wm_status_t refuse(const wm_comm_t *comm, const comm_call_t *call,
                          wm_status_code_t code, bool with_rank,
                          const char *fmt, ...) {
  char what[160], where[48] = "", msg[320];
  comm_call_text(call, what, sizeof(what));
  if (with_rank) {
    snprintf(where, sizeof(where), ", rank %d of %d", comm->rank, comm->size);
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return wm_status_make(code, __FILE__, __LINE__, "communicator %s%s: %s: %s",
                        comm->id, where, what, msg);
}

// Checks |call| and runs it; counts it when it succeeds.
static wm_status_t run(wm_comm_t *comm, comm_call_t *call, const void *send,
                       void *recv) {
  size_t es = wm_comm_dtype_size(call->dtype);
  bool reduces =
      call->op == WM_COMM_ALL_REDUCE || call->op == WM_COMM_REDUCE_SCATTER;
  size_t per_rank = 0, total = 0;
  if (call->op != WM_COMM_BARRIER) {
    if (es == 0) {
      return refuse(comm, call, WM_STATUS_INVALID_ARGUMENT, false,
                    "dtype %u is not carried (float32, float16, bfloat16, "
                    "float64, int32, int64, int8, uint8)",
                    call->dtype);
    }
    if (reduces && !wm_comm_redop_ok(call->dtype, call->redop)) {
      return refuse(comm, call, WM_STATUS_INVALID_ARGUMENT, false,
                    "reduction %u does not apply to %s (sum, prod, min, max; "
                    "avg on floating types)",
                    call->redop, wm_comm_dtype_name(call->dtype));
    }
    if (!wm_checked_mul(call->count, es, &per_rank) ||
        !wm_checked_mul(per_rank, (size_t)comm->size, &total) ||
        total > ((size_t)1 << 46)) {
      return refuse(comm, call, WM_STATUS_INVALID_ARGUMENT, false,
                    "the buffers would exceed 2^46 bytes");
    }
    bool sends = call->op != WM_COMM_RECV &&
                 !(call->op == WM_COMM_BROADCAST && call->root != comm->rank);
    bool recvs = call->op != WM_COMM_SEND;
    if (call->count > 0 && ((sends && !send) || (recvs && !recv))) {
      return refuse(comm, call, WM_STATUS_INVALID_ARGUMENT, false,
                    "a NULL buffer");
    }
  }
  if ((call->op == WM_COMM_BROADCAST || call->op == WM_COMM_SEND ||
       call->op == WM_COMM_RECV) &&
      (call->root < 0 || call->root >= comm->size ||
       (call->op != WM_COMM_BROADCAST && call->root == comm->rank))) {
    return refuse(comm, call, WM_STATUS_INVALID_ARGUMENT, false,
                  "rank %d is not a %s (this is rank %d of %d)", call->root,
                  call->op == WM_COMM_BROADCAST ? "rank" : "peer", comm->rank,
                  comm->size);
  }
  if (atomic_load(&comm->failed)) {
    return refuse(comm, call, WM_STATUS_FAILED_PRECONDITION, true,
                  "an earlier call failed or the communicator was aborted");
  }
  if (call->op != WM_COMM_SEND && call->op != WM_COMM_RECV) {
    call->seq = ++comm->seq;
  }
  size_t bytes =
      call->op == WM_COMM_ALL_GATHER || call->op == WM_COMM_REDUCE_SCATTER
          ? total
          : per_rank;
  wm_comm_algo_t algo = comm->size == 1
                            ? WM_COMM_ALGO_DIRECT
                            : wm_comm_algo_for(comm, call->op, per_rank);
  if (comm->size == 1 && !comm->tr->has_algo(call->op, algo)) {
    algo = comm->tr->pick(comm, call->op, per_rank);
  }
  WM_RETURN_IF_ERROR(comm->tr->run(comm, call, algo, send, recv));
  comm->calls[call->op]++;
  comm->bytes[call->op] += bytes;
  return NULL;
}

wm_status_t wm_comm_all_reduce(wm_comm_t *comm, const void *send, void *recv,
                               size_t count, uint32_t dtype, uint32_t redop) {
  comm_call_t c = {
      .op = WM_COMM_ALL_REDUCE, .dtype = dtype, .redop = redop, .count = count};
  return run(comm, &c, send, recv);
}

wm_status_t wm_comm_all_gather(wm_comm_t *comm, const void *send, void *recv,
                               size_t count, uint32_t dtype) {
  comm_call_t c = {.op = WM_COMM_ALL_GATHER, .dtype = dtype, .count = count};
  return run(comm, &c, send, recv);
}

wm_status_t wm_comm_reduce_scatter(wm_comm_t *comm, const void *send,
                                   void *recv, size_t count, uint32_t dtype,
                                   uint32_t redop) {
  comm_call_t c = {.op = WM_COMM_REDUCE_SCATTER,
                   .dtype = dtype,
                   .redop = redop,
                   .count = count};
  return run(comm, &c, send, recv);
}

wm_status_t wm_comm_broadcast(wm_comm_t *comm, const void *send, void *recv,
                              size_t count, uint32_t dtype, int32_t root) {
  comm_call_t c = {
      .op = WM_COMM_BROADCAST, .dtype = dtype, .root = root, .count = count};
  return run(comm, &c, send, recv);
}

wm_status_t wm_comm_send(wm_comm_t *comm, const void *buf, size_t count,
                         uint32_t dtype, int32_t peer) {
  comm_call_t c = {
      .op = WM_COMM_SEND, .dtype = dtype, .root = peer, .count = count};
  return run(comm, &c, buf, NULL);
}

wm_status_t wm_comm_recv(wm_comm_t *comm, void *buf, size_t count,
                         uint32_t dtype, int32_t peer) {
  comm_call_t c = {
      .op = WM_COMM_RECV, .dtype = dtype, .root = peer, .count = count};
  return run(comm, &c, NULL, buf);
}

wm_status_t wm_comm_barrier(wm_comm_t *comm) {
  comm_call_t c = {.op = WM_COMM_BARRIER};
  return run(comm, &c, NULL, NULL);
}
