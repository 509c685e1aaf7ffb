// Tests of the HTML map: one self-contained document, one roofline per
// backend with peaks and one dot per node with FLOPs, Pareto bars in
// descending order, model strings escaped, an empty map still a page; the
// graph picture has a box per node filled by its cover, an edge per
// dependency running downwards, and the critical path in red.
// Maps are built on the ref backend with fixed peaks, so no test measures.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
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

// ------------------------------------------------------ graph picture

// One box of the graph picture as the page draws it.
typedef struct drawn_box {
  bool seen;        // a box with this data-i was found
  bool critical;    // its class has "cr"
  bool bad;         // its class has "bad"
  long x, y, w, h;  // its rect
  char fill[16];    // its rect's fill
} drawn_box_t;

// The text of the first <svg class="graph"> in |html|, or NULL.
static const char *graph_svg(const char *html, size_t *out_len) {
  const char *s = strstr(html, "<svg class=\"graph\"");
  const char *e = s ? strstr(s, "</svg>") : NULL;
  *out_len = e ? (size_t)(e - s) : 0;
  return e ? s : NULL;
}

// The first and last points of the path data at |d| (M, V, H and C
// commands, as the page writes them); false if it is none of those.
static bool path_ends(const char *d, long *x1, long *y1, long *x2, long *y2) {
  char *end;
  if (*d != 'M') {
    return false;
  }
  long x = strtol(d + 1, &end, 10), y;
  if (*end != ',') {
    return false;
  }
  y = strtol(end + 1, &end, 10);
  *x1 = x;
  *y1 = y;
  while (*end && *end != '"') {
    char cmd = *end++;
    if (cmd == 'V') {
      y = strtol(end, &end, 10);
    } else if (cmd == 'H') {
      x = strtol(end, &end, 10);
    } else if (cmd == 'C') {
      for (int k = 0; k < 3; k++) {
        x = strtol(end, &end, 10);
        if (*end != ',') {
          return false;
        }
        y = strtol(end + 1, &end, 10);
        end += *end == ' ';
      }
    } else {
      return false;
    }
  }
  *x2 = x;
  *y2 = y;
  return *end == '"';
}

// Whether a straight (V or H) segment of the path data at |d| runs through
// the inside of one of the |n| boxes (curves are not checked: they only
// join adjacent rows, across the gap between them).
static bool path_crosses_a_box(const char *d, const drawn_box_t *boxes,
                               size_t n) {
  char *end;
  long x = strtol(d + 1, &end, 10), y = strtol(end + 1, &end, 10);
  while (*end == 'V' || *end == 'H' || *end == 'C') {
    char cmd = *end++;
    long x0 = x, y0 = y;
    if (cmd == 'C') {
      for (int k = 0; k < 3; k++) {
        x = strtol(end, &end, 10);
        y = strtol(end + 1, &end, 10);
        end += *end == ' ';
      }
      continue;
    }
    *(cmd == 'V' ? &y : &x) = strtol(end, &end, 10);
    long lx = x0 < x ? x0 : x, hx = x0 < x ? x : x0;
    long ly = y0 < y ? y0 : y, hy = y0 < y ? y : y0;
    for (size_t i = 0; i < n; i++) {
      const drawn_box_t *b = &boxes[i];
      bool inside = cmd == 'V' ? b->x < x && x < b->x + b->w
                               : b->y < y && y < b->y + b->h;
      bool along = cmd == 'V' ? ly < b->y + b->h && b->y < hy
                              : lx < b->x + b->w && b->x < hx;
      if (inside && along) {
        return true;
      }
    }
  }
  return false;
}

// Whether node |p| is a producer of node |c| in |map|.
static bool is_pred(const wm_map_t *map, size_t p, size_t c) {
  for (size_t k = 0; k < map->nodes[c].n_preds; k++) {
    if (map->nodes[c].preds[k] == p) {
      return true;
    }
  }
  return false;
}

// Whether |c| follows |p| directly on the critical path.
static bool is_critical_edge(const wm_map_t *map, size_t p, size_t c) {
  const wm_map_critical_t *cp = &map->critical;
  for (size_t k = 0; k + 1 < cp->n_nodes; k++) {
    if (cp->nodes[k] == p && cp->nodes[k + 1] == c) {
      return true;
    }
  }
  return false;
}

// The box whose point (x + w/2, y + h * |bottom|) is (px, py), or n.
static size_t box_at(const drawn_box_t *boxes, size_t n, long px, long py,
                     bool bottom) {
  for (size_t i = 0; i < n; i++) {
    const drawn_box_t *b = &boxes[i];
    if (b->x + b->w / 2 == px && b->y + (bottom ? b->h : 0) == py) {
      return i;
    }
  }
  return n;
}

// Parses the boxes of |svg| into |boxes| (one per node of |map|); writes
// what is wrong into |why| and returns false.
static bool parse_boxes(const wm_map_t *map, const char *svg,
                        drawn_box_t *boxes, char *why, size_t cap) {
  static const char key[] = "<g class=\"gn";
  size_t n = map->n_nodes, found = 0;
  for (const char *p = strstr(svg, key); p; p = strstr(p + 1, key)) {
    const char *q = strchr(p + sizeof(key) - 1, '"');
    size_t i;
    if (!q || sscanf(q, "\" data-i=\"%zu\"", &i) != 1 || i >= n ||
        boxes[i].seen) {
      snprintf(why, cap, "box %zu: no data-i, out of range or twice", found);
      return false;
    }
    drawn_box_t *b = &boxes[i];
    b->seen = true;
    found++;
    size_t len = (size_t)(q - p);
    b->critical = memmem(p, len, " cr", 3) != NULL;
    b->bad = memmem(p, len, " bad", 4) != NULL;
    const char *r = strstr(q, "<rect ");
    if (!r || sscanf(r,
                     "<rect x=\"%ld\" y=\"%ld\" width=\"%ld\" height=\"%ld\" "
                     "fill=\"%15[^\"]\"",
                     &b->x, &b->y, &b->w, &b->h, b->fill) != 5) {
      snprintf(why, cap, "box of node %zu has no rect", i);
      return false;
    }
  }
  if (found != n) {
    snprintf(why, cap, "%zu boxes for %zu nodes", found, n);
    return false;
  }
  return true;
}

// Checks each box against its node: fill, classes, no overlap, inside.
static bool check_boxes(const wm_map_t *map, const drawn_box_t *boxes,
                        long width, long height, char *why, size_t cap) {
  size_t n = map->n_nodes;
  size_t b =
      map->critical.backend < map->n_backends ? map->critical.backend : 0;
  for (size_t i = 0; i < n; i++) {
    const wm_map_node_t *nd = &map->nodes[i];
    const drawn_box_t *x = &boxes[i];
    const char *want =
        map->n_backends ? wm_map_cover_fill(nd->cells[b].cover) : "#ffffff";
    if (strcmp(x->fill, want) != 0) {
      snprintf(why, cap, "node %zu (%s) is filled %s, want %s", i, nd->op_type,
               x->fill, want);
      return false;
    }
    if (x->critical != nd->critical || x->bad != (nd->state != 0)) {
      snprintf(why, cap, "node %zu: class cr %d bad %d, want %d %d", i,
               x->critical, x->bad, nd->critical, nd->state != 0);
      return false;
    }
    if (x->x < 0 || x->y < 0 || x->x + x->w > width || x->y + x->h > height) {
      snprintf(why, cap, "node %zu's box is outside the picture", i);
      return false;
    }
    for (size_t j = 0; j < i; j++) {
      const drawn_box_t *o = &boxes[j];
      if (x->x < o->x + o->w && o->x < x->x + x->w && x->y < o->y + o->h &&
          o->y < x->y + x->h) {
        snprintf(why, cap, "the boxes of nodes %zu and %zu overlap", j, i);
        return false;
      }
    }
  }
  return true;
}

// Checks the edges: one path per dependency, from the producer's bottom to
// the consumer's top (so downwards) through no box, red exactly along the
// critical path.
static bool check_edges(const wm_map_t *map, const char *svg,
                        const drawn_box_t *boxes, char *why, size_t cap) {
  size_t n = map->n_nodes, want = 0, found = 0, red = 0;
  for (size_t i = 0; i < n; i++) {
    want += map->nodes[i].n_preds;
  }
  bool *seen = calloc(n * n + 1, sizeof(bool));
  if (!seen) {
    snprintf(why, cap, "out of memory");
    return false;
  }
  bool ok = true;
  for (const char *p = strstr(svg, "<path"); ok && p;
       p = strstr(p + 1, "<path")) {
    bool cr = strncmp(p, "<path class=\"cr\"", 16) == 0;
    const char *d = strstr(p, " d=\"");
    long x1, y1, x2, y2;
    if (!d || !path_ends(d + 4, &x1, &y1, &x2, &y2)) {
      snprintf(why, cap, "path %zu has data the test cannot read", found);
      ok = false;
      break;
    }
    size_t from = box_at(boxes, n, x1, y1, true);
    size_t to = box_at(boxes, n, x2, y2, false);
    if (from == n || to == n || !is_pred(map, from, to) ||
        seen[from * n + to] || y2 <= y1) {
      snprintf(why, cap,
               "path %zu (%ld,%ld to %ld,%ld) joins no dependency, one "
               "drawn twice, or goes up",
               found, x1, y1, x2, y2);
      ok = false;
      break;
    }
    if (path_crosses_a_box(d + 4, boxes, n)) {
      snprintf(why, cap, "edge %zu -> %zu runs through a box", from, to);
      ok = false;
      break;
    }
    seen[from * n + to] = true;
    if (cr != is_critical_edge(map, from, to)) {
      snprintf(why, cap, "edge %zu -> %zu: red %d, on the path %d", from, to,
               cr, !cr);
      ok = false;
    }
    found++;
    red += cr;
  }
  free(seen);
  if (ok && found != want) {
    snprintf(why, cap, "%zu edges drawn for %zu dependencies", found, want);
    ok = false;
  }
  if (ok && red + 1 != (map->critical.n_nodes ? map->critical.n_nodes : 1)) {
    snprintf(why, cap, "%zu red edges on a path of %zu nodes", red,
             map->critical.n_nodes);
    ok = false;
  }
  return ok;
}

// What is wrong with the graph picture of |map| in |html|, written into
// |why|; NULL when it is right. |boxes| (map->n_nodes) receives the boxes.
static const char *picture_problem(const wm_map_t *map, const char *html,
                                   drawn_box_t *boxes, char *why, size_t cap) {
  size_t len;
  const char *svg = graph_svg(html, &len);
  if (!svg || count(html, "<svg class=\"graph\"") != 1) {
    return "not exactly one <svg class=\"graph\">";
  }
  char *text = strndup(svg, len);  // the picture alone
  long width = 0, height = 0;
  if (!text ||
      sscanf(text,
             "<svg class=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" "
             "width=\"%ld\" height=\"%ld\"",
             &width, &height) != 2) {
    free(text);
    return "the picture has no size";
  }
  memset(boxes, 0, map->n_nodes * sizeof(*boxes));
  bool ok = parse_boxes(map, text, boxes, why, cap) &&
            check_boxes(map, boxes, width, height, why, cap) &&
            check_edges(map, text, boxes, why, cap);
  free(text);
  return ok ? NULL : why;
}

// Renders |r| and checks its picture; fails the test on a problem.
#define CHECK_PICTURE(r, boxes)                                               \
  do {                                                                        \
    char why_[256];                                                           \
    const char *problem_ =                                                    \
        picture_problem((r)->map, (r)->html.data, boxes, why_, sizeof(why_)); \
    if (problem_) {                                                           \
      wm_test_fail(__FILE__, __LINE__, "graph picture: %s", problem_);        \
    }                                                                         \
  } while (0)

WM_TEST(graph_picture_has_a_box_per_node_and_an_edge_per_dependency) {
  rendered_t r;
  WM_CHECK_OK(render_zoo("resnet18", &r));
  drawn_box_t *boxes = calloc(r.map->n_nodes, sizeof(*boxes));
  if (boxes) {
    CHECK_PICTURE(&r, boxes);
  }
  size_t red = 0, path = r.map->critical.n_nodes, nodes = r.map->n_nodes;
  for (size_t i = 0; boxes && i < nodes; i++) {
    red += boxes[i].critical;
  }
  size_t len = 0;
  const char *svg = graph_svg(r.html.data, &len);
  char *picture = svg ? strndup(svg, len) : NULL;
  size_t adds = picture ? count(picture, ">Add</text>") : 0;
  free(picture);
  free(boxes);
  rendered_free(&r);
  WM_CHECK(boxes != NULL);
  WM_CHECK(path >= 20);  // resnet18's path runs through every block
  WM_CHECK_INT_EQ(red, path);
  WM_CHECK_INT_EQ(adds, 8);  // one residual Add per basic block
}

WM_TEST(graph_boxes_are_filled_by_coverage) {
  // MatMul runs on ref; the undefined "Bad<op>&" is missing everywhere.
  wm_graph_t *g = NULL;
  WM_CHECK_OK(tiny_graph("mm", &g));
  rendered_t r;
  WM_CHECK_OK(render(g, "tiny", NULL, &r));
  drawn_box_t boxes[2];
  CHECK_PICTURE(&r, boxes);
  wm_map_cover_t c0 = r.map->nodes[0].cells[0].cover;
  wm_map_cover_t c1 = r.map->nodes[1].cells[0].cover;
  size_t op_label = count(r.html.data, ">Bad&lt;op&gt;&amp;</text>");
  rendered_free(&r);
  WM_CHECK(c0 != c1);  // so the fills must differ
  WM_CHECK_INT_EQ(c1, WM_COVER_MISSING);
  WM_CHECK_STR_EQ(boxes[1].fill, wm_map_cover_fill(WM_COVER_MISSING));
  WM_CHECK(strcmp(boxes[0].fill, boxes[1].fill) != 0);
  WM_CHECK(boxes[1].bad && !boxes[0].bad);
  WM_CHECK(boxes[1].y > boxes[0].y);  // the consumer is below
  WM_CHECK_INT_EQ(op_label, 1);
}

// x [1,4] feeding |fan| Relu nodes (each an output) and a chain of three
// Relu nodes c0 -> c1 -> c2.
static wm_status_t fan_graph(int fan, wm_graph_t **out) {
  wm_graph_t *g = NULL;
  WM_RETURN_IF_ERROR(wm_graph_create("fan", NULL, &g));
  int64_t xd[2] = {1, 4};
  wm_shape_t xs = wm_shape_make(2, xd);
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
  wm_status_t s = wm_graph_set_opset(g, "", 17);
  if (!s) {
    s = wm_graph_add_input(g, "x", &xt, NULL);
  }
  static const char *const chain[][2] = {{"x", "a"}, {"a", "b"}, {"b", "c"}};
  for (int k = 0; !s && k < 3; k++) {
    char name[8];
    snprintf(name, sizeof(name), "c%d", k);
    s = wm_graph_add_node(g, "Relu", "", name, &chain[k][0], 1, &chain[k][1], 1,
                          NULL);
  }
  if (!s) {
    s = wm_graph_add_output(g, "c", NULL, NULL);
  }
  for (int k = 0; !s && k < fan; k++) {
    char name[16], y[16];
    snprintf(name, sizeof(name), "f%d", k);
    snprintf(y, sizeof(y), "y%d", k);
    const char *in[] = {"x"}, *outs[] = {y};
    s = wm_graph_add_node(g, "Relu", "", name, in, 1, outs, 1, NULL);
    if (!s) {
      s = wm_graph_add_output(g, y, NULL, NULL);
    }
  }
  if (s) {
    wm_graph_destroy(g);
    return s;
  }
  *out = g;
  return NULL;
}

WM_TEST(graph_layers_wrap_and_chains_run_straight_down) {
  wm_graph_t *g = NULL;
  WM_CHECK_OK(fan_graph(20, &g));
  rendered_t r;
  WM_CHECK_OK(render(g, "fan", NULL, &r));
  drawn_box_t boxes[23];
  size_t n = r.map->n_nodes;
  if (n == 23) {
    CHECK_PICTURE(&r, boxes);
  }
  // The chain c0 -> c1 -> c2 and the fan f0..f19; c0 and the fan are
  // layer 0 (21 boxes: 16 wide, then a second row).
  long xs[23], fan_ys[23];
  size_t n_xs = 0, n_fan_ys = 0, chain[3] = {0, 0, 0};
  for (size_t i = 0; n == 23 && i < n; i++) {
    const char *name = r.map->nodes[i].name;
    if (name[0] == 'c') {
      chain[name[1] - '0'] = i;
    }
    bool known = false;
    for (size_t k = 0; k < n_xs; k++) {
      known |= xs[k] == boxes[i].x;
    }
    if (!known) {
      xs[n_xs++] = boxes[i].x;
    }
    known = false;
    for (size_t k = 0; name[0] == 'f' && k < n_fan_ys; k++) {
      known |= fan_ys[k] == boxes[i].y;
    }
    if (name[0] == 'f' && !known) {
      fan_ys[n_fan_ys++] = boxes[i].y;
    }
  }
  rendered_free(&r);
  WM_CHECK_INT_EQ(n, 23);
  WM_CHECK_INT_EQ(n_xs, 16);
  WM_CHECK_INT_EQ(n_fan_ys, 2);
  const drawn_box_t *c0 = &boxes[chain[0]], *c1 = &boxes[chain[1]],
                    *c2 = &boxes[chain[2]];
  WM_CHECK_INT_EQ(c1->x, c0->x);  // the chain is one column
  WM_CHECK_INT_EQ(c2->x, c1->x);
  WM_CHECK(c1->y > c0->y && c2->y > c1->y);
}

WM_TEST(graph_picture_of_bert_stays_linear_in_size) {
  rendered_t r;
  WM_CHECK_OK(render_zoo("bert-base", &r));
  size_t n = r.map->n_nodes, edges = 0, len = 0;
  for (size_t i = 0; i < n; i++) {
    edges += r.map->nodes[i].n_preds;
  }
  drawn_box_t *boxes = calloc(n, sizeof(*boxes));
  if (boxes) {
    CHECK_PICTURE(&r, boxes);
  }
  long width = 0;
  for (size_t i = 0; boxes && i < n; i++) {
    width = boxes[i].x + boxes[i].w > width ? boxes[i].x + boxes[i].w : width;
  }
  graph_svg(r.html.data, &len);
  free(boxes);
  rendered_free(&r);
  WM_CHECK(n >= 300);
  // Each box and each edge costs a bounded number of bytes (the box's
  // tooltip holds the node's name), and the picture is at most 16 boxes
  // wide however many nodes a layer has.
  WM_CHECK(len < 400 * (n + edges));
  WM_CHECK(width <= 16 * 100);
}

// A map of |n| unconnected nodes and no backends, made by hand.
typedef struct bare_map {
  wm_map_t map;
  wm_map_node_t *nodes;
} bare_map_t;

static bool bare_map_init(bare_map_t *h, size_t n) {
  memset(h, 0, sizeof(*h));
  h->map.model = "bare";
  h->map.graph_name = "bare";
  h->nodes = calloc(n, sizeof(*h->nodes));
  for (size_t i = 0; h->nodes && i < n; i++) {
    h->nodes[i].index = (int32_t)i;
    h->nodes[i].name = "n";
    h->nodes[i].op_type = "Relu";
    h->nodes[i].domain = "";
    h->nodes[i].note = "";
    h->nodes[i].inputs = "";
    h->nodes[i].outputs = "";
  }
  h->map.n_nodes = h->nodes ? n : 0;
  h->map.nodes = h->nodes;
  h->map.totals.nodes = h->map.n_nodes;
  h->map.memory.peak_node = SIZE_MAX;
  return h->nodes != NULL;
}

WM_TEST(graph_without_backends_is_drawn_unfilled) {
  bare_map_t h;
  WM_CHECK(bare_map_init(&h, 3));
  rendered_t r;
  memset(&r, 0, sizeof(r));
  wm_strbuf_init(&r.html);
  r.map = &h.map;
  wm_map_to_html(&h.map, &r.html);
  drawn_box_t boxes[3];
  CHECK_PICTURE(&r, boxes);
  r.map = NULL;
  wm_strbuf_deinit(&r.html);
  free(h.nodes);
  WM_CHECK_STR_EQ(boxes[2].fill, "#ffffff");
}

WM_TEST(graph_too_large_to_draw_says_so) {
  bare_map_t h;
  WM_CHECK(bare_map_init(&h, 5001));
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_map_to_html(&h.map, &out);
  size_t pictures = count(wm_strbuf_str(&out), "<svg class=\"graph\"");
  size_t note = count(wm_strbuf_str(&out), "Not drawn: 5001 nodes");
  wm_strbuf_deinit(&out);
  free(h.nodes);
  WM_CHECK_INT_EQ(pictures, 0);
  WM_CHECK_INT_EQ(note, 1);
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
      WM_CASE(graph_picture_has_a_box_per_node_and_an_edge_per_dependency),
      WM_CASE(graph_boxes_are_filled_by_coverage),
      WM_CASE(graph_layers_wrap_and_chains_run_straight_down),
      WM_CASE(graph_picture_of_bert_stays_linear_in_size),
      WM_CASE(graph_without_backends_is_drawn_unfilled),
      WM_CASE(graph_too_large_to_draw_says_so),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
