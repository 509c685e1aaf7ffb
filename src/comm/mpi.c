// Collectives among the processes of an MPI job, over MPI point-to-point
// messages on a duplicate of MPI_COMM_WORLD (so they never match the
// native peer's traffic). Every request is polled against the timeout, so
// a dead or stuck peer ends in an error, never a hang. Each collective
// first trades its call record with both ring neighbours, which find
// disagreeing calls. Built only with MPI (WMAP_HAVE_MPI); without it the
// transport refuses to open.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

bool wm_comm_mpi_launched(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                                     "PMI_RANK", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    if (getenv(vars[i])) {
      return true;
    }
  }
  return false;
}

#ifndef WMAP_HAVE_MPI

bool wm_comm_mpi_built(void) {
  return false;
}

static wm_status_t not_built(void) {
  return WM_ERROR(UNAVAILABLE,
                  "wmap was built without MPI (install libopenmpi-dev and "
                  "rebuild)");
}

wm_status_t wm_comm_mpi_init(int32_t *out_rank, int32_t *out_size) {
  *out_rank = 0;
  *out_size = 1;
  return not_built();
}
void wm_comm_mpi_finalize(void) {}
wm_status_t wm_comm_mpi_idle_barrier(void) {
  return not_built();
}
_Noreturn void wm_comm_mpi_abort(int code) {
  exit(code);
}
wm_status_t wm_comm_mpi_native(uint32_t op, const void *send, void *recv,
                               size_t count, uint32_t dtype, uint32_t arg) {
  (void)op, (void)send, (void)recv, (void)count, (void)dtype, (void)arg;
  return not_built();
}
wm_status_t comm_mpi_open(wm_comm_t *comm) {
  (void)comm;
  return not_built();
}
static wm_status_t mp_run(wm_comm_t *comm, const comm_call_t *call,
                          wm_comm_algo_t algo, const void *send, void *recv) {
  (void)comm, (void)call, (void)algo, (void)send, (void)recv;
  return not_built();
}
static bool mp_has_algo(uint32_t op, wm_comm_algo_t algo) {
  (void)op, (void)algo;
  return false;
}
static wm_comm_algo_t mp_pick(const wm_comm_t *comm, uint32_t op,
                              size_t bytes) {
  (void)comm, (void)op, (void)bytes;
  return WM_COMM_ALGO_RING;
}
static void mp_abort(wm_comm_t *comm) {
  (void)comm;
}
static void mp_destroy(wm_comm_t *comm) {
  (void)comm;
}

#else

#include <mpi.h>

enum { TAG_CALL = 1, TAG_DATA = 2, TAG_P2P_HEAD = 3, TAG_P2P_DATA = 4 };

static bool we_initialized;  // MPI_Init ran here (so finalize is ours)
static MPI_Comm world = MPI_COMM_NULL;  // our duplicate of the world

bool wm_comm_mpi_built(void) {
  return true;
}

static wm_status_t mpi_error(int code, const char *what) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(code, text, &len);
  return WM_ERROR(UNAVAILABLE, "%s: %s", what, text);
}

wm_status_t wm_comm_mpi_init(int32_t *out_rank, int32_t *out_size) {
  *out_rank = 0;
  *out_size = 1;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    int e = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (e != MPI_SUCCESS) {
      return mpi_error(e, "MPI_Init_thread");
    }
    we_initialized = true;
  }
  if (world == MPI_COMM_NULL) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int e = MPI_Comm_dup(MPI_COMM_WORLD, &world);
    if (e != MPI_SUCCESS) {
      return mpi_error(e, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  }
  int r = 0, n = 1;
  MPI_Comm_rank(world, &r);
  MPI_Comm_size(world, &n);
  *out_rank = r;
  *out_size = n;
  return NULL;
}

void wm_comm_mpi_finalize(void) {
  if (world != MPI_COMM_NULL) {
    MPI_Comm_free(&world);
    world = MPI_COMM_NULL;
  }
  int fin = 0;
  MPI_Finalized(&fin);
  if (we_initialized && !fin) {
    MPI_Finalize();
  }
}

wm_status_t wm_comm_mpi_idle_barrier(void) {
  if (world == MPI_COMM_NULL) {
    return WM_ERROR(FAILED_PRECONDITION, "MPI is not initialized");
  }
  MPI_Request req;
  int e = MPI_Ibarrier(world, &req);
  double timeout = wm_comm_timeout();
  uint64_t start = wm_now_ns();
  while (e == MPI_SUCCESS) {
    int done = 0;
    e = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done && e == MPI_SUCCESS) {
      return NULL;
    }
    double waited = (double)(wm_now_ns() - start) * 1e-9;
    if (waited > timeout) {
      return WM_ERROR(UNAVAILABLE,
                      "communicator mpi:world: Barrier: waited %.1f s for the "
                      "other processes (WMAP_COMM_TIMEOUT)",
                      waited);
    }
    struct timespec ts = {0, 1000000};  // 1 ms: leave the cores alone
    nanosleep(&ts, NULL);
  }
  return mpi_error(e, "MPI_Ibarrier");
}

_Noreturn void wm_comm_mpi_abort(int code) {
  fflush(stdout);
  fflush(stderr);
  int inited = 0, fin = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&fin);
  if (inited && !fin) {
    // The other survivors usually fail at about the same moment: give
    // them half a second to report before the job is torn down.
    struct timespec ts = {0, 500000000};
    nanosleep(&ts, NULL);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  exit(code);
}

static MPI_Datatype mpi_type(uint32_t dtype) {
  switch (dtype) {
    case 1:
      return MPI_FLOAT;
    case 2:
      return MPI_UINT8_T;
    case 3:
      return MPI_INT8_T;
    case 6:
      return MPI_INT32_T;
    case 7:
      return MPI_INT64_T;
    case 11:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;
  }
}

wm_status_t wm_comm_mpi_native(uint32_t op, const void *send, void *recv,
                               size_t count, uint32_t dtype, uint32_t arg) {
  if (world == MPI_COMM_NULL) {
    return WM_ERROR(FAILED_PRECONDITION, "MPI is not initialized");
  }
  MPI_Datatype t = mpi_type(dtype);
  static const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
  bool reduces = op == WM_COMM_ALL_REDUCE || op == WM_COMM_REDUCE_SCATTER;
  if (op != WM_COMM_BARRIER &&
      (t == MPI_DATATYPE_NULL || (reduces && arg > WM_COMM_MAX))) {
    return WM_ERROR(UNIMPLEMENTED, "MPI has no %s %s%s%s", wm_comm_op_name(op),
                    wm_comm_dtype_name(dtype), reduces ? " " : "",
                    reduces ? wm_comm_redop_name(arg) : "");
  }
  if (count > (size_t)INT32_MAX) {
    return WM_ERROR(UNIMPLEMENTED, "MPI counts stop at 2^31-1 (%zu asked)",
                    count);
  }
  int n = (int)count, e;
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const void *s = send;
  switch (op) {
    case WM_COMM_ALL_REDUCE:
      e = MPI_Allreduce(s == recv ? MPI_IN_PLACE : s, recv, n, t, ops[arg],
                        MPI_COMM_WORLD);
      break;
    case WM_COMM_ALL_GATHER:
      e = MPI_Allgather(s, n, t, recv, n, t, MPI_COMM_WORLD);
      break;
    case WM_COMM_REDUCE_SCATTER:
      e = MPI_Reduce_scatter_block(s, recv, n, t, ops[arg], MPI_COMM_WORLD);
      break;
    case WM_COMM_BROADCAST:
      if (rank == (int)arg && send != recv) {
        comm_copy(recv, send, count * wm_comm_dtype_size(dtype));
      }
      e = MPI_Bcast(recv, n, t, (int)arg, MPI_COMM_WORLD);
      break;
    case WM_COMM_BARRIER:
      e = MPI_Barrier(MPI_COMM_WORLD);
      break;
    default:
      return WM_ERROR(INVALID_ARGUMENT, "no MPI peer for %s",
                      wm_comm_op_name(op));
  }
  return e == MPI_SUCCESS ? NULL : mpi_error(e, wm_comm_op_name(op));
}

typedef struct mp_comm {
  void *tmp;  // a received chunk
  size_t tmp_cap;
} mp_comm_t;

wm_status_t comm_mpi_open(wm_comm_t *comm) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    return WM_ERROR(FAILED_PRECONDITION,
                    "communicator mpi:world: MPI is not initialized (start "
                    "under mpirun)");
  }
  if (world == MPI_COMM_NULL) {  // another copy of this module ran MPI_Init
    int32_t r0, n0;
    WM_RETURN_IF_ERROR(wm_comm_mpi_init(&r0, &n0));
  }
  int r = 0, n = 1;
  MPI_Comm_rank(world, &r);
  MPI_Comm_size(world, &n);
  if (r != comm->rank || n != comm->size) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "communicator mpi:world is rank %d of %d here, not %d of "
                    "%d",
                    r, n, comm->rank, comm->size);
  }
  mp_comm_t *m = wm_calloc(1, sizeof(*m));
  if (!m) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for mpi:world");
  }
  comm->impl = m;
  return NULL;
}

static void mp_destroy(wm_comm_t *comm) {
  mp_comm_t *m = comm->impl;
  free(m->tmp);
  free(m);
}

static void mp_abort(wm_comm_t *comm) {
  (void)comm;
}

// One call on one rank.
typedef struct mp_run {
  wm_comm_t *comm;
  const comm_call_t *call;
  int32_t r, n, left, right;
  size_t es;
} mp_run_t;

// Polls |reqs| until all are done or the timeout; |peers[i]| names the
// rank request i talks to.
static wm_status_t wait_reqs(const mp_run_t *x, MPI_Request *reqs,
                             const int32_t *peers, int count) {
  uint64_t start = wm_now_ns();
  for (uint32_t spin = 0;; spin++) {
    int done = 0;
    int e = MPI_Testall(count, reqs, &done, MPI_STATUSES_IGNORE);
    if (e != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING] = "";
      int len = 0;
      MPI_Error_string(e, text, &len);
      return comm_fail(x->comm, x->call, "MPI failed: %s", text);
    }
    if (done) {
      return NULL;
    }
    if (atomic_load(&x->comm->failed)) {
      return comm_fail(x->comm, x->call, "the communicator was aborted");
    }
    if ((spin & 255) != 255) {
      continue;
    }
    double waited = (double)(wm_now_ns() - start) * 1e-9;
    if (waited > x->comm->timeout_s) {
      int32_t peer = -1;
      for (int i = 0; i < count; i++) {
        int flag = 1;
        if (reqs[i] != MPI_REQUEST_NULL) {
          MPI_Request_get_status(reqs[i], &flag, MPI_STATUS_IGNORE);
        }
        if (!flag) {
          peer = peers[i];
          break;
        }
      }
      return comm_fail(x->comm, x->call,
                       "waited %.1f s for rank %d (WMAP_COMM_TIMEOUT); it "
                       "died, hangs, or called something else",
                       waited, peer);
    }
    if (waited > 0.002) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

// Sends |sbytes| at |sbuf| to |to| and receives |rbytes| into |rbuf| from
// |from| (either may be skipped with a negative rank).
static wm_status_t exchange(const mp_run_t *x, int tag, const void *sbuf,
                            size_t sbytes, int32_t to, void *rbuf,
                            size_t rbytes, int32_t from) {
  MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int32_t peers[2] = {from, to};
  int e = MPI_SUCCESS;
  if (from >= 0) {
    e = MPI_Irecv(rbuf, (int)rbytes, MPI_BYTE, from, tag, world, &reqs[0]);
  }
  if (e == MPI_SUCCESS && to >= 0) {
    e = MPI_Isend(sbuf, (int)sbytes, MPI_BYTE, to, tag, world, &reqs[1]);
  }
  if (e != MPI_SUCCESS) {
    return comm_fail(x->comm, x->call, "MPI could not start a message");
  }
  return wait_reqs(x, reqs, peers, 2);
}

// Messages over 1 GiB go in pieces (MPI counts are int); both sides of a
// message count the same pieces (at least one, even for 0 bytes).
static wm_status_t exchange_big(const mp_run_t *x, const char *sbuf,
                                size_t sbytes, int32_t to, char *rbuf,
                                size_t rbytes, int32_t from) {
  const size_t piece = (size_t)1 << 30;
  size_t ns = to < 0 ? 0 : sbytes ? (sbytes + piece - 1) / piece : 1;
  size_t nr = from < 0 ? 0 : rbytes ? (rbytes + piece - 1) / piece : 1;
  for (size_t i = 0; i < ns || i < nr; i++) {
    size_t off = i * piece;
    size_t sl = i < ns ? (sbytes - off < piece ? sbytes - off : piece) : 0;
    size_t rl = i < nr ? (rbytes - off < piece ? rbytes - off : piece) : 0;
    WM_RETURN_IF_ERROR(exchange(x, TAG_DATA, sbuf ? sbuf + off : NULL, sl,
                                i < ns ? to : -1, rbuf ? rbuf + off : NULL, rl,
                                i < nr ? from : -1));
  }
  return NULL;
}

// Trades call records with both ring neighbours.
static wm_status_t check_calls(const mp_run_t *x) {
  if (x->n == 1) {
    return NULL;
  }
  comm_call_t theirs[2];
  MPI_Request reqs[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL,
                         MPI_REQUEST_NULL};
  int32_t peers[4] = {x->left, x->right, x->right, x->left};
  int e = MPI_Irecv(&theirs[0], sizeof(comm_call_t), MPI_BYTE, x->left,
                    TAG_CALL, world, &reqs[0]);
  int k = 1;
  if (x->right != x->left) {
    e |= MPI_Irecv(&theirs[1], sizeof(comm_call_t), MPI_BYTE, x->right,
                   TAG_CALL, world, &reqs[k++]);
  }
  e |= MPI_Isend(x->call, sizeof(comm_call_t), MPI_BYTE, x->right, TAG_CALL,
                 world, &reqs[2]);
  if (x->right != x->left) {
    e |= MPI_Isend(x->call, sizeof(comm_call_t), MPI_BYTE, x->left, TAG_CALL,
                   world, &reqs[3]);
  }
  if (e != MPI_SUCCESS) {
    return comm_fail(x->comm, x->call, "MPI could not start a message");
  }
  WM_RETURN_IF_ERROR(wait_reqs(x, reqs, peers, 4));
  for (int i = 0; i < k; i++) {
    if (!comm_call_same(x->call, &theirs[i])) {
      char mine[160], other[160];
      comm_call_text(x->call, mine, sizeof(mine));
      comm_call_text(&theirs[i], other, sizeof(other));
      return comm_fail(x->comm, x->call,
                       "ranks disagree: rank %d called %s, call %llu, here %s",
                       i == 0 ? x->left : x->right, other,
                       (unsigned long long)theirs[i].seq, mine);
    }
  }
  return NULL;
}

static wm_status_t ensure_tmp(const mp_run_t *x, size_t bytes) {
  mp_comm_t *m = x->comm->impl;
  if (bytes <= m->tmp_cap) {
    return NULL;
  }
  void *p = malloc(bytes);
  if (!p) {
    return comm_fail(x->comm, x->call, "out of memory for %zu bytes", bytes);
  }
  free(m->tmp);
  m->tmp = p;
  m->tmp_cap = bytes;
  return NULL;
}

// Ring AllReduce: chunk c of rank r at reduce step s is (r - s + n - 2)
// mod n, as on threads; each step sends the previous step's chunk right.
static wm_status_t ring_all_reduce(const mp_run_t *x, const char *send,
                                   char *recv) {
  const comm_call_t *call = x->call;
  int32_t r = x->r, n = x->n;
  size_t es = x->es, big = 0;
  for (int32_t c = 0; c < n; c++) {
    size_t b, e;
    comm_chunk(call->count, n, c, &b, &e);
    big = e - b > big ? e - b : big;
  }
  WM_RETURN_IF_ERROR(ensure_tmp(x, big * es));
  char *tmp = ((mp_comm_t *)x->comm->impl)->tmp;
  for (int32_t s = 0; s < n - 1; s++) {
    int32_t c = (r - s + 2 * n - 2) % n, out = (r - s + 2 * n - 1) % n;
    size_t b, e, ob, oe;
    comm_chunk(call->count, n, c, &b, &e);
    comm_chunk(call->count, n, out, &ob, &oe);
    const char *src = s == 0 ? send : recv;
    WM_RETURN_IF_ERROR(exchange_big(x, src + ob * es, (oe - ob) * es, x->right,
                                    tmp, (e - b) * es, x->left));
    comm_reduce(recv + b * es, send + b * es, tmp, e - b, call->dtype,
                call->redop);
    if (s == n - 2 && call->redop == WM_COMM_AVG) {
      comm_divide(recv + b * es, e - b, call->dtype, n);
    }
  }
  for (int32_t t = 0; t < n - 1; t++) {
    int32_t c = (r - t - 1 + n) % n, out = (r - t + n) % n;
    size_t b, e, ob, oe;
    comm_chunk(call->count, n, c, &b, &e);
    comm_chunk(call->count, n, out, &ob, &oe);
    WM_RETURN_IF_ERROR(exchange_big(x, recv + ob * es, (oe - ob) * es, x->right,
                                    recv + b * es, (e - b) * es, x->left));
  }
  return NULL;
}

// Recursive doubling: partners r ^ mask; the lower rank's value is always
// the left operand, so every rank computes the same bits. A count that is
// not a power of two first folds the extra ranks into their neighbours.
static wm_status_t rd_all_reduce(const mp_run_t *x, const char *send,
                                 char *recv) {
  const comm_call_t *call = x->call;
  size_t bytes = call->count * x->es;
  int32_t r = x->r, n = x->n;
  WM_RETURN_IF_ERROR(ensure_tmp(x, bytes ? bytes : 1));
  char *tmp = ((mp_comm_t *)x->comm->impl)->tmp;
  if (recv != send && bytes) {
    comm_copy(recv, send, bytes);
  }
  int32_t p = 1;
  while (p * 2 <= n) {
    p *= 2;
  }
  int32_t rem = n - p, vr;  // virtual rank among p, or -1
  if (r < 2 * rem) {
    if (r % 2 == 0) {  // gives its value to r + 1, gets the result back
      WM_RETURN_IF_ERROR(
          exchange(x, TAG_DATA, recv, bytes, r + 1, NULL, 0, -1));
      vr = -1;
    } else {
      WM_RETURN_IF_ERROR(exchange(x, TAG_DATA, NULL, 0, -1, tmp, bytes, r - 1));
      comm_reduce(recv, tmp, recv, call->count, call->dtype, call->redop);
      vr = r / 2;
    }
  } else {
    vr = r - rem;
  }
  if (vr >= 0) {
    for (int32_t mask = 1; mask < p; mask *= 2) {
      int32_t pv = vr ^ mask;
      int32_t peer = pv < rem ? pv * 2 + 1 : pv + rem;
      WM_RETURN_IF_ERROR(
          exchange(x, TAG_DATA, recv, bytes, peer, tmp, bytes, peer));
      if (pv < vr) {
        comm_reduce(recv, tmp, recv, call->count, call->dtype, call->redop);
      } else {
        comm_reduce(recv, recv, tmp, call->count, call->dtype, call->redop);
      }
    }
    if (call->redop == WM_COMM_AVG) {
      comm_divide(recv, call->count, call->dtype, n);
    }
  }
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      WM_RETURN_IF_ERROR(
          exchange(x, TAG_DATA, NULL, 0, -1, recv, bytes, r + 1));
    } else {
      WM_RETURN_IF_ERROR(
          exchange(x, TAG_DATA, recv, bytes, r - 1, NULL, 0, -1));
    }
  }
  return NULL;
}

// AllGather, own chunk first. Ring: step t forwards chunk (r - t) to the
// right and receives chunk (r - t - 1) from the left. Direct: step k sends
// this rank's part to rank r + k and receives rank r - k's.
static wm_status_t all_gather(const mp_run_t *x, wm_comm_algo_t algo,
                              const char *send, char *recv) {
  size_t bytes = x->call->count * x->es;
  int32_t r = x->r, n = x->n;
  bool ring = algo == WM_COMM_ALGO_RING;
  if (recv + (size_t)r * bytes != send && bytes) {
    comm_copy(recv + (size_t)r * bytes, send, bytes);
  }
  for (int32_t k = 1; k < n; k++) {
    int32_t to = ring ? x->right : (r + k) % n;
    int32_t in = (r - k + n) % n, from = ring ? x->left : in;
    const char *out =
        ring ? recv + (size_t)((r - k + 1 + n) % n) * bytes : send;
    WM_RETURN_IF_ERROR(exchange_big(x, out, bytes, to,
                                    recv + (size_t)in * bytes, bytes, from));
  }
  return NULL;
}

// ReduceScatter: the reduce half of the ring into |tmp| halves; direct
// sends each rank its chunk and reduces in rank order.
static wm_status_t reduce_scatter(const mp_run_t *x, wm_comm_algo_t algo,
                                  const char *send, char *recv) {
  const comm_call_t *call = x->call;
  size_t bytes = call->count * x->es;
  int32_t r = x->r, n = x->n;
  WM_RETURN_IF_ERROR(
      ensure_tmp(x, (size_t)(algo == WM_COMM_ALGO_RING ? 2 : n) * bytes + 1));
  char *tmp = ((mp_comm_t *)x->comm->impl)->tmp;
  if (algo == WM_COMM_ALGO_RING) {
    char *acc = tmp + bytes;  // partial sums; tmp's first half receives
    for (int32_t s = 0; s < n - 1; s++) {
      int32_t c = (r - s + 2 * n - 2) % n, out = (r - s + 2 * n - 1) % n;
      const char *src = s == 0 ? send + (size_t)out * bytes : acc;
      WM_RETURN_IF_ERROR(
          exchange_big(x, src, bytes, x->right, tmp, bytes, x->left));
      char *dst = s == n - 2 ? recv : acc;
      comm_reduce(dst, send + (size_t)c * bytes, tmp, call->count, call->dtype,
                  call->redop);
    }
  } else {
    for (int32_t k = 1; k < n; k++) {
      int32_t to = (r + k) % n, from = (r - k + n) % n;
      WM_RETURN_IF_ERROR(exchange_big(x, send + (size_t)to * bytes, bytes, to,
                                      tmp + (size_t)from * bytes, bytes, from));
    }
    comm_copy(tmp + (size_t)r * bytes, send + (size_t)r * bytes, bytes);
    if (n == 1) {
      if (bytes) {
        memmove(recv, tmp, bytes);
      }
    } else {
      comm_reduce(recv, tmp, tmp + bytes, call->count, call->dtype,
                  call->redop);
      for (int32_t p = 2; p < n; p++) {
        comm_reduce(recv, recv, tmp + (size_t)p * bytes, call->count,
                    call->dtype, call->redop);
      }
    }
  }
  if (call->redop == WM_COMM_AVG) {
    comm_divide(recv, call->count, call->dtype, n);
  }
  return NULL;
}

// Broadcast: the root sends to every rank (direct), or a pipeline along
// the ring from the root in 1 MiB pieces (ring).
static wm_status_t broadcast(const mp_run_t *x, wm_comm_algo_t algo,
                             const char *send, char *recv) {
  const comm_call_t *call = x->call;
  size_t bytes = call->count * x->es;
  int32_t r = x->r, n = x->n, root = call->root;
  if (r == root && send != recv && bytes) {
    comm_copy(recv, send, bytes);
  }
  if (algo != WM_COMM_ALGO_RING) {
    if (r == root) {
      for (int32_t k = 1; k < n; k++) {
        WM_RETURN_IF_ERROR(
            exchange_big(x, recv, bytes, (root + k) % n, NULL, 0, -1));
      }
      return NULL;
    }
    return exchange_big(x, NULL, 0, -1, recv, bytes, root);
  }
  const size_t piece = (size_t)1 << 20;
  bool last = x->right == root;
  size_t pieces = bytes ? (bytes + piece - 1) / piece : 1;
  for (size_t i = 0; i < pieces; i++) {
    size_t off = i * piece;
    size_t len = bytes - off < piece ? bytes - off : piece;
    char *at = bytes ? recv + off : recv;
    if (r != root) {
      WM_RETURN_IF_ERROR(exchange(x, TAG_DATA, NULL, 0, -1, at, len, x->left));
    }
    if (!last) {
      WM_RETURN_IF_ERROR(exchange(x, TAG_DATA, at, len, x->right, NULL, 0, -1));
    }
  }
  return NULL;
}

// Barrier: dissemination, log2(n) rounds.
static wm_status_t barrier(const mp_run_t *x) {
  char a = 0, b = 0;
  for (int32_t k = 1; k < x->n; k *= 2) {
    WM_RETURN_IF_ERROR(exchange(x, TAG_DATA, &a, 1, (x->r + k) % x->n, &b, 1,
                                (x->r - k + x->n) % x->n));
  }
  return NULL;
}

static wm_status_t p2p(const mp_run_t *x, const void *send, void *recv) {
  const comm_call_t *call = x->call;
  size_t bytes = call->count * x->es;
  int32_t peer = call->root;
  if (call->op == WM_COMM_SEND) {
    WM_RETURN_IF_ERROR(
        exchange(x, TAG_P2P_HEAD, call, sizeof(*call), peer, NULL, 0, -1));
    return exchange_big(x, send, bytes, peer, NULL, 0, -1);
  }
  comm_call_t theirs;
  WM_RETURN_IF_ERROR(
      exchange(x, TAG_P2P_HEAD, NULL, 0, -1, &theirs, sizeof(theirs), peer));
  if (theirs.count != call->count || theirs.dtype != call->dtype) {
    return comm_fail(x->comm, call, "ranks disagree: rank %d sent %llu %s",
                     peer, (unsigned long long)theirs.count,
                     wm_comm_dtype_name(theirs.dtype));
  }
  return exchange_big(x, NULL, 0, -1, recv, bytes, peer);
}

static wm_status_t mp_run(wm_comm_t *comm, const comm_call_t *call,
                          wm_comm_algo_t algo, const void *send, void *recv) {
  mp_run_t x = {.comm = comm,
                .call = call,
                .r = comm->rank,
                .n = comm->size,
                .left = (comm->rank + comm->size - 1) % comm->size,
                .right = (comm->rank + 1) % comm->size,
                .es = wm_comm_dtype_size(call->dtype)};
  if (call->op == WM_COMM_SEND || call->op == WM_COMM_RECV) {
    return p2p(&x, send, recv);
  }
  WM_RETURN_IF_ERROR(check_calls(&x));
  size_t bytes = call->count * x.es;
  switch (call->op) {
    case WM_COMM_ALL_REDUCE:
      if (x.n == 1) {
        if (send != recv && bytes) {
          comm_copy(recv, send, bytes);
        }
        return NULL;
      }
      return algo == WM_COMM_ALGO_RING && call->count >= (size_t)x.n
                 ? ring_all_reduce(&x, send, recv)
                 : rd_all_reduce(&x, send, recv);
    case WM_COMM_ALL_GATHER:
      return all_gather(&x, algo, send, recv);
    case WM_COMM_REDUCE_SCATTER:
      return reduce_scatter(&x, algo, send, recv);
    case WM_COMM_BROADCAST:
      return broadcast(&x, algo, send, recv);
    default:
      return barrier(&x);
  }
}

static bool mp_has_algo(uint32_t op, wm_comm_algo_t algo) {
  switch (algo) {
    case WM_COMM_ALGO_RING:
      return op == WM_COMM_ALL_REDUCE || op == WM_COMM_ALL_GATHER ||
             op == WM_COMM_REDUCE_SCATTER || op == WM_COMM_BROADCAST;
    case WM_COMM_ALGO_RD:
      return op == WM_COMM_ALL_REDUCE;
    case WM_COMM_ALGO_DIRECT:
      return op != WM_COMM_ALL_REDUCE;
    default:
      return false;
  }
}

static wm_comm_algo_t mp_pick(const wm_comm_t *comm, uint32_t op,
                              size_t bytes) {
  (void)comm;
  switch (op) {
    case WM_COMM_ALL_REDUCE:
      return bytes > 65536 ? WM_COMM_ALGO_RING : WM_COMM_ALGO_RD;
    case WM_COMM_ALL_GATHER:
    case WM_COMM_REDUCE_SCATTER:
    case WM_COMM_BROADCAST:
      return bytes > 65536 ? WM_COMM_ALGO_RING : WM_COMM_ALGO_DIRECT;
    default:
      return WM_COMM_ALGO_DIRECT;
  }
}

#endif  // WMAP_HAVE_MPI

const comm_transport_t comm_mpi_transport = {
    .name = "mpi",
    .run = mp_run,
    .has_algo = mp_has_algo,
    .pick = mp_pick,
    .abort = mp_abort,
    .destroy = mp_destroy,
};
