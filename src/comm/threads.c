// Collectives among the threads of one process, over shared memory: every
// rank publishes its buffers and reads its peers' directly, so a message
// is copied once. Progress is one counter per rank, (call << 16) | step,
// which peers wait on with a spin, then yield, then sleep, up to the
// timeout. Ranks may be at most one call apart, so call records are kept
// per parity of the call number.
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

enum { SLOT_EMPTY = 0, SLOT_JOINED = 1, SLOT_LEFT = 2 };

typedef struct th_slot {
  _Alignas(64) atomic_uint_fast64_t prog;  // (seq << 16) | step
  atomic_int state;                        // SLOT_*
  comm_call_t call[2];                     // by parity of seq
  const void *send[2];
  void *recv[2];
  void *scratch[2];
} th_slot_t;

// Send/Recv from one rank to another: a rendezvous, the receiver copies.
typedef struct th_chan {
  _Alignas(64) atomic_uint_fast64_t posted;  // sends posted
  atomic_uint_fast64_t taken;                // of those, received
  const void *buf;
  uint64_t count;
  uint32_t dtype;
} th_chan_t;

typedef struct th_group {
  struct th_group *next;
  char key[WM_COMM_ID_MAX];
  int32_t size;
  int32_t handles;  // joined and not destroyed (under the registry lock)
  atomic_bool failed;
  pthread_mutex_t lock;  // guards failure
  char failure[600];     // the first rank's error
  th_slot_t *slots;      // size
  th_chan_t *chans;      // size * size, [src * size + dst]
} th_group_t;

typedef struct th_comm {
  th_group_t *g;
  uint64_t *sent;  // per peer: sends made
  uint64_t *rcvd;  // per peer: receives made
  void *scratch;
  size_t scratch_cap;
} th_comm_t;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static th_group_t *registry;

static void group_free(th_group_t *g) {
  pthread_mutex_destroy(&g->lock);
  free(g->slots);
  free(g->chans);
  free(g);
}

wm_status_t comm_threads_open(wm_comm_t *comm, const char *key) {
  th_comm_t *t = wm_calloc(1, sizeof(*t));
  int32_t n = comm->size;
  if (t) {
    t->sent = wm_calloc((size_t)n, sizeof(*t->sent));
    t->rcvd = wm_calloc((size_t)n, sizeof(*t->rcvd));
  }
  if (!t || !t->sent || !t->rcvd) {
    if (t) {
      free(t->sent);
      free(t->rcvd);
    }
    free(t);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for communicator %s",
                    comm->id);
  }
  pthread_mutex_lock(&registry_lock);
  th_group_t *g = registry;
  while (g && strcmp(g->key, key) != 0) {
    g = g->next;
  }
  wm_status_t s = NULL;
  if (!g) {
    g = wm_calloc(1, sizeof(*g));
    if (g) {
      g->slots = aligned_alloc(64, sizeof(th_slot_t) * (size_t)n);
      g->chans = aligned_alloc(64, sizeof(th_chan_t) * (size_t)n * (size_t)n);
    }
    if (!g || !g->slots || !g->chans) {
      if (g) {
        free(g->slots);
        free(g->chans);
      }
      free(g);
      g = NULL;
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for communicator %s",
                   comm->id);
    } else {
      memset(g->slots, 0, sizeof(th_slot_t) * (size_t)n);
      memset(g->chans, 0, sizeof(th_chan_t) * (size_t)n * (size_t)n);
      snprintf(g->key, sizeof(g->key), "%s", key);
      g->size = n;
      pthread_mutex_init(&g->lock, NULL);
      g->next = registry;
      registry = g;
    }
  } else if (g->size != n) {
    s = WM_ERROR(INVALID_ARGUMENT,
                 "communicator %s has %d ranks; rank %d asked for %d", comm->id,
                 g->size, comm->rank, n);
  } else if (atomic_load(&g->slots[comm->rank].state) != SLOT_EMPTY) {
    s = WM_ERROR(INVALID_ARGUMENT, "communicator %s: rank %d joined twice",
                 comm->id, comm->rank);
  }
  if (!s) {
    atomic_store(&g->slots[comm->rank].state, SLOT_JOINED);
    g->handles++;
    t->g = g;
  }
  pthread_mutex_unlock(&registry_lock);
  if (s) {
    free(t->sent);
    free(t->rcvd);
    free(t);
    return s;
  }
  comm->impl = t;
  return NULL;
}

static void th_destroy(wm_comm_t *comm) {
  th_comm_t *t = comm->impl;
  th_group_t *g = t->g;
  pthread_mutex_lock(&registry_lock);
  atomic_store(&g->slots[comm->rank].state, SLOT_LEFT);
  if (--g->handles == 0) {
    th_group_t **p = &registry;
    while (*p && *p != g) {
      p = &(*p)->next;
    }
    if (*p) {
      *p = g->next;
    }
    group_free(g);
  }
  pthread_mutex_unlock(&registry_lock);
  free(t->scratch);
  free(t->sent);
  free(t->rcvd);
  free(t);
}

// Records the group's first failure (every rank's waits then end).
static void group_fail(th_group_t *g, const char *text) {
  pthread_mutex_lock(&g->lock);
  if (!g->failure[0]) {
    snprintf(g->failure, sizeof(g->failure), "%s", text);
  }
  pthread_mutex_unlock(&g->lock);
  atomic_store(&g->failed, true);
}

static void th_abort(wm_comm_t *comm) {
  th_comm_t *t = comm->impl;
  char text[160];
  snprintf(text, sizeof(text), "rank %d aborted the communicator", comm->rank);
  group_fail(t->g, text);
}

// Fails |call| with a message and tells the group.
static wm_status_t th_fail(wm_comm_t *comm, const comm_call_t *call,
                           const char *msg) {
  th_comm_t *t = comm->impl;
  wm_status_t s = comm_fail(comm, call, "%s", msg);
  group_fail(t->g, wm_status_message(s));
  return s;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Waits until |*word| >= |target|, written by rank |peer|.
static wm_status_t wait_for(wm_comm_t *comm, const comm_call_t *call,
                            int32_t peer, atomic_uint_fast64_t *word,
                            uint64_t target) {
  th_comm_t *t = comm->impl;
  th_group_t *g = t->g;
  uint64_t start = 0;
  for (uint32_t spin = 0;; spin++) {
    if (atomic_load_explicit(word, memory_order_acquire) >= target) {
      return NULL;
    }
    if ((spin & 63) == 0) {
      if (atomic_load(&g->failed)) {
        char msg[700];
        pthread_mutex_lock(&g->lock);
        snprintf(msg, sizeof(msg), "the communicator failed: %s", g->failure);
        pthread_mutex_unlock(&g->lock);
        return comm_fail(comm, call, "%s", msg);
      }
      if (atomic_load(&g->slots[peer].state) == SLOT_LEFT &&
          atomic_load_explicit(word, memory_order_acquire) < target) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "rank %d left the communicator (destroyed or ended) "
                 "without taking part",
                 peer);
        return th_fail(comm, call, msg);
      }
    }
    if (spin < 2048) {
      cpu_relax();
      continue;
    }
    uint64_t now = wm_now_ns();
    if (!start) {
      start = now;
      continue;
    }
    double waited = (double)(now - start) * 1e-9;
    if (waited > comm->timeout_s) {
      char msg[240];
      uint64_t p = atomic_load(&g->slots[peer].prog);
      if (atomic_load(&g->slots[peer].state) == SLOT_EMPTY) {
        snprintf(msg, sizeof(msg),
                 "waited %.1f s for rank %d, which never joined "
                 "(WMAP_COMM_TIMEOUT)",
                 waited, peer);
      } else {
        snprintf(msg, sizeof(msg),
                 "waited %.1f s for rank %d, last seen in call %llu "
                 "(WMAP_COMM_TIMEOUT)",
                 waited, peer, (unsigned long long)(p >> 16));
      }
      return th_fail(comm, call, msg);
    }
    if (waited < 0.002) {
      sched_yield();
    } else {
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
    }
  }
}

static wm_status_t ensure_scratch(wm_comm_t *comm, size_t bytes) {
  th_comm_t *t = comm->impl;
  if (bytes <= t->scratch_cap) {
    return NULL;
  }
  size_t cap = bytes < 4096 ? 4096 : bytes;
  void *p = aligned_alloc(64, (cap + 63) / 64 * 64);
  if (!p) {
    return WM_ERROR(RESOURCE_EXHAUSTED,
                    "communicator %s: out of memory for %zu bytes of scratch",
                    comm->id, cap);
  }
  free(t->scratch);
  t->scratch = p;
  t->scratch_cap = cap;
  return NULL;
}

// The state of one call on one rank.
typedef struct th_run {
  wm_comm_t *comm;
  th_group_t *g;
  const comm_call_t *call;
  int32_t r, n, left, right;
  int par;        // parity of the call number
  uint64_t base;  // seq << 16
  size_t es;      // bytes per element
} th_run_t;

static th_slot_t *slot(const th_run_t *x, int32_t rank) {
  return &x->g->slots[rank];
}

static wm_status_t wait_step(const th_run_t *x, int32_t peer, uint64_t step) {
  return wait_for(x->comm, x->call, peer, &slot(x, peer)->prog, x->base | step);
}

static void set_step(const th_run_t *x, uint64_t step) {
  atomic_store_explicit(&slot(x, x->r)->prog, x->base | step,
                        memory_order_release);
}

static wm_status_t wait_all(const th_run_t *x, uint64_t step) {
  for (int32_t p = 0; p < x->n; p++) {
    if (p != x->r) {
      WM_RETURN_IF_ERROR(wait_step(x, p, step));
    }
  }
  return NULL;
}

// Waits for every peer to post the call and compares the records.
static wm_status_t check_calls(const th_run_t *x) {
  for (int32_t p = 0; p < x->n; p++) {
    if (p == x->r) {
      continue;
    }
    WM_RETURN_IF_ERROR(wait_step(x, p, 0));
    const comm_call_t *theirs = &slot(x, p)->call[x->par];
    if (!comm_call_same(x->call, theirs)) {
      char mine[160], other[160], msg[400];
      comm_call_text(x->call, mine, sizeof(mine));
      comm_call_text(theirs, other, sizeof(other));
      snprintf(msg, sizeof(msg),
               "ranks disagree: rank %d called %s, call %llu, here %s", p,
               other, (unsigned long long)theirs->seq, mine);
      return th_fail(x->comm, x->call, msg);
    }
  }
  return NULL;
}

// ------------------------------------------------------------ direct

static wm_status_t direct(const th_run_t *x, const void *send, void *recv) {
  const comm_call_t *call = x->call;
  th_comm_t *t = x->comm->impl;
  size_t bytes = call->count * x->es;
  int32_t r = x->r, n = x->n;
  switch (call->op) {
    case WM_COMM_ALL_REDUCE:
    case WM_COMM_REDUCE_SCATTER: {
      bool rs = call->op == WM_COMM_REDUCE_SCATTER;
      size_t off = rs ? (size_t)r * bytes : 0;
      bool in_place = rs ? (const char *)send + off == recv : send == recv;
      char *acc = in_place ? t->scratch : recv;
      const char *s0 = (const char *)slot(x, 0)->send[x->par] + off;
      if (n == 1) {
        if (!in_place) {
          comm_copy(acc, s0, bytes);
        }
      } else {
        const char *s1 = (const char *)slot(x, 1)->send[x->par] + off;
        comm_reduce(acc, s0, s1, call->count, call->dtype, call->redop);
        for (int32_t p = 2; p < n; p++) {
          const char *sp = (const char *)slot(x, p)->send[x->par] + off;
          comm_reduce(acc, acc, sp, call->count, call->dtype, call->redop);
        }
      }
      if (call->redop == WM_COMM_AVG) {
        comm_divide(acc, call->count, call->dtype, n);
      }
      set_step(x, 1);
      WM_RETURN_IF_ERROR(wait_all(x, 1));
      if (in_place && n > 1) {
        comm_copy(recv, acc, bytes);
      }
      return NULL;
    }
    case WM_COMM_ALL_GATHER:
      for (int32_t p = 0; p < n; p++) {
        char *dst = (char *)recv + (size_t)p * bytes;
        const void *src = slot(x, p)->send[x->par];
        if (src != dst && bytes) {
          comm_copy(dst, src, bytes);
        }
      }
      set_step(x, 1);
      return wait_all(x, 1);
    case WM_COMM_BROADCAST: {
      const void *src = slot(x, call->root)->send[x->par];
      if (src != recv && bytes) {
        comm_copy(recv, src, bytes);
      }
      set_step(x, 1);
      return r == call->root ? wait_all(x, 1) : NULL;
    }
    default:  // Barrier: check_calls waited for everyone
      return NULL;
  }
}

// -------------------------------------------------------------- ring

// AllReduce: n-1 reduce-scatter steps, each reducing one chunk with the
// left neighbour's partial sum, then n-1 all-gather steps copying the
// left's finished chunk. Rank r's chunk at reduce step s is
// (r - s + n - 2) mod n, so it finishes chunk r and writes it into the
// right neighbour's recv as well: the first all-gather step costs no read
// of the neighbour's memory (for 2 ranks, no step at all). A large buffer goes
// round in pieces of about PIECE bytes, one after the other, so that what
// a neighbour wrote one step before is still in cache when it is read.
enum { PIECE = 2 * 1024 * 1024 };

static wm_status_t ring_piece(const th_run_t *x, const char *send, char *recv,
                              size_t first, size_t count, uint64_t step0) {
  const comm_call_t *call = x->call;
  int32_t r = x->r, n = x->n;
  size_t es = x->es;
  th_slot_t *ls = slot(x, x->left);
  const char *lsend = (const char *)ls->send[x->par] + first * es;
  const char *lrecv = (const char *)ls->recv[x->par] + first * es;
  th_slot_t *rs = slot(x, x->right);
  char *rrecv = (char *)rs->recv[x->par] + first * es;
  bool right_in_place = rs->send[x->par] == rs->recv[x->par];
  send += first * es;
  recv += first * es;
  for (int32_t s = 0; s < n - 1; s++) {
    int32_t c = (r - s + 2 * n - 2) % n;
    size_t b, e;
    comm_chunk(count, n, c, &b, &e);
    WM_RETURN_IF_ERROR(wait_step(x, x->left, step0 + (uint64_t)s));
    const char *from = s == 0 ? lsend : lrecv;
    comm_reduce(recv + b * es, send + b * es, from + b * es, e - b, call->dtype,
                call->redop);
    if (s == n - 2) {
      if (call->redop == WM_COMM_AVG) {
        comm_divide(recv + b * es, e - b, call->dtype, n);
      }
      // In place, rank r + 2 reads this chunk of the right's buffer at its
      // first step.
      if (n > 2 && right_in_place) {
        WM_RETURN_IF_ERROR(wait_step(x, (r + 2) % n, step0 + 1));
      }
      comm_copy(rrecv + b * es, recv + b * es, (e - b) * es);
    }
    set_step(x, step0 + (uint64_t)s + 1);
  }
  // All-gather step 0 was the left neighbour's push.
  WM_RETURN_IF_ERROR(wait_step(x, x->left, step0 + (uint64_t)(n - 1)));
  set_step(x, step0 + (uint64_t)n);
  for (int32_t t = 1; t < n - 1; t++) {
    int32_t c = (r - t - 1 + n) % n;
    size_t b, e;
    comm_chunk(count, n, c, &b, &e);
    // The right neighbour read this chunk of ours at its reduce step t.
    WM_RETURN_IF_ERROR(wait_step(x, x->right, step0 + (uint64_t)t + 1));
    WM_RETURN_IF_ERROR(wait_step(x, x->left, step0 + (uint64_t)(n - 1 + t)));
    comm_copy(recv + b * es, lrecv + b * es, (e - b) * es);
    set_step(x, step0 + (uint64_t)(n + t));
  }
  return NULL;
}

static wm_status_t ring_all_reduce(const th_run_t *x, const char *send,
                                   char *recv) {
  size_t count = x->call->count, per = 2 * (size_t)(x->n - 1);
  size_t pieces = (count * x->es + PIECE - 1) / PIECE;
  size_t most = 60000 / per;  // steps stay under 2^16
  pieces = pieces < 1 ? 1 : pieces > most ? most : pieces;
  for (size_t p = 0; p < pieces; p++) {
    size_t b = count * p / pieces, e = count * (p + 1) / pieces;
    WM_RETURN_IF_ERROR(ring_piece(x, send, recv, b, e - b, p * per));
  }
  return wait_step(x, x->right, pieces * per);
}

// AllGather: own chunk first (before posting), then n-1 steps each copying
// the chunk the left neighbour got one step before.
static wm_status_t ring_all_gather(const th_run_t *x, char *recv) {
  size_t bytes = x->call->count * x->es;
  int32_t r = x->r, n = x->n;
  th_slot_t *ls = slot(x, x->left);
  for (int32_t t = 0; t < n - 1; t++) {
    int32_t c = (r - t - 1 + n) % n;
    WM_RETURN_IF_ERROR(wait_step(x, x->left, (uint64_t)t));
    comm_copy(recv + (size_t)c * bytes,
              (const char *)ls->recv[x->par] + (size_t)c * bytes, bytes);
    set_step(x, (uint64_t)t + 1);
  }
  return wait_step(x, x->right, (uint64_t)(n - 1));
}

// ReduceScatter: the reduce half of the AllReduce ring, partial sums in two
// alternating scratch halves, the last step writing |recv|.
static wm_status_t ring_reduce_scatter(const th_run_t *x, const char *send,
                                       char *recv) {
  const comm_call_t *call = x->call;
  size_t bytes = call->count * x->es;
  int32_t r = x->r, n = x->n;
  th_slot_t *ls = slot(x, x->left);
  char *mine = slot(x, r)->scratch[x->par];
  for (int32_t s = 0; s < n - 1; s++) {
    int32_t c = (r - s + 2 * n - 2) % n;
    WM_RETURN_IF_ERROR(wait_step(x, x->left, (uint64_t)s));
    if (s >= 2) {  // the right neighbour read this half at its step s - 1
      WM_RETURN_IF_ERROR(wait_step(x, x->right, (uint64_t)s));
    }
    const char *from =
        s == 0
            ? (const char *)ls->send[x->par] + (size_t)c * bytes
            : (const char *)ls->scratch[x->par] + (size_t)((s - 1) & 1) * bytes;
    char *dst = s == n - 2 ? recv : mine + (size_t)(s & 1) * bytes;
    comm_reduce(dst, send + (size_t)c * bytes, from, call->count, call->dtype,
                call->redop);
    if (s == n - 2 && call->redop == WM_COMM_AVG) {
      comm_divide(dst, call->count, call->dtype, n);
    }
    set_step(x, (uint64_t)s + 1);
  }
  return wait_step(x, x->right, (uint64_t)(n - 1));
}

// --------------------------------------------------------- send, recv

static wm_status_t p2p(wm_comm_t *comm, const comm_call_t *call,
                       const void *send, void *recv) {
  th_comm_t *t = comm->impl;
  th_group_t *g = t->g;
  int32_t peer = call->root, n = comm->size;
  if (call->op == WM_COMM_SEND) {
    th_chan_t *ch = &g->chans[(size_t)comm->rank * (size_t)n + (size_t)peer];
    uint64_t s = ++t->sent[peer];
    ch->buf = send;
    ch->count = call->count;
    ch->dtype = call->dtype;
    atomic_store_explicit(&ch->posted, s, memory_order_release);
    return wait_for(comm, call, peer, &ch->taken, s);
  }
  th_chan_t *ch = &g->chans[(size_t)peer * (size_t)n + (size_t)comm->rank];
  uint64_t s = ++t->rcvd[peer];
  WM_RETURN_IF_ERROR(wait_for(comm, call, peer, &ch->posted, s));
  if (ch->count != call->count || ch->dtype != call->dtype) {
    char msg[200];
    snprintf(msg, sizeof(msg), "ranks disagree: rank %d sent %llu %s", peer,
             (unsigned long long)ch->count, wm_comm_dtype_name(ch->dtype));
    return th_fail(comm, call, msg);
  }
  if (call->count) {
    comm_copy(recv, ch->buf, call->count * wm_comm_dtype_size(call->dtype));
  }
  atomic_store_explicit(&ch->taken, s, memory_order_release);
  return NULL;
}

// ---------------------------------------------------------- dispatch

static wm_status_t th_run(wm_comm_t *comm, const comm_call_t *call,
                          wm_comm_algo_t algo, const void *send, void *recv) {
  if (call->op == WM_COMM_SEND || call->op == WM_COMM_RECV) {
    return p2p(comm, call, send, recv);
  }
  th_comm_t *t = comm->impl;
  th_run_t x = {.comm = comm,
                .g = t->g,
                .call = call,
                .r = comm->rank,
                .n = comm->size,
                .left = (comm->rank + comm->size - 1) % comm->size,
                .right = (comm->rank + 1) % comm->size,
                .par = (int)(call->seq & 1),
                .base = call->seq << 16,
                .es = wm_comm_dtype_size(call->dtype)};
  size_t bytes = call->count * x.es;
  bool ring = algo == WM_COMM_ALGO_RING && x.n > 1;
  size_t need = 0;
  if (call->op == WM_COMM_ALL_REDUCE && !ring && send == recv) {
    need = bytes;
  } else if (call->op == WM_COMM_REDUCE_SCATTER) {
    need = ring ? 2 * bytes : bytes;
  }
  WM_RETURN_IF_ERROR(ensure_scratch(comm, need));
  if (call->op == WM_COMM_ALL_GATHER && ring) {
    char *own = (char *)recv + (size_t)x.r * bytes;
    if (own != send && bytes) {
      comm_copy(own, send, bytes);
    }
  }
  th_slot_t *me = slot(&x, x.r);
  me->call[x.par] = *call;
  me->send[x.par] = send;
  me->recv[x.par] = recv;
  me->scratch[x.par] = t->scratch;
  set_step(&x, 0);
  WM_RETURN_IF_ERROR(check_calls(&x));
  if (!ring) {
    return direct(&x, send, recv);
  }
  switch (call->op) {
    case WM_COMM_ALL_REDUCE:
      return ring_all_reduce(&x, send, recv);
    case WM_COMM_ALL_GATHER:
      return ring_all_gather(&x, recv);
    default:
      return ring_reduce_scatter(&x, send, recv);
  }
}

static bool th_has_algo(uint32_t op, wm_comm_algo_t algo) {
  switch (algo) {
    case WM_COMM_ALGO_DIRECT:
      return true;
    case WM_COMM_ALGO_RING:
      return op == WM_COMM_ALL_REDUCE || op == WM_COMM_ALL_GATHER ||
             op == WM_COMM_REDUCE_SCATTER;
    default:
      return false;
  }
}

// Direct costs one rendezvous but reads every rank's buffer; the ring
// reads each byte about twice and waits 2(n-1) times.
static wm_comm_algo_t th_pick(const wm_comm_t *comm, uint32_t op,
                              size_t bytes) {
  (void)comm;
  switch (op) {
    case WM_COMM_ALL_REDUCE:
      return bytes > 32768 ? WM_COMM_ALGO_RING : WM_COMM_ALGO_DIRECT;
    case WM_COMM_ALL_GATHER:
    case WM_COMM_REDUCE_SCATTER:
      return bytes > 16384 ? WM_COMM_ALGO_RING : WM_COMM_ALGO_DIRECT;
    default:
      return WM_COMM_ALGO_DIRECT;
  }
}

const comm_transport_t comm_threads_transport = {
    .name = "threads",
    .run = th_run,
    .has_algo = th_has_algo,
    .pick = th_pick,
    .abort = th_abort,
    .destroy = th_destroy,
};
