// Tests of the HTML map: one self-contained document, one roofline per
// backend with peaks and one dot per node with FLOPs, Pareto bars in
// descending order, model strings escaped, an empty map still a page.
// Maps are built on the ref backend with fixed peaks, so no test measures.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "wm_test.h"
#include "wmap/map.h"
#include "wmap/plugin.h"
#include "wmap/zoo.h"

// Peaks with one host backend "ref": 100 GFLOP/s FMA, 20 GB/s triad.
static void fixed_peaks(wm_peaks_t *p) {
  memset(p, 0, sizeof(*p));
  snprintf(p->machine.model, sizeof(p->machine.model), "test machine");
  p->machine.cores = 4;
  snprintf(p->machine.kernel, sizeof(p->machine.kernel), "test");
  snprintf(p->machine.fingerprint, sizeof(p->machine.fingerprint),
           "0123456789abcdef");
  p->measured_at = 1700000000;
  p->threads = 4;
  p->fma_fp32[0] = 50;
  p->fma_fp32[1] = 100;
  p->fma_fp64[0] = 25;
  p->fma_fp64[1] = 50;
  p->triad_gbs[0] = 10;
  p->triad_gbs[1] = 20;
  snprintf(p->isa, sizeof(p->isa), "default");
  p->n_backends = 1;
  snprintf(p->backends[0].name, sizeof(p->backends[0].name), "ref");
  snprintf(p->backends[0].target, sizeof(p->backends[0].target), "host");
  p->backends[0].host = true;
}

// What one test renders: the graph's map on ref and its page.
typedef struct rendered {
  wm_graph_t *graph;
  wm_backend_t *ref;
  wm_map_t *map;
  wm_strbuf_t html;
} rendered_t;

static void rendered_free(rendered_t *r) {
  wm_map_destroy(r->map);
  wm_backend_destroy(r->ref);
  wm_graph_destroy(r->graph);
  wm_strbuf_deinit(&r->html);
}

// Maps |graph_take| on ref (fixed peaks, optional |parallel| plan) and
// renders it; |r| owns everything afterwards, even on failure.
static wm_status_t render(wm_graph_t *graph_take, const char *model,
                          const wm_map_parallel_t *parallel, rendered_t *r) {
  memset(r, 0, sizeof(*r));
  wm_strbuf_init(&r->html);
  r->graph = graph_take;
  WM_RETURN_IF_ERROR(
      wm_backend_create(wm_ref_plugin_query, "built-in", &r->ref));
  wm_peaks_t peaks;
  fixed_peaks(&peaks);
  wm_map_options_t o;
  memset(&o, 0, sizeof(o));
  o.model = model;
  o.backends = &r->ref;
  o.backend_count = 1;
  o.peaks = &peaks;
  o.parallel = parallel;
  WM_RETURN_IF_ERROR(wm_map_build(r->graph, &o, &r->map));
  wm_map_to_html(r->map, &r->html);
  if (r->html.failed) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "rendering ran out of memory");
  }
  return NULL;
}

static wm_status_t render_zoo(const char *spec, rendered_t *r) {
  wm_graph_t *g = NULL;
  wm_status_t s = wm_zoo_build(spec, &g);
  if (s) {
    memset(r, 0, sizeof(*r));
    wm_strbuf_init(&r->html);
    return s;
  }
  return render(g, spec, NULL, r);
}

// Occurrences of |needle| in |hay|.
static size_t count(const char *hay, const char *needle) {
  size_t n = 0, len = strlen(needle);
  for (const char *p = strstr(hay, needle); p; p = strstr(p + len, needle)) {
    n++;
  }
  return n;
}

static bool has_peaks(const wm_map_backend_t *be) {
  return be->peak_gflops > 0 && be->bandwidth_gbs > 0;
}

// Dots the roofline plots must hold: nodes with FLOPs and bytes, once per
// backend with peaks.
static size_t want_dots(const wm_map_t *map) {
  size_t plotted = 0, plots = 0;
  for (size_t i = 0; i < map->n_nodes; i++) {
    const wm_map_node_t *n = &map->nodes[i];
    plotted +=
        n->flops > 0 && n->act_in_bytes + n->weight_bytes + n->out_bytes > 0;
  }
  for (size_t b = 0; b < map->n_backends; b++) {
    plots += has_peaks(&map->backends[b]);
  }
  return plotted * plots;
}

// The problem with |html| as a self-contained document, or NULL.
static const char *self_contained_problem(const char *html) {
  static const char xmlns[] = "http://www.w3.org/2000/svg";
  if (strncmp(html, "<!DOCTYPE html>\n", 16) != 0) {
    return "does not start with <!DOCTYPE html>";
  }
  size_t len = strlen(html);
  if (len < 8 || strcmp(html + len - 8, "</html>\n") != 0) {
    return "does not end with </html>";
  }
  if (count(html, "<html") != 1 || count(html, "<body") != 1) {
    return "not exactly one <html> and <body>";
  }
  if (count(html, "<script") || count(html, "<link") || count(html, "src=") ||
      count(html, "url(") || count(html, "@import")) {
    return "has a script or an external resource";
  }
  for (const char *p = strstr(html, "http"); p; p = strstr(p + 4, "http")) {
    if (strncmp(p, xmlns, sizeof(xmlns) - 1) != 0) {
      return "references a URL other than the SVG namespace";
    }
  }
  if (count(html, "https://")) {
    return "references an https URL";
  }
  return NULL;
}

WM_TEST(resnet18_page_is_one_self_contained_document) {
  rendered_t r;
  wm_status_t s = render_zoo("resnet18", &r);
  const char *problem = s ? NULL : self_contained_problem(r.html.data);
  size_t tables = s ? 0 : count(r.html.data, "<table");
  rendered_free(&r);
  WM_CHECK_OK(s);
  if (problem) {
    wm_test_fail(__FILE__, __LINE__, "resnet18 page %s", problem);
    return;
  }
  WM_CHECK(tables >= 5);
}

WM_TEST(resnet18_page_has_a_roofline_and_a_dot_per_node_with_flops) {
  rendered_t r;
  wm_status_t s = render_zoo("resnet18", &r);
  size_t plots = 0, want_plots = 0, dots = 0, want = 0, convs = 0;
  double peak = 0, bw = 0;
  if (!s) {
    plots = count(r.html.data, "<svg class=\"roofline\"");
    dots = count(r.html.data, "<circle class=\"dot\"");
    for (size_t b = 0; b < r.map->n_backends; b++) {
      want_plots += has_peaks(&r.map->backends[b]);
    }
    want = want_dots(r.map);
    for (size_t i = 0; i < r.map->n_nodes; i++) {
      convs += strcmp(r.map->nodes[i].op_type, "Conv") == 0;
    }
    peak = r.map->backends[0].peak_gflops;
    bw = r.map->backends[0].bandwidth_gbs;
  }
  rendered_free(&r);
  WM_CHECK_OK(s);
  WM_CHECK_DBL_NEAR(peak, 100, 1e-9);  // the fixed peaks reached the map
  WM_CHECK_DBL_NEAR(bw, 20, 1e-9);
  WM_CHECK_INT_EQ(want_plots, 1);
  WM_CHECK_INT_EQ(plots, want_plots);
  WM_CHECK_INT_EQ(convs, 20);
  WM_CHECK(want >= convs);  // every Conv has FLOPs
  WM_CHECK_INT_EQ(dots, want);
}

WM_TEST(mlp_page_has_a_dot_per_node_with_flops) {
  rendered_t r;
  wm_status_t s = render_zoo("mlp", &r);
  size_t dots = 0, want = 0;
  const char *problem = NULL;
  if (!s) {
    dots = count(r.html.data, "<circle class=\"dot\"");
    want = want_dots(r.map);
    problem = self_contained_problem(r.html.data);
  }
  rendered_free(&r);
  WM_CHECK_OK(s);
  if (problem) {
    wm_test_fail(__FILE__, __LINE__, "mlp page %s", problem);
    return;
  }
  WM_CHECK(want >= 3);  // three Gemm
  WM_CHECK_INT_EQ(dots, want);
}

WM_TEST(pareto_bars_are_in_descending_order) {
  rendered_t r;
  wm_status_t s = render_zoo("resnet18", &r);
  double prev = 1e300;
  size_t bars = 0, rising = 0, timed = 0;
  if (!s) {
    static const char key[] = "<rect class=\"pbar\" data-t=\"";
    for (const char *p = strstr(r.html.data, key); p; p = strstr(p + 1, key)) {
      double t = strtod(p + sizeof(key) - 1, NULL);
      rising += t > prev * (1 + 1e-5);
      prev = t;
      bars++;
    }
    bars += count(r.html.data, "<rect class=\"pbar-other\"");
    size_t b = r.map->critical.backend < r.map->n_backends
                   ? r.map->critical.backend
                   : 0;
    for (size_t i = 0; i < r.map->n_types; i++) {
      timed += r.map->types[i].cells[b].t_roof > 0;
    }
  }
  rendered_free(&r);
  WM_CHECK_OK(s);
  WM_CHECK(timed >= 5);
  WM_CHECK_INT_EQ(bars, timed < 25 ? timed : 25);
  WM_CHECK_INT_EQ(rising, 0);
}

// x [1,4] -> MatMul with a [4,4] weight -> y, the node named |node_name|,
// then y -> "Bad<op>&" -> z.
static wm_status_t tiny_graph(const char *node_name, wm_graph_t **out) {
  wm_graph_t *g = NULL;
  WM_RETURN_IF_ERROR(wm_graph_create("tiny <graph>", NULL, &g));
  int64_t xd[2] = {1, 4}, wd[2] = {4, 4};
  wm_shape_t xs = wm_shape_make(2, xd), ws = wm_shape_make(2, wd);
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
  wm_tensor_t *w = NULL;
  const char *in[] = {"x", "w"}, *outs[] = {"y"};
  wm_status_t s = wm_graph_set_opset(g, "", 17);
  if (!s) {
    s = wm_graph_add_input(g, "x", &xt, NULL);
  }
  if (!s) {
    s = wm_tensor_create(WM_DTYPE_FLOAT, &ws, &w);
  }
  if (!s) {
    s = wm_graph_add_initializer(g, "w", w, NULL);
  }
  if (!s) {
    s = wm_graph_add_node(g, "MatMul", "", node_name, in, 2, outs, 1, NULL);
  }
  // An operator nobody defines, with markup in its type: the map keeps
  // it, marked, and says so in its notes.
  const char *in2[] = {"y"}, *out2[] = {"z"};
  if (!s) {
    s = wm_graph_add_node(g, "Bad<op>&", "", "n2", in2, 1, out2, 1, NULL);
  }
  if (!s) {
    s = wm_graph_add_output(g, "z", NULL, NULL);
  }
  if (s) {
    wm_graph_destroy(g);
    return s;
  }
  *out = g;
  return NULL;
}

WM_TEST(model_strings_are_escaped) {
  static const char name[] = "<script>alert(1)</script><b>&\"x\"'";
  static const char escaped[] =
      "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;&amp;&quot;x&quot;&#39;";
  wm_graph_t *g = NULL;
  WM_CHECK_OK(tiny_graph(name, &g));
  rendered_t r;
  wm_status_t s = render(g, "model <i>&</i>", NULL, &r);
  size_t raw = 0, esc = 0, dots = 0, title = 0, bad_op = 0, unmapped = 0;
  const char *problem = NULL;
  if (!s) {
    raw = count(r.html.data, "<b>") + count(r.html.data, "<i>") +
          count(r.html.data, "<op>");
    esc = count(r.html.data, escaped);
    bad_op = count(r.html.data, "Bad&lt;op&gt;&amp;");
    unmapped = r.map->totals.unmapped;
    dots = count(r.html.data, "<circle class=\"dot\"");
    title = count(r.html.data, "model &lt;i&gt;&amp;&lt;/i&gt;");
    problem = self_contained_problem(r.html.data);
  }
  rendered_free(&r);
  WM_CHECK_OK(s);
  if (problem) {
    wm_test_fail(__FILE__, __LINE__, "tiny page %s", problem);
    return;
  }
  WM_CHECK_INT_EQ(raw, 0);
  WM_CHECK(esc >= 3);  // tooltip, critical path, node table
  WM_CHECK_INT_EQ(dots, 1);
  WM_CHECK(title >= 2);  // <title> and <h1>
  WM_CHECK_INT_EQ(unmapped, 1);
  WM_CHECK(bad_op >= 2);  // coverage matrix, node table
}

WM_TEST(parallel_plan_is_shown) {
  wm_graph_t *g = NULL;
  WM_CHECK_OK(wm_zoo_build("mlp", &g));
  wm_map_parallel_t par;
  wm_status_t s = wm_map_parse_parallel("dp=2,tp=2", &par);
  if (s) {
    wm_graph_destroy(g);
    WM_CHECK_OK(s);
  }
  rendered_t r;
  s = render(g, "mlp", &par, &r);
  size_t plan = 0, coll = 0, want_coll = 0;
  if (!s) {
    plan = count(r.html.data, "<h2 id=\"plan\">");
    want_coll = r.map->plan.n_coll;
    for (size_t i = 0; i < r.map->plan.n_coll; i++) {
      coll +=
          count(r.html.data, wm_map_coll_name(r.map->plan.coll[i].kind)) > 0;
    }
  }
  rendered_free(&r);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(plan, 1);
  WM_CHECK(want_coll >= 1);  // dp=2 all-reduces the gradients
  WM_CHECK_INT_EQ(coll, want_coll);
}

// A hand-made map of one backend with peaks and |n| op types timed 1..n ms
// (type i takes n - i ms: sorted by FLOPs, not by time, in the map).
typedef struct hand_map {
  wm_map_t map;
  wm_map_backend_t backend;
  wm_map_optype_t types[40];
  wm_map_type_cell_t cells[40];
  char names[40][24];
} hand_map_t;

static void hand_map_init(hand_map_t *h, size_t n) {
  memset(h, 0, sizeof(*h));
  n = n < 40 ? n : 40;
  h->map.model = "hand";
  h->map.graph_name = "hand";
  h->backend.name = "be";
  h->backend.version = "1";
  h->backend.target = "t";
  h->backend.peak_source = "declared";
  h->backend.suitability = "good";
  h->backend.peak_gflops = 100;
  h->backend.bandwidth_gbs = 10;
  h->backend.ridge = 10;
  h->map.n_backends = 1;
  h->map.backends = &h->backend;
  for (size_t i = 0; i < n; i++) {
    snprintf(h->names[i], sizeof(h->names[i]), "Op%02zu", i);
    h->types[i].op_type = h->names[i];
    h->types[i].domain = "";
    h->types[i].count = 1;
    h->types[i].cells = &h->cells[i];
    // Odd types first get the small times, so sorting has work to do.
    h->cells[i].t_roof = 1e-3 * (double)(i % 2 ? i / 2 + 1 : n - i / 2);
    h->cells[i].count[WM_COVER_NATIVE] = 1;
    h->backend.t_roof += h->cells[i].t_roof;
  }
  h->map.n_types = n;
  h->map.types = h->types;
}

WM_TEST(pareto_folds_the_tail_into_other) {
  static hand_map_t h;
  hand_map_init(&h, 30);
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_map_to_html(&h.map, &out);
  const char *html = wm_strbuf_str(&out);
  static const char key[] = "<rect class=\"pbar\" data-t=\"";
  static const char other_key[] = "<rect class=\"pbar-other\" data-t=\"";
  size_t bars = 0, rising = 0;
  double prev = 1e300, first = 0, last = 0, other = -1;
  for (const char *p = strstr(html, key); p; p = strstr(p + 1, key)) {
    double t = strtod(p + sizeof(key) - 1, NULL);
    rising += t > prev * (1 + 1e-5);
    first = bars == 0 ? t : first;
    prev = last = t;
    bars++;
  }
  const char *o = strstr(html, other_key);
  if (o) {
    other = strtod(o + sizeof(other_key) - 1, NULL);
  }
  size_t others = count(html, other_key);
  const char *problem = self_contained_problem(html);
  wm_strbuf_deinit(&out);
  if (problem) {
    wm_test_fail(__FILE__, __LINE__, "hand page %s", problem);
    return;
  }
  WM_CHECK_INT_EQ(bars, 24);
  WM_CHECK_INT_EQ(rising, 0);
  WM_CHECK_DBL_NEAR(first, 30e-3, 1e-9);
  WM_CHECK_DBL_NEAR(last, 7e-3, 1e-9);
  WM_CHECK_INT_EQ(others, 1);
  WM_CHECK_DBL_NEAR(other, 21e-3, 1e-9);  // 1 + 2 + ... + 6 ms
}

WM_TEST(empty_map_is_still_a_page) {
  wm_map_t map;
  memset(&map, 0, sizeof(map));
  map.model = "empty";
  map.graph_name = "g";
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_map_to_html(&map, &out);
  const char *problem = self_contained_problem(wm_strbuf_str(&out));
  size_t plots = count(wm_strbuf_str(&out), "<svg");
  size_t plan = count(wm_strbuf_str(&out), "id=\"plan\"");
  wm_strbuf_deinit(&out);
  if (problem) {
    wm_test_fail(__FILE__, __LINE__, "empty page %s", problem);
    return;
  }
  WM_CHECK_INT_EQ(plots, 0);
  WM_CHECK_INT_EQ(plan, 0);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(resnet18_page_is_one_self_contained_document),
      WM_CASE(resnet18_page_has_a_roofline_and_a_dot_per_node_with_flops),
      WM_CASE(mlp_page_has_a_dot_per_node_with_flops),
      WM_CASE(pareto_bars_are_in_descending_order),
      WM_CASE(model_strings_are_escaped),
      WM_CASE(parallel_plan_is_shown),
      WM_CASE(pareto_folds_the_tail_into_other),
      WM_CASE(empty_map_is_still_a_page),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
