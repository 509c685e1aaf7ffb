// Tests of measured times on the map (wmap map --times): achieved GFLOP/s
// and % of the roof per node, the summary, and what the JSON, text and
// HTML reports say about them; and the roofs at a thread count.
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/testing/wm_test.h"
#include "internal.h"
#include "wmap/plugin.h"
#include "wmap/zoo.h"

// ref on a host of 100 GFLOP/s and 10 GB/s at all cores (2 threads), half
// of that at one thread.
static void test_peaks(wm_peaks_t *p) {
  memset(p, 0, sizeof(*p));
  snprintf(p->machine.model, sizeof(p->machine.model), "test machine");
  snprintf(p->machine.fingerprint, sizeof(p->machine.fingerprint), "0");
  p->threads = 2;
  p->fma_fp32[0] = 50;
  p->fma_fp32[1] = 100;
  p->triad_gbs[0] = 5;
  p->triad_gbs[1] = 10;
  p->n_backends = 1;
  snprintf(p->backends[0].name, sizeof(p->backends[0].name), "ref");
  p->backends[0].host = true;
}

typedef struct fixture {
  wm_backend_t *ref;
  wm_peaks_t peaks;
  wm_map_options_t opts;
  wm_graph_t *graph;
} fixture_t;

static void fixture_init(fixture_t *f) {
  memset(f, 0, sizeof(*f));
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &f->ref));
  test_peaks(&f->peaks);
  f->opts.model = "mlp";
  f->opts.backends = &f->ref;
  f->opts.backend_count = 1;
  f->opts.fallback = f->ref;
  f->opts.peaks = &f->peaks;
  WM_CHECK_OK(wm_zoo_build("mlp", &f->graph));
}

static void fixture_deinit(fixture_t *f) {
  wm_graph_destroy(f->graph);
  wm_backend_destroy(f->ref);
}

// |text| with every run of blanks and newlines made one space: reports
// wrap at their width.
static char *squeezed(const char *text) {
  char *out = malloc(strlen(text) + 1), *w = out;
  for (const char *r = text; out && *r; r++) {
    bool blank = *r == ' ' || *r == '\n';
    if (!blank || w == out || w[-1] != ' ') {
      *w++ = blank ? ' ' : *r;
    }
  }
  if (out) {
    *w = '\0';
  }
  return out;
}

static double roof_of(const wm_map_node_t *n) {
  return fmax(n->cells[0].t_comp, n->cells[0].t_mem);
}

WM_TEST(measured_nodes_get_achieved_gflops_and_roof_pct) {
  fixture_t f;
  fixture_init(&f);
  wm_map_t *plain = NULL, *m = NULL;
  WM_CHECK_OK(wm_map_build(f.graph, &f.opts, &plain));
  WM_CHECK(!plain->measured.enabled);
  // Every node takes 4x its roof time but the first, which beats its roof
  // by 2x: a peak that is too low for it.
  size_t nn = f.graph->node_count;
  double *secs = calloc(nn + 1, sizeof(double));
  WM_CHECK(secs != NULL);
  size_t first = 0, timed = 0;
  for (size_t i = 0; i < plain->n_nodes; i++) {
    const wm_map_node_t *n = &plain->nodes[i];
    double roof = roof_of(n);
    if (roof > 0) {
      secs[n->index] = timed == 0 ? roof / 2 : roof * 4;
      first = timed == 0 ? i : first;
      timed++;
    }
  }
  WM_CHECK(timed >= 2);
  f.opts.node_seconds = secs;
  f.opts.times_source = "base.json, ref@t2";
  WM_CHECK_OK(wm_map_build(f.graph, &f.opts, &m));
  const wm_map_measured_t *ms = &m->measured;
  WM_CHECK(ms->enabled);
  WM_CHECK_STR_EQ(ms->source, "base.json, ref@t2");
  WM_CHECK_INT_EQ(ms->nodes, timed);
  WM_CHECK_INT_EQ(ms->above_roof, 1);
  WM_CHECK_DBL_NEAR(ms->max_pct, 200, 1e-9);
  WM_CHECK_STR_EQ(ms->max_node, m->nodes[first].name);
  WM_CHECK_DBL_NEAR(ms->median_pct, 25, 1e-9);
  WM_CHECK(ms->roof_pct > 25 && ms->roof_pct < 200);
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *n = &m->nodes[i];
    WM_CHECK_DBL_NEAR(n->measured_s, secs[n->index], 0);
    WM_CHECK_INT_EQ(n->measured_backend, 0);
    if (n->measured_s > 0 && n->flops > 0) {
      WM_CHECK_DBL_NEAR(n->achieved_gflops, n->flops / n->measured_s * 1e-9,
                        1e-9 * n->achieved_gflops);
      // Never above the roof but where the peak is too low.
      WM_CHECK(n->achieved_gflops <= 100 * (1 + 1e-9) || i == first);
    }
  }
  WM_CHECK_DBL_NEAR(m->nodes[first].roof_pct, 200, 1e-9);

  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_map_to_json(m, &b);
  const char *json = wm_strbuf_str(&b);
  WM_CHECK(strstr(json, "\"measured\":{\"source\":\"base.json, ref@t2\"") !=
           NULL);
  WM_CHECK(strstr(json, "\"peak_too_low\":true") != NULL);
  WM_CHECK(strstr(json, "\"roof_pct\":200") != NULL);
  WM_CHECK(strstr(json, "\"achieved_gflops\":") != NULL);
  WM_CHECK(strstr(json, "\"measured_backend\":\"ref\"") != NULL);
  wm_strbuf_deinit(&b);
  wm_strbuf_init(&b);
  wm_map_to_text(m, false, &b);
  char *text = squeezed(wm_strbuf_str(&b));
  WM_CHECK(text != NULL);
  WM_CHECK(strstr(text, "Measured against the roof (base.json, ref@t2)") !=
           NULL);
  WM_CHECK(strstr(text, "measured nodes ran at") != NULL);
  WM_CHECK(strstr(text, "the median node at 25 %") != NULL);
  WM_CHECK(strstr(text, "warning: 1 node ran faster than the roof") != NULL);
  free(text);
  wm_strbuf_deinit(&b);
  wm_strbuf_init(&b);
  wm_map_to_html(m, &b);
  const char *html = wm_strbuf_str(&b);
  WM_CHECK(strstr(html, "<circle class=\"ring\"") != NULL);
  WM_CHECK(strstr(html, "ran faster than the roof (red)") != NULL);
  WM_CHECK(strstr(html, "of the roof (t_roof") != NULL);
  wm_strbuf_deinit(&b);
  wm_strbuf_init(&b);
  wm_map_to_html(plain, &b);
  WM_CHECK(strstr(wm_strbuf_str(&b), "class=\"ring\"") == NULL);
  wm_strbuf_deinit(&b);
  wm_strbuf_init(&b);
  wm_map_to_json(plain, &b);
  WM_CHECK(strstr(wm_strbuf_str(&b), "\"measured\":null") != NULL);
  WM_CHECK(strstr(wm_strbuf_str(&b), "\"roof_pct\"") == NULL);
  wm_strbuf_deinit(&b);
  wm_map_destroy(m);
  wm_map_destroy(plain);
  free(secs);
  fixture_deinit(&f);
}

WM_TEST(measured_backend_follows_the_profile) {
  fixture_t f;
  fixture_init(&f);
  size_t nn = f.graph->node_count;
  double *secs = calloc(nn + 1, sizeof(double));
  const char **names = calloc(nn + 1, sizeof(char *));
  WM_CHECK(secs && names);
  for (size_t i = 0; i < nn; i++) {
    secs[i] = 1e-3;
    names[i] = i == 0 ? "gpu" : "ref";  // gpu is not mapped: the path's
  }
  f.opts.node_seconds = secs;
  f.opts.node_backends = names;
  wm_map_t *m = NULL;
  WM_CHECK_OK(wm_map_build(f.graph, &f.opts, &m));
  for (size_t i = 0; i < m->n_nodes; i++) {
    WM_CHECK_INT_EQ(m->nodes[i].measured_backend, 0);
  }
  WM_CHECK_STR_EQ(m->measured.source, "given");
  wm_map_destroy(m);
  free(secs);
  free(names);
  fixture_deinit(&f);
}

WM_TEST(roofs_are_taken_at_the_thread_count) {
  fixture_t f;
  fixture_init(&f);
  wm_map_t *all = NULL, *one = NULL;
  WM_CHECK_OK(wm_map_build(f.graph, &f.opts, &all));
  f.opts.threads = 1;
  WM_CHECK_OK(wm_map_build(f.graph, &f.opts, &one));
  WM_CHECK_DBL_NEAR(all->backends[0].peak_gflops, 100, 0);
  WM_CHECK_DBL_NEAR(all->backends[0].bandwidth_gbs, 10, 0);
  WM_CHECK_INT_EQ(all->backends[0].peak_threads, 0);
  WM_CHECK_DBL_NEAR(one->backends[0].peak_gflops, 50, 0);
  WM_CHECK_DBL_NEAR(one->backends[0].bandwidth_gbs, 5, 0);
  WM_CHECK_INT_EQ(one->backends[0].peak_threads, 1);
  // Half the peak and bandwidth: twice the roofline time.
  WM_CHECK_DBL_NEAR(one->backends[0].t_roof, 2 * all->backends[0].t_roof,
                    1e-9 * all->backends[0].t_roof);
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_map_to_json(one, &b);
  WM_CHECK(strstr(wm_strbuf_str(&b), "\"peak_threads\":1") != NULL);
  wm_strbuf_deinit(&b);
  wm_map_destroy(all);
  wm_map_destroy(one);
  fixture_deinit(&f);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(measured_nodes_get_achieved_gflops_and_roof_pct),
      WM_CASE(measured_backend_follows_the_profile),
      WM_CASE(roofs_are_taken_at_the_thread_count),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
