// What the transports (threads.c, mpi.c) share with the common layer
// (common.c): the communicator, the call record every rank compares, the
// element kernels and the error text. Not installed.
#ifndef WMAP_SRC_COMM_INTERNAL_H_
#define WMAP_SRC_COMM_INTERNAL_H_

#include <stdatomic.h>
#include <string.h>

#include "comm/comm.h"

// One call as every rank must have made it.
typedef struct comm_call {
  uint32_t op;     // wm_comm_op_t
  uint32_t dtype;  // ONNX dtype
  uint32_t redop;  // wm_comm_redop_t (reductions), else 0
  int32_t root;    // Broadcast's root, Send/Recv's peer, else 0
  uint64_t count;  // elements per rank (see comm.h)
  uint64_t seq;    // this rank's collective call number (1-based)
} comm_call_t;

typedef struct comm_transport {
  const char *name;  // "threads" or "mpi"
  // Runs |call| (checked by common.c: dtype, redop, count, root). |algo|
  // is resolved (never AUTO) and valid for the transport.
  wm_status_t (*run)(wm_comm_t *comm, const comm_call_t *call,
                     wm_comm_algo_t algo, const void *send, void *recv);
  // Whether the transport has |algo| for |op|.
  bool (*has_algo)(uint32_t op, wm_comm_algo_t algo);
  // The size rule: the algorithm for |op| over |bytes| per rank.
  wm_comm_algo_t (*pick)(const wm_comm_t *comm, uint32_t op, size_t bytes);
  void (*abort)(wm_comm_t *comm);
  void (*destroy)(wm_comm_t *comm);  // frees comm->impl and its own state
} comm_transport_t;

enum { COMM_N_OPS = WM_COMM_BARRIER + 1 };

struct wm_comm {
  const comm_transport_t *tr;
  void *impl;  // the transport's
  char id[WM_COMM_ID_MAX];
  int32_t rank;
  int32_t size;
  uint64_t seq;  // collective calls started (Send/Recv excluded)
  double timeout_s;
  wm_comm_algo_t algo;  // forced, or AUTO
  atomic_bool failed;   // a call failed: the communicator is unusable
  uint64_t calls[COMM_N_OPS];
  uint64_t bytes[COMM_N_OPS];
};

// IEEE half precision; gcc and clang convert with round to nearest even.
__extension__ typedef _Float16 f16_t;

static inline float comm_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static inline uint16_t comm_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return (uint16_t)((u >> 16) | 0x40);  // quiet NaN
  }
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return (uint16_t)(u >> 16);
}

// memcpy that accepts NULL pointers when |n| is 0 (empty messages).
static inline void comm_copy(void *dst, const void *src, size_t n) {
  if (n) {
    memcpy(dst, src, n);
  }
}

// dst[i] = a[i] op b[i] for |n| elements (dst may be a or b).
void comm_reduce(void *dst, const void *a, const void *b, size_t n,
                 uint32_t dtype, uint32_t redop);
// x[i] /= |div| (AVG's final step; floating dtypes).
void comm_divide(void *x, size_t n, uint32_t dtype, int32_t div);
// Element range [*begin, *end) of chunk |c| of |n| over |count| elements
// (balanced, boundaries on 16-element multiples where possible).
void comm_chunk(size_t count, int32_t n, int32_t c, size_t *begin, size_t *end);
// An error from |comm| during |call|: "communicator ID, rank R of N:
// AllReduce of COUNT DTYPE (REDOP), call SEQ: <message>". Marks the
// communicator failed.
wm_status_t comm_fail(wm_comm_t *comm, const comm_call_t *call, const char *fmt,
                      ...) WM_PRINTF(3, 4);
// "AllReduce of 1024 float32 (sum)" for a call, into |buf|.
void comm_call_text(const comm_call_t *call, char *buf, size_t cap);
// Whether two ranks' records of a call agree (seq excluded for Send/Recv).
bool comm_call_same(const comm_call_t *a, const comm_call_t *b);

// Transports: make |comm|'s impl; the common layer fills the rest first.
wm_status_t comm_threads_open(wm_comm_t *comm, const char *key);
wm_status_t comm_mpi_open(wm_comm_t *comm);
extern const comm_transport_t comm_threads_transport;
extern const comm_transport_t comm_mpi_transport;

#endif  // WMAP_SRC_COMM_INTERNAL_H_
