// wmap comm-bench: the table users know from nccl-tests. Times a backend's
// collective tier over threads of this process and, under mpirun, over
// MPI processes, beside MPI's own collectives measured in the same run:
// per operation and size, P50 and P99 of the calls over interleaved
// blocks, algorithm and bus bandwidth, and a check of every result.
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "comm_bench.h"
#include "comm/comm.h"
#include "wmap/bench.h"
#include "wmap/report.h"

static const char usage[] =
    "usage: wmap comm-bench [options]\n"
    "       mpirun -np N wmap comm-bench [options]\n"
    "\n"
    "Measures collectives as nccl-tests does. For each operation and size S\n"
    "(bytes of the buffer: AllReduce's and Broadcast's per rank, AllGather's\n"
    "whole output, ReduceScatter's whole input) every implementation first\n"
    "runs one call on known data whose result is checked on every rank, then\n"
    "--blocks blocks of calls, the implementations' blocks interleaved. A\n"
    "call's time is the longest any rank spent in it; P50 and P99 are\n"
    "nearest-rank over every call (P99 is marked ~ below 662 calls).\n"
    "algbw = S / P50; busbw = algbw x 2(n-1)/n for AllReduce, (n-1)/n for\n"
    "AllGather and ReduceScatter, 1 for Broadcast (n ranks).\n"
    "\n"
    "Implementations (--impl):\n"
    "  threads     the backend's collective tier, ranks are threads of one\n"
    "              process (under mpirun: of rank 0's, the others idle)\n"
    "  mpi         the backend's collective tier over the MPI processes\n"
    "  mpi-native  MPI's own MPI_Allreduce, MPI_Allgather,\n"
    "              MPI_Reduce_scatter_block and MPI_Bcast: the peer\n"
    "Default: threads alone, or all three under mpirun.\n"
    "\n"
    "Options:\n"
    "  --backend NAME       the backend whose collective tier runs (default\n"
    "                       cpu)\n"
    "  --ranks N            ranks of the threads implementation (default 2;\n"
    "                       under mpirun the job's size)\n"
    "  --ops LIST           allreduce, allgather, reducescatter, broadcast\n"
    "                       (default allreduce)\n"
    "  --dtype NAME         float32 (default), float16, bfloat16, float64,\n"
    "                       int32, int64, int8, uint8\n"
    "  --redop NAME         sum (default), prod, min, max, avg\n"
    "  --sizes LIST         sizes in bytes (K, M, G suffixes are powers of\n"
    "                       1024): a list 1K,16M or a range MIN:MAX stepping\n"
    "                       by --factor (default 8:256M)\n"
    "  --factor F           range step (default 2)\n"
    "  --impl LIST          implementations (above)\n"
    "  --algo NAME          force the tier's algorithm: auto (default), ring,\n"
    "                       direct (threads), rd (mpi AllReduce)\n"
    "  --blocks N           blocks per implementation and size (default 5)\n"
    "  --min-time S         timed seconds per block at least (default 0.05)\n"
    "  --min-iters N        timed calls per block at least (default 5)\n"
    "  --warmup N           untimed calls before each block (default 1)\n"
    "  --no-check           skip the checked call\n"
    "  -o, --output FILE    write the baseline JSON (wmap.baseline/1, one\n"
    "                       configuration per implementation, operation and\n"
    "                       size) for `wmap compare`\n"
    "  --html FILE          write an HTML page with the bandwidth-by-size\n"
    "                       curves and the table\n"
    "  --format FORMAT      stdout: text (default) or json\n"
    "                       (wmap.comm-bench/1)\n" WM_CLI_BACKEND_OPTIONS_USAGE
    "  -h, --help           show this help\n"
    "\n"
    "Environment: WMAP_COMM_TIMEOUT (seconds a rank waits for a peer,\n"
    "default 30). Exit status: 0 when every check passed, 1 on a failed\n"
    "check or error, 2 on bad usage.\n";

// One rank's resources on the backend.
typedef struct rank_res {
  wm_device *dev;
  wm_stream *stream;
  wm_comm *comm;
  wm_buffer *sb, *rb;
  char *sp, *rp;    // their host addresses
  double *samples;  // this rank's call times (ns)
  wm_status_t status;
  double last_ns;  // the last warm-up call
} rank_res_t;

// What every rank of one implementation does next.
typedef struct job {
  int impl;
  uint32_t op;
  size_t count;   // per rank (comm.h's meaning)
  int32_t iters;  // timed calls (0: only check and warm up)
  int32_t warmup;
  bool check;
} job_t;

typedef struct cb {
  const cb_args_t *a;
  wm_registry_t *reg;
  wm_backend_t *be;
  const wm_plugin_api *api;
  const wm_collective_tier *ct;
  bool mpi;  // started by mpirun
  int32_t wrank, wsize;
  size_t max_bytes;
  // threads: one team, rank 0 is the calling thread
  int32_t nt;
  rank_res_t *tr;
  wm_pool_t *pool;   // one thread per rank
  const job_t *job;  // the team's current job
  bool widen;        // mpirun bound this process to fewer cores than ranks
  bool widened;      // the worker ranks were given every core
  // this process's rank among the MPI processes (mpi, mpi-native)
  rank_res_t mr;
  bool mr_up;
  char algo_env[16];
} cb_t;

// ------------------------------------------------------------ options

static bool parse_bytes(const char *s, size_t *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !(v >= 1)) {
    return false;
  }
  double mul = 1;
  if (*end == 'K' || *end == 'k') {
    mul = 1024.0, end++;
  } else if (*end == 'M' || *end == 'm') {
    mul = 1048576.0, end++;
  } else if (*end == 'G' || *end == 'g') {
    mul = 1073741824.0, end++;
  }
  if (*end == 'B' || *end == 'b') {
    end++;
  }
  v *= mul;
  if (*end || v > 68719476736.0 || v != floor(v)) {
    return false;
  }
  *out = (size_t)v;
  return true;
}

static int parse_sizes(cb_args_t *a) {
  const char *t = a->size_text ? a->size_text : "8:256M";
  char buf[512];
  if (strlen(t) >= sizeof(buf)) {
    return wm_cli_usage_error("comm-bench", "--sizes is too long");
  }
  snprintf(buf, sizeof(buf), "%s", t);
  char *colon = strchr(buf, ':');
  a->n_sizes = 0;
  if (colon) {
    *colon = '\0';
    size_t lo, hi;
    if (!parse_bytes(buf, &lo) || !parse_bytes(colon + 1, &hi) || hi < lo) {
      return wm_cli_usage_error("comm-bench",
                                "--sizes \"%s\": want MIN:MAX in bytes with "
                                "MIN <= MAX, e.g. 8:256M",
                                t);
    }
    for (double s = (double)lo; s <= (double)hi * (1 + 1e-9); s *= a->factor) {
      if (a->n_sizes == MAX_SIZES) {
        return wm_cli_usage_error("comm-bench",
                                  "--sizes \"%s\" with --factor %g gives more "
                                  "than %d sizes",
                                  t, a->factor, MAX_SIZES);
      }
      a->sizes[a->n_sizes++] = (size_t)llround(s);
    }
    return WM_EXIT_OK;
  }
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (a->n_sizes == MAX_SIZES || !parse_bytes(tok, &a->sizes[a->n_sizes])) {
      return wm_cli_usage_error("comm-bench",
                                "--sizes: \"%s\" is not a size in bytes (or "
                                "more than %d sizes)",
                                tok, MAX_SIZES);
    }
    a->n_sizes++;
  }
  return a->n_sizes ? WM_EXIT_OK
                    : wm_cli_usage_error("comm-bench", "--sizes is empty");
}

static int parse_list(const char *opt, const char *text,
                      const char *const *names, size_t n_names, bool *out,
                      const char *known) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", text);
  int found = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    size_t k = 0;
    while (k < n_names && strcmp(tok, names[k]) != 0) {
      k++;
    }
    if (k == n_names) {
      return wm_cli_usage_error("comm-bench", "%s: unknown \"%s\" (known: %s)",
                                opt, tok, known);
    }
    out[k] = true;
    found++;
  }
  return found ? WM_EXIT_OK
               : wm_cli_usage_error("comm-bench", "%s is empty", opt);
}

static int parse_args(int argc, char **argv, cb_args_t *a) {
  static const struct option opts[] = {
      {"backend", required_argument, NULL, 'b'},
      {"ranks", required_argument, NULL, 'r'},
      {"ops", required_argument, NULL, 'O'},
      {"dtype", required_argument, NULL, 'd'},
      {"redop", required_argument, NULL, 'R'},
      {"sizes", required_argument, NULL, 's'},
      {"factor", required_argument, NULL, 'f'},
      {"impl", required_argument, NULL, 'i'},
      {"algo", required_argument, NULL, 'a'},
      {"blocks", required_argument, NULL, 'B'},
      {"min-time", required_argument, NULL, 't'},
      {"min-iters", required_argument, NULL, 'n'},
      {"warmup", required_argument, NULL, 'w'},
      {"no-check", no_argument, NULL, 'C'},
      {"output", required_argument, NULL, 'o'},
      {"html", required_argument, NULL, 'H'},
      {"format", required_argument, NULL, 'F'},
      {"backend-path", required_argument, NULL, 'P'},
      {"threads", required_argument, NULL, 'T'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  *a = (cb_args_t){.backend = "cpu",
                   .ranks = 2,
                   .dtype = 1,
                   .redop = WM_COMM_SUM,
                   .factor = 2,
                   .blocks = 5,
                   .min_time = 0.05,
                   .min_iters = 5,
                   .warmup = 1,
                   .check = true,
                   .bo = {.quiet = true}};
  optind = 1;
  int c, rc = WM_EXIT_OK;
  while (rc == WM_EXIT_OK &&
         (c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
    switch (c) {
      case 'b':
        a->backend = optarg;
        break;
      case 'r':
        rc = wm_cli_count_option("comm-bench", "ranks", optarg, 1, 256,
                                 &a->ranks);
        a->ranks_set = true;
        break;
      case 'O': {
        static const char *const names[] = {"allreduce", "allgather",
                                            "reducescatter", "broadcast"};
        bool on[4] = {false};
        rc = parse_list("--ops", optarg, names, 4, on,
                        "allreduce, allgather, reducescatter, broadcast");
        a->n_ops = 0;
        for (uint32_t k = 0; k < 4; k++) {
          if (on[k]) {
            a->ops[a->n_ops++] = k + 1;
          }
        }
        break;
      }
      case 'd': {
        static const uint32_t dts[] = {1, 10, 16, 11, 6, 7, 3, 2};
        size_t k = 0;
        while (k < 8 && strcmp(optarg, wm_comm_dtype_name(dts[k])) != 0) {
          k++;
        }
        if (k == 8) {
          rc = wm_cli_usage_error("comm-bench",
                                  "--dtype: unknown \"%s\" (known: float32, "
                                  "float16, bfloat16, float64, int32, int64, "
                                  "int8, uint8)",
                                  optarg);
        } else {
          a->dtype = dts[k];
        }
        break;
      }
      case 'R': {
        uint32_t k = 0;
        while (k <= WM_COMM_AVG && strcmp(optarg, wm_comm_redop_name(k))) {
          k++;
        }
        if (k > WM_COMM_AVG) {
          rc = wm_cli_usage_error("comm-bench",
                                  "--redop: unknown \"%s\" (known: sum, "
                                  "prod, min, max, avg)",
                                  optarg);
        }
        a->redop = k;
        break;
      }
      case 's':
        a->size_text = optarg;
        break;
      case 'f':
        rc = wm_cli_number_option("comm-bench", "factor", optarg, 1.05, 1024,
                                  &a->factor);
        break;
      case 'i':
        memset(a->impl, 0, sizeof(a->impl));
        rc = parse_list("--impl", optarg, cb_impl_names, N_IMPL, a->impl,
                        "threads, mpi, mpi-native");
        a->impl_set = true;
        break;
      case 'a':
        if (!wm_comm_algo_parse(optarg, &a->algo)) {
          rc = wm_cli_usage_error("comm-bench",
                                  "--algo: unknown \"%s\" (known: auto, "
                                  "ring, direct, rd)",
                                  optarg);
        }
        break;
      case 'B':
        rc = wm_cli_count_option("comm-bench", "blocks", optarg, 1, 1000,
                                 &a->blocks);
        break;
      case 't':
        rc = wm_cli_number_option("comm-bench", "min-time", optarg, 0, 3600,
                                  &a->min_time);
        break;
      case 'n':
        rc = wm_cli_count_option("comm-bench", "min-iters", optarg, 1, 1000000,
                                 &a->min_iters);
        break;
      case 'w':
        rc = wm_cli_count_option("comm-bench", "warmup", optarg, 0, 1000,
                                 &a->warmup);
        break;
      case 'C':
        a->check = false;
        break;
      case 'o':
        a->output = optarg;
        break;
      case 'H':
        a->html = optarg;
        break;
      case 'F':
        if (strcmp(optarg, "json") == 0 || strcmp(optarg, "text") == 0) {
          a->json = optarg[0] == 'j';
        } else {
          rc = wm_cli_usage_error(
              "comm-bench", "--format: want text or json, got \"%s\"", optarg);
        }
        break;
      case 'P':
        rc =
            wm_cli_backend_option("comm-bench", "backend-path", optarg, &a->bo);
        break;
      case 'T':
        rc = wm_cli_backend_option("comm-bench", "threads", optarg, &a->bo);
        break;
      case 'h':
        fputs(usage, stdout);
        return -1;
      default:
        return wm_cli_option_error("comm-bench", "ho:", argv);
    }
  }
  if (rc == WM_EXIT_OK && optind < argc) {
    rc = wm_cli_usage_error("comm-bench", "unexpected operand \"%s\"",
                            argv[optind]);
  }
  if (rc == WM_EXIT_OK && a->n_ops == 0) {
    a->ops[a->n_ops++] = WM_COMM_ALL_REDUCE;
  }
  if (rc == WM_EXIT_OK && !wm_comm_redop_ok(a->dtype, a->redop)) {
    rc = wm_cli_usage_error("comm-bench", "--redop %s does not apply to %s",
                            wm_comm_redop_name(a->redop),
                            wm_comm_dtype_name(a->dtype));
  }
  if (rc == WM_EXIT_OK) {
    rc = parse_sizes(a);
  }
  return rc;
}

// ------------------------------------------------------------ ranks

static size_t per_rank_send(uint32_t op, size_t count, int32_t n) {
  return op == WM_COMM_REDUCE_SCATTER ? count * (size_t)n : count;
}

static size_t per_rank_recv(uint32_t op, size_t count, int32_t n) {
  return op == WM_COMM_ALL_GATHER ? count * (size_t)n : count;
}

static wm_status_t be_error(const cb_t *b, wm_error *e, const char *what) {
  return wm_backend_error(b->be, e, what);
}

// Opens a rank of communicator |id|: device, stream, two buffers of the
// largest size, the communicator, room for |max_iters| samples.
static wm_status_t rank_open(cb_t *b, rank_res_t *r, const char *id,
                             int32_t rank, int32_t size, size_t max_iters) {
  const wm_plugin_api *api = b->api;
  const wm_target_desc *t = wm_backend_target(b->be, 0);
  WM_RETURN_IF_ERROR(be_error(b, api->device_open(t, &r->dev), "device_open"));
  WM_RETURN_IF_ERROR(be_error(b, api->device->stream_create(r->dev, &r->stream),
                              "stream_create"));
  WM_RETURN_IF_ERROR(
      be_error(b, api->device->mem_alloc(r->dev, b->max_bytes, 64, 0, &r->sb),
               "mem_alloc"));
  WM_RETURN_IF_ERROR(
      be_error(b, api->device->mem_alloc(r->dev, b->max_bytes, 64, 0, &r->rb),
               "mem_alloc"));
  if (!api->device->mem_map) {
    return WM_ERROR(UNIMPLEMENTED,
                    "backend %s cannot map its buffers to fill and check "
                    "them (no mem_map)",
                    wm_backend_name(b->be));
  }
  void *p = NULL;
  WM_RETURN_IF_ERROR(be_error(b, api->device->mem_map(r->sb, &p), "mem_map"));
  r->sp = p;
  WM_RETURN_IF_ERROR(be_error(b, api->device->mem_map(r->rb, &p), "mem_map"));
  r->rp = p;
  r->samples = wm_calloc(max_iters + 1, sizeof(double));
  if (!r->samples) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for samples");
  }
  if (id) {
    WM_RETURN_IF_ERROR(
        be_error(b,
                 b->ct->comm_create(&r->dev, 1, (uint32_t)rank, (uint32_t)size,
                                    id, strlen(id), &r->comm),
                 "comm_create"));
  }
  return NULL;
}

static void rank_close(cb_t *b, rank_res_t *r) {
  const wm_device_tier *d = b->api ? b->api->device : NULL;
  if (r->comm) {
    b->ct->comm_destroy(r->comm);
  }
  if (d && r->sb) {
    if (r->sp) {
      d->mem_unmap(r->sb);
    }
    d->mem_free(r->sb);
  }
  if (d && r->rb) {
    if (r->rp) {
      d->mem_unmap(r->rb);
    }
    d->mem_free(r->rb);
  }
  if (d && r->stream) {
    d->stream_destroy(r->stream);
  }
  if (d && r->dev) {
    d->device_close(r->dev);
  }
  free(r->samples);
  wm_status_free(r->status);
  memset(r, 0, sizeof(*r));
}

// One call of |job| on rank |r|.
static wm_status_t call_once(cb_t *b, rank_res_t *r, const job_t *job) {
  const cb_args_t *a = b->a;
  uint32_t arg = job->op == WM_COMM_BROADCAST ? 0 : a->redop;
  if (job->impl == IMPL_NATIVE) {
    return wm_comm_mpi_native(job->op, r->sp, r->rp, job->count, a->dtype, arg);
  }
  wm_buffer_view s = {.struct_size = sizeof(s), .buffer = r->sb};
  wm_buffer_view v = {.struct_size = sizeof(v), .buffer = r->rb};
  wm_error *e = NULL;
  switch (job->op) {
    case WM_COMM_ALL_REDUCE:
      e = b->ct->all_reduce(r->comm, r->stream, &s, &v, job->count, a->dtype,
                            a->redop);
      break;
    case WM_COMM_ALL_GATHER:
      e = b->ct->all_gather(r->comm, r->stream, &s, &v, job->count, a->dtype);
      break;
    case WM_COMM_REDUCE_SCATTER:
      e = b->ct->reduce_scatter(r->comm, r->stream, &s, &v, job->count,
                                a->dtype, a->redop);
      break;
    default:
      e = b->ct->broadcast(r->comm, r->stream, &s, &v, job->count, a->dtype, 0);
      break;
  }
  return be_error(b, e, wm_comm_op_name(job->op));
}

// Rank |rank| of |size| runs |job|: the checked call, the warm-up, the
// timed calls.
static wm_status_t rank_job(cb_t *b, rank_res_t *r, const job_t *job,
                            int32_t rank, int32_t size) {
  const cb_args_t *a = b->a;
  uint32_t redop = job->op == WM_COMM_BROADCAST ? WM_COMM_SUM : a->redop;
  if (job->check) {
    memset(r->rp, 0,
           per_rank_recv(job->op, job->count, size) *
               wm_comm_dtype_size(a->dtype));
    wm_comm_fill(r->sp, per_rank_send(job->op, job->count, size), a->dtype,
                 redop, rank, 0);
    WM_RETURN_IF_ERROR(call_once(b, r, job));
    WM_RETURN_IF_ERROR(wm_comm_verify(
        job->op, r->rp, job->count, a->dtype,
        job->op == WM_COMM_BROADCAST ? 0 : a->redop, rank, size));
  }
  for (int32_t i = 0; i < job->warmup; i++) {
    uint64_t t0 = wm_now_ns();
    WM_RETURN_IF_ERROR(call_once(b, r, job));
    r->last_ns = (double)(wm_now_ns() - t0);
  }
  for (int32_t i = 0; i < job->iters; i++) {
    uint64_t t0 = wm_now_ns();
    WM_RETURN_IF_ERROR(call_once(b, r, job));
    r->samples[i] = (double)(wm_now_ns() - t0);
  }
  return NULL;
}

// One thread rank of the team's current job: the pool runs rank r on its
// thread r (each thread's home share is one rank), so all run at once.
static void team_ranks(void *ctx, size_t begin, size_t end) {
  cb_t *b = ctx;
  for (size_t r = begin; r < end; r++) {
    rank_res_t *x = &b->tr[r];
    wm_status_free(x->status);
    x->status = rank_job(b, x, b->job, (int32_t)r, b->nt);
  }
}

// Runs |job| on every thread rank; the first rank's error, if any.
static wm_status_t team_run(cb_t *b, const job_t *job) {
  b->job = job;
  wm_pool_for(b->pool, (size_t)b->nt, 1, team_ranks, b);
  for (int32_t r = 0; r < b->nt; r++) {
    if (b->tr[r].status) {
      wm_status_t s = b->tr[r].status;
      b->tr[r].status = NULL;
      return wm_status_annotate(s, "thread rank %d", r);
    }
  }
  return NULL;
}

// The thread ranks: their buffers and communicators, and a pool of as many
// threads (this one is rank 0).
static wm_status_t team_start(cb_t *b, size_t max_iters) {
  b->nt = b->a->ranks;
  b->tr = wm_calloc((size_t)b->nt, sizeof(*b->tr));
  if (!b->tr) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for %d ranks", b->nt);
  }
  char id[WM_COMM_ID_MAX];
  wm_comm_new_id(id);
  for (int32_t r = 0; r < b->nt; r++) {
    WM_RETURN_IF_ERROR(rank_open(b, &b->tr[r], NULL, r, b->nt, max_iters));
  }
  // comm_create of the threads transport does not wait for the others.
  for (int32_t r = 0; r < b->nt; r++) {
    WM_RETURN_IF_ERROR(be_error(
        b,
        b->ct->comm_create(&b->tr[r].dev, 1, (uint32_t)r, (uint32_t)b->nt, id,
                           strlen(id), &b->tr[r].comm),
        "comm_create"));
  }
  // Under mpirun the other processes sleep through the threads
  // implementation's blocks: its worker ranks may use every core, whichever
  // one mpirun bound this process to. They inherit this thread's set when
  // the pool starts them; this thread keeps its own.
  cpu_set_t own, all;
  CPU_ZERO(&all);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (long c = 0; c < online && c < CPU_SETSIZE; c++) {
    CPU_SET((int)c, &all);
  }
  b->widened = b->widen && sched_getaffinity(0, sizeof(own), &own) == 0 &&
               sched_setaffinity(0, sizeof(all), &all) == 0;
  wm_status_t s = wm_pool_create(b->nt, &b->pool);
  if (b->widened) {
    sched_setaffinity(0, sizeof(own), &own);
  }
  return s;
}

static void team_stop(cb_t *b) {
  wm_pool_destroy(b->pool);
  for (int32_t r = 0; b->tr && r < b->nt; r++) {
    rank_close(b, &b->tr[r]);
  }
  free(b->tr);
}

// Runs |job| for implementation job->impl on the ranks it has; on return
// |out| (iters entries, on the process that prints) holds the longest
// time any rank spent in each call, and *out_last the longest last
// warm-up call.
static wm_status_t run_job(cb_t *b, const job_t *job, double *out,
                           double *out_last) {
  wm_status_t s = NULL;
  int32_t iters = job->iters;
  if (job->impl == IMPL_THREADS) {
    if (b->wrank == 0) {
      s = team_run(b, job);
      double last = 0;
      for (int32_t i = 0; i < iters; i++) {
        double m = 0;
        for (int32_t r = 0; r < b->nt; r++) {
          m = b->tr[r].samples[i] > m ? b->tr[r].samples[i] : m;
        }
        out[i] = m;
      }
      for (int32_t r = 0; r < b->nt; r++) {
        last = b->tr[r].last_ns > last ? b->tr[r].last_ns : last;
      }
      *out_last = last;
    }
    if (b->mpi) {  // the other processes waited; share the verdict
      wm_status_t w = wm_comm_mpi_idle_barrier();
      if (!s) {
        s = w;
      } else {
        wm_status_free(w);
      }
      double v[2] = {s ? 1 : 0, b->wrank == 0 ? *out_last : 0}, m[2];
      wm_status_t e =
          wm_comm_mpi_native(WM_COMM_ALL_REDUCE, v, m, 2, 11, WM_COMM_MAX);
      if (e) {
        wm_status_free(s);
        return e;
      }
      *out_last = m[1];
      if (!s && m[0] > 0) {
        s = WM_ERROR(UNAVAILABLE,
                     "the threads implementation failed on "
                     "rank 0's process");
      }
    }
    return s;
  }
  s = rank_job(b, &b->mr, job, b->wrank, b->wsize);
  // Every process learns whether any failed before the next collective.
  double v[2] = {s ? 1 : 0, b->mr.last_ns}, m[2];
  wm_status_t e =
      wm_comm_mpi_native(WM_COMM_ALL_REDUCE, v, m, 2, 11, WM_COMM_MAX);
  if (e) {
    wm_status_free(s);
    return e;
  }
  *out_last = m[1];
  if (s || m[0] > 0) {
    return s ? s
             : WM_ERROR(UNAVAILABLE, "%s failed on another process",
                        cb_impl_names[job->impl]);
  }
  if (iters > 0) {
    e = wm_comm_mpi_native(WM_COMM_ALL_REDUCE, b->mr.samples, out,
                           (size_t)iters, 11, WM_COMM_MAX);
  }
  return e;
}

// ------------------------------------------------------------ results

static wm_status_t row_add(row_t *row, const double *x, size_t n) {
  size_t need = row->n + n;
  if (need > row->cap) {
    size_t cap = need * 2;
    double *p = wm_realloc(row->samples, cap * sizeof(double));
    if (!p) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for samples");
    }
    row->samples = p;
    row->cap = cap;
  }
  memcpy(row->samples + row->n, x, n * sizeof(double));
  row->n = need;
  return NULL;
}

static wm_status_t measure(cb_t *b, row_t **out_rows, size_t *out_n) {
  const cb_args_t *a = b->a;
  const cb_report_t rep = {a, b->wsize};
  size_t es = wm_comm_dtype_size(a->dtype);
  int impls[N_IMPL], n_impl = 0;
  for (int k = 0; k < N_IMPL; k++) {
    if (a->impl[k]) {
      impls[n_impl++] = k;
    }
  }
  size_t cap = a->n_ops * a->n_sizes * (size_t)n_impl;
  row_t *rows = wm_calloc(cap + 1, sizeof(row_t));
  if (!rows) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  *out_rows = rows;
  size_t n_rows = 0;
  enum { MAX_ITERS = 100000 };
  double *buf = wm_calloc(MAX_ITERS + 1, sizeof(double));
  if (!buf) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_status_t s = NULL;
  for (size_t o = 0; !s && o < a->n_ops; o++) {
    uint32_t op = a->ops[o];
    for (size_t z = 0; !s && z < a->n_sizes; z++) {
      size_t size = a->sizes[z];
      row_t *first = &rows[n_rows];
      int32_t iters[N_IMPL] = {0};
      for (int k = 0; !s && k < n_impl; k++) {
        int impl = impls[k];
        int32_t n = cb_impl_ranks(&rep, impl);
        bool split = op == WM_COMM_ALL_GATHER || op == WM_COMM_REDUCE_SCATTER;
        size_t count = size / es / (split ? (size_t)n : 1);
        if (count == 0) {
          continue;  // too small to give every rank an element
        }
        row_t *r = &rows[n_rows++];
        r->op = op;
        r->size = count * es * (split ? (size_t)n : 1);
        r->count = count;
        r->impl = impl;
        r->algo = impl == IMPL_NATIVE
                      ? "mpi"
                      : wm_comm_algo_name(wm_comm_algo_rule(
                            impl == IMPL_MPI ? "mpi" : "threads", op,
                            count * es, n, a->algo));
        r->block_end = wm_calloc((size_t)a->blocks, sizeof(size_t));
        if (!r->block_end) {
          s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
          break;
        }
        snprintf(r->check, sizeof(r->check), "%s", a->check ? "ok" : "off");
        // The checked call and the warm-up give the time of one call.
        job_t j = {.impl = impl,
                   .op = op,
                   .count = count,
                   .warmup = a->warmup > 0 ? a->warmup : 1,
                   .check = a->check};
        double last = 0;
        s = run_job(b, &j, buf, &last);
        if (s) {
          if (a->check && wm_status_code(s) == WM_STATUS_DATA_LOSS) {
            snprintf(r->check, sizeof(r->check), "%s", wm_status_message(s));
          }
          s = wm_status_annotate(s, "%s %s of %zu bytes", cb_impl_names[impl],
                                 wm_comm_op_name(op), r->size);
          break;
        }
        double want = a->min_time * 1e9 / (last > 1 ? last : 1);
        iters[impl] = want > MAX_ITERS      ? MAX_ITERS
                      : want < a->min_iters ? a->min_iters
                                            : (int32_t)ceil(want);
      }
      size_t here = (size_t)(&rows[n_rows] - first);
      for (int32_t blk = 0; !s && blk < a->blocks; blk++) {
        for (size_t k = 0; !s && k < here; k++) {
          row_t *r = &first[(k + (size_t)blk) % here];  // rotate the order
          job_t j = {.impl = r->impl,
                     .op = op,
                     .count = r->count,
                     .iters = iters[r->impl],
                     .warmup = a->warmup};
          double last = 0;
          s = run_job(b, &j, buf, &last);
          if (!s && b->wrank == 0) {
            s = row_add(r, buf, (size_t)j.iters);
          }
          r->block_end[blk] = r->n;
          if (s) {
            s = wm_status_annotate(s, "%s %s of %zu bytes",
                                   cb_impl_names[r->impl], wm_comm_op_name(op),
                                   r->size);
          }
        }
      }
      for (size_t k = 0; !s && k < here && b->wrank == 0; k++) {
        row_t *r = &first[k];
        s = wm_stats_compute(r->samples, r->n, &r->stats);
        double t = r->stats.p50 * 1e-9;
        r->algbw = t > 0 ? (double)r->size / t / 1e9 : 0;
        r->busbw = r->algbw * cb_bus_factor(op, cb_impl_ranks(&rep, r->impl));
      }
      if (!s && b->wrank == 0 && !a->json) {
        for (size_t k = 0; k < here; k++) {
          fprintf(stderr, "comm-bench: %s %zu bytes %s: P50 %.2f us\n",
                  wm_comm_op_name(op), first[k].size,
                  cb_impl_names[first[k].impl], first[k].stats.p50 / 1e3);
        }
      }
    }
  }
  free(buf);
  *out_n = n_rows;
  return s;
}

static void rows_free(row_t *rows, size_t n) {
  for (size_t i = 0; rows && i < n; i++) {
    free(rows[i].samples);
    free(rows[i].block_end);
  }
  free(rows);
}

static wm_status_t setup(cb_t *b) {
  const cb_args_t *a = b->a;
  WM_RETURN_IF_ERROR(wm_cli_registry_open(&a->bo, &b->reg));
  WM_RETURN_IF_ERROR(wm_registry_find(b->reg, a->backend, &b->be));
  b->api = wm_backend_api(b->be);
  b->ct = b->api->collective;
  if (!b->ct) {
    return WM_ERROR(UNIMPLEMENTED,
                    "backend %s has no collective tier (see `wmap backends`)",
                    a->backend);
  }
  if (wm_backend_target_count(b->be) == 0) {
    return WM_ERROR(UNAVAILABLE, "backend %s has no device", a->backend);
  }
  size_t max = 0;
  for (size_t i = 0; i < a->n_sizes; i++) {
    max = a->sizes[i] > max ? a->sizes[i] : max;
  }
  b->max_bytes = max;
  if (a->impl[IMPL_THREADS] && b->wrank == 0) {
    cpu_set_t set;
    int cores = sched_getaffinity(0, sizeof(set), &set) == 0
                    ? CPU_COUNT(&set)
                    : (int)wm_cpu_count();
    b->widen = b->mpi && cores < a->ranks;
    WM_RETURN_IF_ERROR(team_start(b, 100000));
    if (b->widen && !b->widened) {
      fprintf(stderr,
              "comm-bench: warning: mpirun bound this process to %d core%s "
              "and its %d thread ranks could not be given more (run mpirun "
              "with --bind-to none)\n",
              cores, cores == 1 ? "" : "s", a->ranks);
    } else if (!b->mpi && cores < a->ranks) {
      fprintf(stderr,
              "comm-bench: warning: this process may run on %d core%s for %d "
              "thread ranks\n",
              cores, cores == 1 ? "" : "s", a->ranks);
    }
  }
  if (a->impl[IMPL_MPI] || a->impl[IMPL_NATIVE]) {
    WM_RETURN_IF_ERROR(rank_open(b, &b->mr,
                                 a->impl[IMPL_MPI] ? "mpi:world" : NULL,
                                 b->wrank, b->wsize, 100000));
    b->mr_up = true;
  }
  return NULL;
}

int wm_cli_comm_bench(int argc, char **argv) {
  cb_args_t a;
  int rc = parse_args(argc, argv, &a);
  if (rc != WM_EXIT_OK) {
    wm_cli_backend_options_deinit(&a.bo);
    return rc < 0 ? WM_EXIT_OK : rc;
  }
  cb_t b = {.a = &a, .wsize = 1};
  b.mpi = wm_comm_mpi_launched();
  if (b.mpi) {
    wm_status_t s = wm_comm_mpi_init(&b.wrank, &b.wsize);
    if (s) {
      wm_cli_backend_options_deinit(&a.bo);
      return wm_cli_fail(s);
    }
    if (a.ranks_set && a.ranks != b.wsize) {
      wm_comm_mpi_finalize();
      wm_cli_backend_options_deinit(&a.bo);
      return wm_cli_usage_error("comm-bench",
                                "--ranks %d under mpirun -np %d: the ranks "
                                "are the job's processes",
                                a.ranks, b.wsize);
    }
    a.ranks = b.wsize;
    if (!a.impl_set) {
      a.impl[IMPL_THREADS] = a.impl[IMPL_MPI] = a.impl[IMPL_NATIVE] = true;
    }
  } else {
    if (!a.impl_set) {
      a.impl[IMPL_THREADS] = true;
    }
    if (a.impl[IMPL_MPI] || a.impl[IMPL_NATIVE]) {
      wm_cli_backend_options_deinit(&a.bo);
      return wm_cli_usage_error("comm-bench",
                                "--impl mpi and mpi-native need the job "
                                "started by mpirun (mpirun -np N wmap "
                                "comm-bench ...)");
    }
  }
  if (a.algo != WM_COMM_ALGO_AUTO) {
    snprintf(b.algo_env, sizeof(b.algo_env), "%s", wm_comm_algo_name(a.algo));
    setenv("WMAP_COMM_ALGO", b.algo_env, 1);
  }
  row_t *rows = NULL;
  size_t n_rows = 0;
  wm_status_t s = setup(&b);
  if (!s) {
    s = measure(&b, &rows, &n_rows);
  }
  bool failed_check = false;
  for (size_t i = 0; i < n_rows; i++) {
    failed_check |= strcmp(rows[i].check, "ok") && strcmp(rows[i].check, "off");
  }
  const cb_report_t rep = {&a, b.wsize};
  if (!s && b.wrank == 0) {
    wm_strbuf_t o;
    wm_strbuf_init(&o);
    if (a.json) {
      cb_print_json(&rep, rows, n_rows, &o);
    } else {
      cb_print_text(&rep, rows, n_rows, &o);
    }
    fputs(wm_strbuf_str(&o), stdout);
    fflush(stdout);
    wm_strbuf_deinit(&o);
    if (a.output) {
      s = cb_write_baseline(&rep, rows, n_rows, a.output);
    }
    if (!s && a.html) {
      wm_strbuf_t h;
      wm_strbuf_init(&h);
      cb_print_html(&rep, rows, n_rows, &h);
      s = h.failed ? WM_ERROR(RESOURCE_EXHAUSTED, "out of memory")
                   : wm_file_write(a.html, h.data, h.len);
      wm_strbuf_deinit(&h);
    }
  }
  rows_free(rows, n_rows);
  if (s && b.mpi) {
    // A peer may be dead or stuck: finalizing would wait for it.
    fprintf(stderr, "wmap: rank %d: %s\n", b.wrank, wm_status_message(s));
    wm_comm_mpi_abort(WM_EXIT_FAILED);
  }
  team_stop(&b);
  if (b.mr_up || b.mr.dev) {
    rank_close(&b, &b.mr);
  }
  wm_registry_destroy(b.reg);
  wm_cli_backend_options_deinit(&a.bo);
  if (b.mpi) {
    wm_comm_mpi_finalize();
  }
  if (s) {
    return wm_cli_fail(s);
  }
  return failed_check ? WM_EXIT_FAILED : WM_EXIT_OK;
}
