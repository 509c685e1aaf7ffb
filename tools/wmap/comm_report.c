// wmap comm-bench's reports: the table, the JSON rows, the HTML page with
// the bandwidth-by-size curves, and the baseline `wmap compare` reads.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm/comm.h"
#include "comm_bench.h"
#include "wmap/report.h"

const char *const cb_impl_names[N_IMPL] = {"threads", "mpi", "mpi-native"};

double cb_bus_factor(uint32_t op, int32_t n) {
  switch (op) {
    case WM_COMM_ALL_REDUCE:
      return 2.0 * (n - 1) / n;
    case WM_COMM_ALL_GATHER:
    case WM_COMM_REDUCE_SCATTER:
      return (double)(n - 1) / n;
    default:
      return 1.0;
  }
}

static const char *op_key(uint32_t op) {
  static const char *const keys[] = {"", "allreduce", "allgather",
                                     "reducescatter", "broadcast"};
  return op >= 1 && op <= 4 ? keys[op] : "?";
}

void cb_size_text(size_t s, char *buf, size_t cap) {
  if (s >= 1073741824 && s % 1073741824 == 0) {
    snprintf(buf, cap, "%zuG", s / 1073741824);
  } else if (s >= 1048576 && s % 1048576 == 0) {
    snprintf(buf, cap, "%zuM", s / 1048576);
  } else if (s >= 1024 && s % 1024 == 0) {
    snprintf(buf, cap, "%zuK", s / 1024);
  } else {
    snprintf(buf, cap, "%zu", s);
  }
}

int32_t cb_impl_ranks(const cb_report_t *b, int impl) {
  return impl == IMPL_THREADS ? b->a->ranks : b->processes;
}

void cb_print_text(const cb_report_t *b, const row_t *rows, size_t n_rows,
                   wm_strbuf_t *o) {
  const cb_args_t *a = b->a;
  wm_strbuf_printf(o,
                   "# wmap comm-bench: backend %s, %s, %d ranks; %d blocks "
                   "of >= %d calls and >= %g s, interleaved\n"
                   "# time of a call = the longest any rank spent in it; "
                   "nearest-rank P50/P99 (~: under 662 calls)\n",
                   a->backend, wm_comm_dtype_name(a->dtype),
                   cb_impl_ranks(b, IMPL_THREADS), a->blocks, a->min_iters,
                   a->min_time);
  uint32_t op = 0;
  for (size_t i = 0; i < n_rows; i++) {
    const row_t *r = &rows[i];
    if (r->op != op) {
      op = r->op;
      bool red = op == WM_COMM_ALL_REDUCE || op == WM_COMM_REDUCE_SCATTER;
      wm_strbuf_printf(o, "\n%s%s%s%s, busbw = algbw x %.3g\n",
                       wm_comm_op_name(op), red ? " (" : "",
                       red ? wm_comm_redop_name(a->redop) : "", red ? ")" : "",
                       cb_bus_factor(op, b->a->ranks));
      wm_strbuf_printf(o,
                       "%10s %11s  %-10s %-6s %10s %10s %10s %10s %7s  "
                       "%s\n",
                       "size", "count", "impl", "algo", "P50 us", "P99 us",
                       "algbw GB/s", "busbw GB/s", "calls", "check");
    }
    char sz[32];
    cb_size_text(r->size, sz, sizeof(sz));
    wm_strbuf_printf(o,
                     "%10s %11zu  %-10s %-6s %10.2f %9.2f%s %10.3f %10.3f "
                     "%7zu  %s\n",
                     sz, r->count, cb_impl_names[r->impl], r->algo,
                     r->stats.p50 / 1e3, r->stats.p99 / 1e3,
                     r->stats.p99_ok ? " " : "~", r->algbw, r->busbw, r->n,
                     r->check);
  }
  // The ratio to MPI's own collective at each size, where both ran.
  bool header = false;
  for (size_t i = 0; i < n_rows; i++) {
    const row_t *r = &rows[i];
    if (r->impl == IMPL_NATIVE) {
      continue;
    }
    for (size_t j = 0; j < n_rows; j++) {
      const row_t *p = &rows[j];
      if (p->impl == IMPL_NATIVE && p->op == r->op && p->size == r->size &&
          p->busbw > 0) {
        if (!header) {
          wm_strbuf_printf(o,
                           "\nbusbw against MPI's own collective (same "
                           "run):\n");
          header = true;
        }
        char sz[32];
        cb_size_text(r->size, sz, sizeof(sz));
        wm_strbuf_printf(o, "  %-13s %8s  %-8s %.2fx\n", wm_comm_op_name(r->op),
                         sz, cb_impl_names[r->impl], r->busbw / p->busbw);
      }
    }
  }
}

void cb_print_json(const cb_report_t *b, const row_t *rows, size_t n_rows,
                   wm_strbuf_t *o) {
  const cb_args_t *a = b->a;
  wm_strbuf_printf(o, "{\"schema\": \"wmap.comm-bench/1\", \"backend\": ");
  wm_strbuf_json_string(o, a->backend);
  wm_strbuf_printf(o,
                   ", \"ranks\": %d, \"processes\": %d, \"dtype\": \"%s\", "
                   "\"redop\": \"%s\", \"method\": {\"blocks\": %d, "
                   "\"min_time_s\": %g, \"min_iters\": %d, \"warmup\": %d, "
                   "\"time\": \"longest rank per call\", \"percentiles\": "
                   "\"nearest rank\"},\n \"rows\": [",
                   cb_impl_ranks(b, IMPL_THREADS), b->processes,
                   wm_comm_dtype_name(a->dtype), wm_comm_redop_name(a->redop),
                   a->blocks, a->min_time, a->min_iters, a->warmup);
  for (size_t i = 0; i < n_rows; i++) {
    const row_t *r = &rows[i];
    wm_strbuf_printf(
        o,
        "%s\n  {\"op\": \"%s\", \"size\": %zu, \"count\": %zu, \"impl\": "
        "\"%s\", \"algo\": \"%s\", \"ranks\": %d, \"calls\": %zu, "
        "\"p50_us\": %.4f, \"p99_us\": %.4f, \"p99_supported\": %s, "
        "\"mean_us\": %.4f, \"algbw_gbs\": %.5f, \"busbw_gbs\": %.5f, "
        "\"bus_factor\": %.6f, \"check\": ",
        i ? "," : "", op_key(r->op), r->size, r->count, cb_impl_names[r->impl],
        r->algo, cb_impl_ranks(b, r->impl), r->n, r->stats.p50 / 1e3,
        r->stats.p99 / 1e3, r->stats.p99_ok ? "true" : "false",
        r->stats.mean / 1e3, r->algbw, r->busbw,
        cb_bus_factor(r->op, cb_impl_ranks(b, r->impl)));
    wm_strbuf_json_string(o, r->check);
    wm_strbuf_printf(o, "}");
  }
  wm_strbuf_printf(o, "]}\n");
}

static const char *fmt_size(double v, char *buf) {
  return wm_report_fmt_bytes(v, buf);
}

void cb_print_html(const cb_report_t *b, const row_t *rows, size_t n_rows,
                   wm_strbuf_t *o) {
  const cb_args_t *a = b->a;
  char title[160];
  snprintf(title, sizeof(title), "wmap comm-bench: %s, %s, %d ranks",
           a->backend, wm_comm_dtype_name(a->dtype), a->ranks);
  wm_report_html_begin(o, "wmap comm-bench", title, NULL);
  wm_strbuf_printf(o, "<h1>");
  wm_report_html_escape(o, title);
  wm_strbuf_printf(o,
                   "</h1>\n<p>Bus bandwidth at the P50 call time by message "
                   "size; a call's time is the longest any rank spent in "
                   "it. %d blocks per implementation and size, "
                   "interleaved.</p>\n",
                   a->blocks);
  for (size_t k = 0; k < a->n_ops; k++) {
    uint32_t op = a->ops[k];
    double ymax = 0, xmin = 0, xmax = 0;
    for (size_t i = 0; i < n_rows; i++) {
      if (rows[i].op == op) {
        ymax = rows[i].busbw > ymax ? rows[i].busbw : ymax;
        double x = (double)rows[i].size;
        xmin = xmin == 0 || x < xmin ? x : xmin;
        xmax = x > xmax ? x : xmax;
      }
    }
    if (ymax <= 0 || xmin <= 0) {
      continue;
    }
    wm_strbuf_printf(o, "<h2>%s</h2>\n", wm_comm_op_name(op));
    wm_report_plot_t p = {.x0 = 70,
                          .y0 = 20,
                          .w = 600,
                          .h = 300,
                          .lx0 = floor(log10(xmin)),
                          .lx1 = ceil(log10(xmax)),
                          .ly0 = 0,
                          .ly1 = ymax * 1.1,
                          .xlog = true};
    if (p.lx1 <= p.lx0) {
      p.lx1 = p.lx0 + 1;
    }
    wm_report_svg_open(o, "chart", 720, 380, "bus bandwidth by size");
    wm_report_svg_axes(o, &p, fmt_size, NULL, "message size (bytes)",
                       "busbw (GB/s)");
    double lx = p.x0 + 10;
    for (int impl = 0; impl < N_IMPL; impl++) {
      wm_strbuf_t pts;
      wm_strbuf_init(&pts);
      for (size_t i = 0; i < n_rows; i++) {
        const row_t *r = &rows[i];
        if (r->op == op && r->impl == impl && r->busbw > 0) {
          wm_strbuf_printf(&pts, "%.1f,%.1f ",
                           wm_report_plot_x(&p, (double)r->size),
                           wm_report_plot_y(&p, r->busbw));
        }
      }
      if (pts.len) {
        wm_strbuf_printf(o,
                         "<polyline fill=\"none\" stroke=\"%s\" "
                         "stroke-width=\"2\" points=\"%s\"/>\n",
                         wm_report_color((size_t)impl), wm_strbuf_str(&pts));
        lx = wm_report_svg_legend_item(
            o, lx, 372, wm_report_color((size_t)impl), cb_impl_names[impl]);
      }
      wm_strbuf_deinit(&pts);
    }
    wm_report_svg_close(o);
  }
  wm_report_table_t t;
  wm_report_table_init(&t);
  const char *heads[] = {"operation", "size",   "impl",       "algo",
                         "P50 us",    "P99 us", "algbw GB/s", "busbw GB/s",
                         "calls",     "check"};
  for (size_t c = 0; c < 10; c++) {
    wm_report_table_add_col(&t, heads[c],
                            c >= 4 && c <= 8 ? WM_REPORT_RIGHT : 0);
  }
  for (size_t i = 0; i < n_rows; i++) {
    const row_t *r = &rows[i];
    char sz[32];
    cb_size_text(r->size, sz, sizeof(sz));
    wm_report_table_add_row(&t);
    wm_report_table_set_cell(&t, 0, "%s", wm_comm_op_name(r->op));
    wm_report_table_set_cell(&t, 1, "%s", sz);
    wm_report_table_set_cell(&t, 2, "%s", cb_impl_names[r->impl]);
    wm_report_table_set_cell(&t, 3, "%s", r->algo);
    wm_report_table_set_cell(&t, 4, "%.2f", r->stats.p50 / 1e3);
    wm_report_table_set_cell(&t, 5, "%.2f%s", r->stats.p99 / 1e3,
                             r->stats.p99_ok ? "" : "~");
    wm_report_table_set_cell(&t, 6, "%.3f", r->algbw);
    wm_report_table_set_cell(&t, 7, "%.3f", r->busbw);
    wm_report_table_set_cell(&t, 8, "%zu", r->n);
    wm_report_table_set_cell(&t, 9, "%s", r->check);
  }
  wm_strbuf_printf(o, "<h2>Table</h2>\n");
  wm_report_html_table(o, &t, NULL);
  wm_report_table_deinit(&t);
  wm_report_html_end(o);
}

// The baseline: one configuration per implementation, operation and size.
wm_status_t cb_write_baseline(const cb_report_t *b, const row_t *rows,
                              size_t n_rows, const char *path) {
  const cb_args_t *a = b->a;
  char name[160];
  snprintf(name, sizeof(name), "comm-bench %s %s on %s",
           wm_comm_dtype_name(a->dtype), wm_comm_redop_name(a->redop),
           a->backend);
  wm_baseline_t *bl = NULL;
  WM_RETURN_IF_ERROR(wm_cli_baseline_new(name, "", n_rows, &bl));
  wm_arena_t *ar = &bl->arena;
  bl->blocks = a->blocks;
  bl->min_time_s = a->min_time;
  bl->min_iters = a->min_iters;
  bl->in_process = true;
  wm_status_t s = NULL;
  for (size_t i = 0; !s && i < n_rows; i++) {
    const row_t *r = &rows[i];
    wm_bench_config_t *c = &bl->configs[bl->n_configs++];
    char label[96], sz[32];
    cb_size_text(r->size, sz, sizeof(sz));
    snprintf(label, sizeof(label), "%s %s %s", cb_impl_names[r->impl],
             op_key(r->op), sz);
    c->label = wm_arena_strdup(ar, label);
    c->backends = wm_arena_alloc(ar, sizeof(char *));
    c->blocks = wm_arena_alloc(ar, (size_t)a->blocks * sizeof(*c->blocks));
    if (!c->label || !c->backends || !c->blocks) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      break;
    }
    c->backends[0] = r->impl == IMPL_NATIVE ? "mpi" : a->backend;
    c->n_backends = 1;
    c->threads = (uint32_t)cb_impl_ranks(b, r->impl);
    size_t from = 0;
    for (int32_t k = 0; k < a->blocks; k++) {
      size_t to = r->block_end[k];
      wm_bench_block_t *blk = &c->blocks[c->n_blocks++];
      blk->index = k;
      blk->order = k * N_IMPL + r->impl;
      blk->n = to - from;
      blk->samples = wm_arena_alloc(ar, (blk->n + 1) * sizeof(double));
      if (!blk->samples) {
        s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
        break;
      }
      memcpy(blk->samples, r->samples + from, blk->n * sizeof(double));
      from = to;
    }
  }
  if (!s) {
    wm_env_set(&bl->env, "comm.backend", true, "%s", a->backend);
    wm_env_set(&bl->env, "comm.ranks", true, "%d", a->ranks);
    wm_env_set(&bl->env, "comm.processes", true, "%d", b->processes);
    wm_env_set(&bl->env, "comm.dtype", true, "%s",
               wm_comm_dtype_name(a->dtype));
    wm_env_set(&bl->env, "comm.algo", true, "%s", wm_comm_algo_name(a->algo));
    wm_env_finish(&bl->env);
    s = wm_baseline_finish(bl);
  }
  if (!s) {
    wm_strbuf_t out;
    wm_strbuf_init(&out);
    wm_baseline_to_json(bl, &out);
    s = out.failed ? WM_ERROR(RESOURCE_EXHAUSTED, "out of memory")
                   : wm_file_write(path, out.data, out.len);
    wm_strbuf_deinit(&out);
  }
  wm_baseline_destroy(bl);
  return s;
}

// ------------------------------------------------------------ the run
