// The cpu backend's collective tier: src/comm's collectives over threads
// ("threads:KEY") and MPI processes ("mpi:world") on host memory. Streams
// are synchronous, so every call has completed when it returns.
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "cpu.h"
#include "host_tier.h"

struct wm_comm {
  wm_comm_t *c;
};

static wm_error *coll_query(const wm_target_desc *target, uint32_t kind,
                            uint32_t dtype, uint32_t redop,
                            uint32_t *out_level) {
  (void)target;
  bool reduces = kind == WM_COLL_ALL_REDUCE || kind == WM_COLL_REDUCE_SCATTER;
  bool ok = kind >= WM_COLL_ALL_REDUCE && kind <= WM_COLL_BROADCAST &&
            wm_comm_dtype_size(dtype) > 0 &&
            (!reduces || wm_comm_redop_ok(dtype, redop));
  *out_level = ok ? WM_SUPPORT_SUPPORTED : WM_SUPPORT_NONE;
  return NULL;
}

static wm_error *comm_create(wm_device *const *devs, uint32_t n_devs,
                             uint32_t rank, uint32_t world_size,
                             const void *unique_id, uint64_t id_len,
                             wm_comm **out_comm) {
  (void)devs;
  *out_comm = NULL;
  if (n_devs > 1) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "comm_create: the cpu backend takes one "
                                "device per rank, not %u",
                                n_devs);
  }
  char id[WM_COMM_ID_MAX];
  if (!unique_id || id_len == 0 || id_len >= sizeof(id)) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "comm_create: the id must be 1..%zu bytes "
                                "(\"threads:KEY\" or \"mpi:world\"), not %llu",
                                sizeof(id) - 1, (unsigned long long)id_len);
  }
  memcpy(id, unique_id, id_len);
  id[id_len] = '\0';
  if (world_size > 4096 || rank >= world_size) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "comm_create %s: rank %u of %u is out of range",
                                id, rank, world_size);
  }
  wm_comm *c = calloc(1, sizeof(*c));
  if (!c) {
    return wm_host_error_oom();
  }
  wm_status_t s = wm_comm_open(id, (int32_t)rank, (int32_t)world_size, &c->c);
  if (s) {
    free(c);
    return cpu_error_from(s);
  }
  *out_comm = c;
  return NULL;
}

static void comm_destroy(wm_comm *comm) {
  if (comm) {
    wm_comm_destroy(comm->c);
    free(comm);
  }
}

static wm_error *comm_abort(wm_comm *comm) {
  wm_comm_abort(comm->c);
  return NULL;
}

// The host pointer of |v| holding |elems| elements of |dtype|.
static wm_error *view_ptr(const wm_comm *comm, const char *what,
                          const wm_buffer_view *v, uint64_t elems,
                          uint32_t dtype, void **out) {
  *out = NULL;
  size_t es = wm_comm_dtype_size(dtype);
  if (!v || !v->buffer) {
    return elems == 0 || es == 0
               ? NULL
               : wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                      "%s: %s: no buffer", wm_comm_id(comm->c),
                                      what);
  }
  uint64_t bytes = 0, end = 0;
  if (__builtin_mul_overflow(elems, (uint64_t)es, &bytes) ||
      __builtin_add_overflow(v->offset, bytes, &end) || end > v->buffer->size) {
    return wm_host_error_create(
        WM_ERR_OUT_OF_RANGE,
        "%s: %s: %llu elements at offset %llu pass the buffer's end (%llu "
        "bytes)",
        wm_comm_id(comm->c), what, (unsigned long long)elems,
        (unsigned long long)v->offset, (unsigned long long)v->buffer->size);
  }
  *out = (char *)v->buffer->data + v->offset;
  return NULL;
}

// Resolves a send and a recv view of |ns| and |nr| elements.
#define VIEWS(ns, nr)                                           \
  void *sp = NULL, *rp = NULL;                                  \
  wm_error *e = view_ptr(comm, "send", send, (ns), dtype, &sp); \
  if (!e) {                                                     \
    e = view_ptr(comm, "recv", recv, (nr), dtype, &rp);         \
  }                                                             \
  if (e) {                                                      \
    return e;                                                   \
  }

static uint64_t world(const wm_comm *comm) {
  return (uint64_t)wm_comm_size(comm->c);
}

static wm_error *all_reduce(wm_comm *comm, wm_stream *stream,
                            const wm_buffer_view *send,
                            const wm_buffer_view *recv, uint64_t count,
                            uint32_t dtype, uint32_t redop) {
  (void)stream;
  VIEWS(count, count);
  return cpu_error_from(
      wm_comm_all_reduce(comm->c, sp, rp, (size_t)count, dtype, redop));
}

static wm_error *all_gather(wm_comm *comm, wm_stream *stream,
                            const wm_buffer_view *send,
                            const wm_buffer_view *recv, uint64_t count,
                            uint32_t dtype) {
  (void)stream;
  VIEWS(count, count * world(comm));
  return cpu_error_from(
      wm_comm_all_gather(comm->c, sp, rp, (size_t)count, dtype));
}

static wm_error *reduce_scatter(wm_comm *comm, wm_stream *stream,
                                const wm_buffer_view *send,
                                const wm_buffer_view *recv, uint64_t count,
                                uint32_t dtype, uint32_t redop) {
  (void)stream;
  VIEWS(count * world(comm), count);
  return cpu_error_from(
      wm_comm_reduce_scatter(comm->c, sp, rp, (size_t)count, dtype, redop));
}

static wm_error *broadcast(wm_comm *comm, wm_stream *stream,
                           const wm_buffer_view *send,
                           const wm_buffer_view *recv, uint64_t count,
                           uint32_t dtype, uint32_t root) {
  (void)stream;
  bool is_root = (uint32_t)wm_comm_rank(comm->c) == root;
  VIEWS(is_root ? count : 0, count);
  return cpu_error_from(
      wm_comm_broadcast(comm->c, sp, rp, (size_t)count, dtype, (int32_t)root));
}

// Send (|sending|) or Recv of |count| elements of view |buf| with |peer|.
static wm_error *p2p(wm_comm *comm, bool sending, const wm_buffer_view *buf,
                     uint64_t count, uint32_t dtype, uint32_t peer) {
  void *p = NULL;
  wm_error *e =
      view_ptr(comm, sending ? "send" : "recv", buf, count, dtype, &p);
  if (e) {
    return e;
  }
  return cpu_error_from(
      sending ? wm_comm_send(comm->c, p, (size_t)count, dtype, (int32_t)peer)
              : wm_comm_recv(comm->c, p, (size_t)count, dtype, (int32_t)peer));
}

static wm_error *p2p_send(wm_comm *comm, wm_stream *stream,
                          const wm_buffer_view *buf, uint64_t count,
                          uint32_t dtype, uint32_t peer) {
  (void)stream;
  return p2p(comm, true, buf, count, dtype, peer);
}

static wm_error *p2p_recv(wm_comm *comm, wm_stream *stream,
                          const wm_buffer_view *buf, uint64_t count,
                          uint32_t dtype, uint32_t peer) {
  (void)stream;
  return p2p(comm, false, buf, count, dtype, peer);
}

static wm_error *barrier(wm_comm *comm, wm_stream *stream) {
  (void)stream;
  return cpu_error_from(wm_comm_barrier(comm->c));
}

const wm_collective_tier cpu_collective_tier = {
    .struct_size = sizeof(wm_collective_tier),
    .coll_query = coll_query,
    .comm_create = comm_create,
    .comm_destroy = comm_destroy,
    .comm_abort = comm_abort,
    .all_reduce = all_reduce,
    .all_gather = all_gather,
    .reduce_scatter = reduce_scatter,
    .broadcast = broadcast,
    .send = p2p_send,
    .recv = p2p_recv,
    .barrier = barrier,
};
