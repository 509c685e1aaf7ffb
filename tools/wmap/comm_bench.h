// wmap comm-bench's pieces shared by the file that measures
// (comm_bench.c) and the one that reports (comm_report.c): the options,
// one result row, and the writers of the text, JSON, HTML and baseline.
#ifndef WMAP_TOOLS_COMM_BENCH_H_
#define WMAP_TOOLS_COMM_BENCH_H_

#include "cli.h"
#include "comm/comm.h"
#include "wmap/bench.h"

enum { IMPL_THREADS, IMPL_MPI, IMPL_NATIVE, N_IMPL };
extern const char *const cb_impl_names[N_IMPL];  // "threads"...
enum { MAX_SIZES = 64 };

typedef struct cb_args {
  const char *backend;
  int32_t ranks;
  bool ranks_set;
  uint32_t ops[4];
  size_t n_ops;
  uint32_t dtype;
  uint32_t redop;
  size_t sizes[MAX_SIZES];
  size_t n_sizes;
  const char *size_text;
  double factor;
  bool impl[N_IMPL];
  bool impl_set;
  wm_comm_algo_t algo;
  int32_t blocks;
  double min_time;
  int32_t min_iters;
  int32_t warmup;
  bool check;
  bool json;
  const char *output;
  const char *html;
  wm_cli_backend_options_t bo;
} cb_args_t;

typedef struct row {
  uint32_t op;
  size_t size, count;
  int impl;
  const char *algo;
  size_t n;
  double *samples;  // max over ranks per call (ns), all blocks
  size_t cap;
  size_t *block_end;  // samples index after each block
  wm_stats_t stats;
  double algbw, busbw;  // GB/s at P50
  char check[256];      // "ok", "off" or the error
} row_t;

// What the writers read: the options and the MPI job's size (1 without).
typedef struct cb_report {
  const cb_args_t *a;
  int32_t processes;
} cb_report_t;

// nccl-tests' bus factor of |op| over |n| ranks.
double cb_bus_factor(uint32_t op, int32_t n);
// The ranks implementation |impl| runs on.
int32_t cb_impl_ranks(const cb_report_t *r, int impl);
// "16M", "1K", "96" for a size in bytes.
void cb_size_text(size_t s, char *buf, size_t cap);
// The table (text), the wmap.comm-bench/1 rows (JSON) and the page with
// the bandwidth-by-size curves (HTML), appended to |out|.
void cb_print_text(const cb_report_t *r, const row_t *rows, size_t n_rows,
                   wm_strbuf_t *out);
void cb_print_json(const cb_report_t *r, const row_t *rows, size_t n_rows,
                   wm_strbuf_t *out);
void cb_print_html(const cb_report_t *r, const row_t *rows, size_t n_rows,
                   wm_strbuf_t *out);
// The wmap.baseline/1 file: one configuration per implementation,
// operation and size.
wm_status_t cb_write_baseline(const cb_report_t *r, const row_t *rows,
                              size_t n_rows,
                              const char *path) WM_MUST_USE_RESULT;

#endif  // WMAP_TOOLS_COMM_BENCH_H_
