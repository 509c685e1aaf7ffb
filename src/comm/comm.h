// Collectives: AllReduce, AllGather, ReduceScatter, Broadcast, Send/Recv and
// Barrier over a communicator of ranks, either threads of one process
// (shared memory) or the processes of an MPI job (Open MPI, mpirun).
//
// A communicator is made by every rank with the same id: "threads:KEY"
// for |size| threads of this process (wm_comm_new_id makes a KEY), or
// "mpi:world" for the processes of MPI_COMM_WORLD. Every call is
// collective over the communicator (Send/Recv over the pair) and blocks
// until this rank's part is done: its buffers may be reused on return.
//
// Algorithms (chosen by size unless forced with wm_comm_set_algo or, for
// every communicator opened after it is set, WMAP_COMM_ALGO):
// - threads: "direct" for small messages (each rank reads every rank's
//   buffer: one rendezvous), "ring" for large ones (reduce-scatter then
//   all-gather around the ring, each step reading the left neighbour).
// - mpi: "rd" (recursive doubling) for small AllReduce and AllGather,
//   "ring" for large, over MPI point-to-point messages.
// Every rank computes each element in the same order, so all ranks hold
// bit-identical results.
//
// Faults: every wait ends after wm_comm_timeout() seconds
// (WMAP_COMM_TIMEOUT, default 30) with an error naming the communicator,
// the operation, and the peer waited for; a rank that left (destroyed or
// aborted its communicator) is reported at once on threads. Ranks calling
// different collectives (kind, count, dtype, operation or root) get an
// error naming the peer and both calls. After an error the communicator
// refuses every later call; on MPI the process should then end with
// wm_comm_mpi_abort (MPI_Finalize would wait for the dead rank).
//
// Thread-safety: one thread per communicator handle; the ranks of a thread
// group are distinct threads.
#ifndef WMAP_SRC_COMM_COMM_H_
#define WMAP_SRC_COMM_COMM_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wmap/base.h"

#ifdef __cplusplus
extern "C" {
#endif

// Operations; the first four are wm_collective_tier's WM_COLL_* numbers.
typedef enum wm_comm_op {
  WM_COMM_ALL_REDUCE = 1,
  WM_COMM_ALL_GATHER = 2,
  WM_COMM_REDUCE_SCATTER = 3,
  WM_COMM_BROADCAST = 4,
  WM_COMM_SEND = 5,
  WM_COMM_RECV = 6,
  WM_COMM_BARRIER = 7,
} wm_comm_op_t;

// Reductions: wm_collective_tier's WM_REDOP_* numbers.
typedef enum wm_comm_redop {
  WM_COMM_SUM = 0,
  WM_COMM_PROD = 1,
  WM_COMM_MIN = 2,
  WM_COMM_MAX = 3,
  WM_COMM_AVG = 4,
} wm_comm_redop_t;

typedef enum wm_comm_algo {
  WM_COMM_ALGO_AUTO = 0,    // by message size
  WM_COMM_ALGO_RING = 1,    // threads and mpi
  WM_COMM_ALGO_DIRECT = 2,  // threads only
  WM_COMM_ALGO_RD = 3,      // mpi only: recursive doubling
} wm_comm_algo_t;

#define WM_COMM_ID_MAX 64  // bytes of an id, NUL included

typedef struct wm_comm wm_comm_t;

// Names: "AllReduce", "sum", "float32", "ring"; "?" when unknown.
const char *wm_comm_op_name(uint32_t op);
const char *wm_comm_redop_name(uint32_t redop);
const char *wm_comm_dtype_name(uint32_t dtype);
const char *wm_comm_algo_name(wm_comm_algo_t algo);
// Bytes per element of an ONNX |dtype| the collectives carry (FLOAT,
// FLOAT16, BFLOAT16, DOUBLE, INT32, INT64, INT8, UINT8); 0 otherwise.
size_t wm_comm_dtype_size(uint32_t dtype);
// Whether |redop| reduces |dtype| (AVG: floating types only).
bool wm_comm_redop_ok(uint32_t dtype, uint32_t redop);
// WMAP_COMM_TIMEOUT in seconds (> 0, at most a day), default 30.
double wm_comm_timeout(void);

// A fresh "threads:KEY" id, unique in this process.
void wm_comm_new_id(char out[WM_COMM_ID_MAX]);
// Joins communicator |id| as |rank| of |size|: "threads:..." (all |size|
// ranks join with the same id and size) or "mpi:world" (|rank| and |size|
// must be the MPI world's; wm_comm_mpi_init first).
wm_status_t wm_comm_open(const char *id, int32_t rank, int32_t size,
                         wm_comm_t **out_comm) WM_MUST_USE_RESULT;
// Leaves: on threads the others' later waits for this rank fail at once.
void wm_comm_destroy(wm_comm_t *comm);
// Marks the communicator failed; its and (threads) every rank's waits end
// with an error. Safe from another thread.
void wm_comm_abort(wm_comm_t *comm);

int32_t wm_comm_rank(const wm_comm_t *comm);
int32_t wm_comm_size(const wm_comm_t *comm);
const char *wm_comm_id(const wm_comm_t *comm);
// "threads" or "mpi".
const char *wm_comm_transport(const wm_comm_t *comm);
// Forces an algorithm (AUTO restores the size rule); an algorithm the
// transport lacks is INVALID_ARGUMENT.
wm_status_t wm_comm_set_algo(wm_comm_t *comm,
                             wm_comm_algo_t algo) WM_MUST_USE_RESULT;
// The algorithm a call of |op| over |bytes| (per rank) would use.
wm_comm_algo_t wm_comm_algo_for(const wm_comm_t *comm, uint32_t op,
                                size_t bytes);
// The same rule without a communicator: |transport| "threads" or "mpi",
// |forced| as wm_comm_set_algo or WMAP_COMM_ALGO would set it.
wm_comm_algo_t wm_comm_algo_rule(const char *transport, uint32_t op,
                                 size_t bytes, int32_t size,
                                 wm_comm_algo_t forced);
// Parses "auto", "ring", "direct" or "rd"; false otherwise.
bool wm_comm_algo_parse(const char *text, wm_comm_algo_t *out);

// |count| elements per rank: AllReduce's and Broadcast's whole buffer,
// AllGather's send (recv holds size * count), ReduceScatter's recv (send
// holds size * count). In place when send == recv (AllGather: send at
// recv + rank * count; ReduceScatter: recv at send + rank * count).
// Broadcast reads |send| on |root| only.
wm_status_t wm_comm_all_reduce(wm_comm_t *comm, const void *send, void *recv,
                               size_t count, uint32_t dtype,
                               uint32_t redop) WM_MUST_USE_RESULT;
wm_status_t wm_comm_all_gather(wm_comm_t *comm, const void *send, void *recv,
                               size_t count, uint32_t dtype) WM_MUST_USE_RESULT;
wm_status_t wm_comm_reduce_scatter(wm_comm_t *comm, const void *send,
                                   void *recv, size_t count, uint32_t dtype,
                                   uint32_t redop) WM_MUST_USE_RESULT;
wm_status_t wm_comm_broadcast(wm_comm_t *comm, const void *send, void *recv,
                              size_t count, uint32_t dtype,
                              int32_t root) WM_MUST_USE_RESULT;
// Point to point: a send matches the peer's recv of the same count and
// dtype; pairs are ordered per direction.
wm_status_t wm_comm_send(wm_comm_t *comm, const void *buf, size_t count,
                         uint32_t dtype, int32_t peer) WM_MUST_USE_RESULT;
wm_status_t wm_comm_recv(wm_comm_t *comm, void *buf, size_t count,
                         uint32_t dtype, int32_t peer) WM_MUST_USE_RESULT;
wm_status_t wm_comm_barrier(wm_comm_t *comm) WM_MUST_USE_RESULT;

// Calls of |op| this rank completed and the bytes they carried (the
// per-rank S of nccl-tests: AllReduce and Broadcast the buffer, AllGather
// the whole output, ReduceScatter the whole input, Send/Recv the message).
void wm_comm_counts(const wm_comm_t *comm, uint32_t op, uint64_t *out_calls,
                    uint64_t *out_bytes);

// The communicator of the calling thread's rank, for the graph's
// collective nodes (wmap.AllReduce, wmap.AllGather) to run on: set by the
// code that runs a rank's partition, NULL when none.
void wm_comm_set_current(wm_comm_t *comm);
wm_comm_t *wm_comm_current(void);

// ------------------------------------------------------------ checking
// Known data whose reductions are exact in every dtype: elements
// [first, first + count) of |rank|'s input (|redop| picks the values:
// PROD gets powers of two).
void wm_comm_fill(void *buf, size_t count, uint32_t dtype, uint32_t redop,
                  int32_t rank, size_t first);
// Checks |recv| of |op| after every rank sent wm_comm_fill data (rank r's
// whole send buffer from element 0; Broadcast: the root's); |arg| is the
// redop or the root. DATA_LOSS names the first wrong element.
wm_status_t wm_comm_verify(uint32_t op, const void *recv, size_t count,
                           uint32_t dtype, uint32_t arg, int32_t rank,
                           int32_t size) WM_MUST_USE_RESULT;
// Collective: every rank runs AllReduce, AllGather, ReduceScatter and
// Broadcast over every dtype, reduction, count in {0, 1, 17, 1000,
// |large|}, in place and out of place, with every algorithm the transport
// has, verifying each result. *out_calls counts the calls.
wm_status_t wm_comm_conform(wm_comm_t *comm, size_t large,
                            size_t *out_calls) WM_MUST_USE_RESULT;

// ------------------------------------------------------------------ MPI
// Whether wmap was built with MPI.
bool wm_comm_mpi_built(void);
// Whether this process was started by mpirun (Open MPI, PMIx or PMI
// variables), so that wm_comm_mpi_init is worth calling.
bool wm_comm_mpi_launched(void);
// MPI_Init once (idempotent); the world's rank and size.
wm_status_t wm_comm_mpi_init(int32_t *out_rank,
                             int32_t *out_size) WM_MUST_USE_RESULT;
// MPI_Finalize when wm_comm_mpi_init ran; only after a clean run.
void wm_comm_mpi_finalize(void);
// Waits for every process of the job without spinning (MPI_Ibarrier
// polled with sleeps), so that the cores are free meanwhile.
wm_status_t wm_comm_mpi_idle_barrier(void) WM_MUST_USE_RESULT;
// Ends the whole job (after a communication error), half a second after
// the call so that the other ranks' reports come out too.
_Noreturn void wm_comm_mpi_abort(int code);
// MPI's own collective, the peer of wm_comm_*: MPI_Allreduce,
// MPI_Allgather, MPI_Reduce_scatter_block, MPI_Bcast or MPI_Barrier on
// the world, with the same arguments as the wm_comm_ call (|arg| is the
// redop or the root). Blocking, without a timeout. UNIMPLEMENTED for a
// dtype or redop MPI lacks (float16, bfloat16, avg).
wm_status_t wm_comm_mpi_native(uint32_t op, const void *send, void *recv,
                               size_t count, uint32_t dtype,
                               uint32_t arg) WM_MUST_USE_RESULT;

#ifdef __cplusplus
}
#endif

#endif  // WMAP_SRC_COMM_COMM_H_
