// Tests of the text and Markdown reports: width, colour, escaping and the
// sections, on a hand-made map (every section, hostile names) and on maps
// of zoo models and of a graph with an unknown operator on ref.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "wm_test.h"
#include "wmap/map.h"
#include "wmap/plugin.h"
#include "wmap/zoo.h"

// Returns the first line of |s| (1-based) longer than 100 bytes or holding
// a byte outside printable ASCII, printing it; 0 when every line is fine.
static size_t bad_line(const char *s) {
  size_t line = 1, len = 0;
  const char *start = s;
  for (const char *p = s; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '\n') {
      line++;
      len = 0;
      start = p + 1;
      continue;
    }
    len++;
    if (len > 100 || c < 0x20 || c > 0x7e) {
      const char *end = strchr(start, '\n');
      fprintf(stderr, "line %zu: %.*s\n", line,
              (int)(end ? end - start : (ptrdiff_t)strlen(start)), start);
      return line;
    }
  }
  return 0;
}

// Returns |s| with every ANSI escape sequence ("\x1b[...m") removed.
static char *strip_ansi(const char *s) {
  char *out = malloc(strlen(s) + 1), *q = out;
  if (!out) {
    return NULL;
  }
  while (*s) {
    if (*s == '\x1b' && s[1] == '[') {
      s += 2;
      while (*s && *s != 'm') {
        s++;
      }
      s += *s == 'm';
      continue;
    }
    *q++ = *s++;
  }
  *q = '\0';
  return out;
}

// Returns 0 when every Markdown table (a run of lines starting with '|')
// has the same count of unescaped pipes on each row and a valid rule row;
// else the first bad line (1-based), printed.
static size_t bad_table(const char *s) {
  size_t line = 0, want = 0, row = 0;
  while (*s) {
    line++;
    const char *end = strchr(s, '\n');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len > 0 && s[0] == '|') {
      size_t pipes = 0;
      bool rule = true;
      for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\') {
          i++;
          rule = false;
          continue;
        }
        pipes += s[i] == '|';
        rule = rule && strchr("|-:", s[i]) != NULL;
      }
      bool bad = (row > 0 && pipes != want) || (row == 1 && !rule) ||
                 pipes < 2 || s[len - 1] != '|';
      if (bad) {
        fprintf(stderr, "line %zu: %.*s\n", line, (int)len, s);
        return line;
      }
      want = pipes;
      row++;
    } else {
      row = 0;
    }
    s += len + (end != NULL);
  }
  return 0;
}

// The text between the line "== |name| ==" and the next section title.
static char *section(const char *text, const char *name) {
  char head[96];
  snprintf(head, sizeof(head), "== %s", name);
  const char *p = strstr(text, head);
  if (!p) {
    return NULL;
  }
  const char *q = strstr(p + strlen(head), "\n== ");
  size_t n = q ? (size_t)(q - p) : strlen(p);
  char *out = malloc(n + 1);
  if (out) {
    memcpy(out, p, n);
    out[n] = '\0';
  }
  return out;
}

// True when a line of |text| starts with |word| followed by a space.
static bool has_row(const char *text, const char *word) {
  size_t n = strlen(word);
  for (const char *p = text; p; p = strchr(p, '\n')) {
    p += *p == '\n';
    if (strncmp(p, word, n) == 0 && p[n] == ' ') {
      return true;
    }
  }
  return false;
}

// ------------------------------------------------------------- a fake map

typedef struct fake {
  wm_map_t map;
  wm_map_node_t nodes[4];
  wm_map_cell_t cells[4][2];
  wm_map_optype_t types[4];
  wm_map_type_cell_t tcells[4][2];
  wm_map_backend_t backends[2];
  wm_map_todo_t todo[1];
  wm_map_live_t live[2];
  size_t path[3];
  size_t preds[3];
  wm_map_collective_t coll[25];
  double stage_t[2];
  double stage_f[2];
  const char *notes[1];
  wm_map_dim_t dims[1];
  char long_name[160];
} fake_t;

// A map of 4 nodes on 2 backends under a plan: a name with a pipe, a very
// long name, a name with an escape character, an unknown operator, and 24
// identical AllReduces plus one send/recv.
static void fake_init(fake_t *f) {
  memset(f, 0, sizeof(*f));
  wm_map_t *m = &f->map;
  memset(f->long_name, 'x', sizeof(f->long_name) - 1);
  static const char *const names[4] = {"conv|0", NULL, "bad\x1bname", "relu"};
  static const char *const ops[4] = {"Conv", "MatMul", "FancyOp", "Relu"};
  for (size_t i = 0; i < 4; i++) {
    wm_map_node_t *n = &f->nodes[i];
    n->index = (int32_t)i;
    n->name = names[i] ? names[i] : f->long_name;
    n->op_type = ops[i];
    n->domain = "";
    n->note = "";
    n->inputs = "f32[1,8]";
    n->outputs = "f32[1,8]";
    n->flops = i == 2 ? 0 : 1e9 * (double)(4 - i);
    n->macs = n->flops / 2;
    n->act_in_bytes = 4096;
    n->weight_bytes = i < 2 ? 1 << 20 : 0;
    n->out_bytes = 4096;
    n->intensity =
        n->flops / (double)(n->act_in_bytes + n->weight_bytes + n->out_bytes);
    n->params = i < 2 ? 262144 : 0;
    n->critical = i != 2;
    n->slack = n->critical ? 0 : 1e-3;
    n->stage = i < 2 ? 0 : 1;
    n->cells = f->cells[i];
    for (size_t b = 0; b < 2; b++) {
      wm_map_cell_t *c = &f->cells[i][b];
      c->cover = b == 0   ? WM_COVER_VENDOR_LIBRARY
                 : i == 0 ? WM_COVER_NATIVE
                          : WM_COVER_FALLBACK;
      c->detail = "";
      c->t_comp = n->flops / 1e11;
      c->t_mem = 1e-6;
      c->t_comm = b == 1 && i == 1 ? 5e-3 : 0;
      c->t_roof = c->t_comm > c->t_comp ? c->t_comm : c->t_comp;
      c->t_roof = c->t_roof > c->t_mem ? c->t_roof : c->t_mem;
      c->bound = c->t_roof == c->t_comm   ? WM_BOUND_COMMUNICATION
                 : c->t_roof == c->t_comp ? WM_BOUND_COMPUTE
                                          : WM_BOUND_MEMORY;
    }
  }
  f->nodes[2].state = WM_MAP_NODE_UNKNOWN_OP;
  f->nodes[2].note = "no definition of FancyOp at opset 17 | domain \"\"";
  f->cells[2][0].cover = WM_COVER_MISSING;
  f->cells[2][1].cover = WM_COVER_MISSING;
  f->cells[2][0].bound = WM_BOUND_UNKNOWN;
  f->cells[2][1].bound = WM_BOUND_UNKNOWN;
  for (size_t i = 1; i < 4; i++) {
    f->preds[i - 1] = i - 1;
    f->nodes[i].n_preds = 1;
    f->nodes[i].preds = &f->preds[i - 1];
  }
  for (size_t k = 0; k < 4; k++) {
    wm_map_optype_t *t = &f->types[k];
    const wm_map_node_t *n = &f->nodes[k];
    t->op_type = n->op_type;
    t->domain = "";
    t->count = 1;
    t->macs = n->macs;
    t->flops = n->flops;
    t->act_in_bytes = n->act_in_bytes;
    t->weight_bytes = n->weight_bytes;
    t->out_bytes = n->out_bytes;
    t->params = n->params;
    t->cells = f->tcells[k];
    for (size_t b = 0; b < 2; b++) {
      f->tcells[k][b].count[f->cells[k][b].cover] = 1;
      f->tcells[k][b].t_roof = f->cells[k][b].t_roof;
    }
  }
  f->tcells[1][1].count[WM_COVER_NATIVE] = 10;  // a mixed cell
  static const char *const bnames[2] = {"ref", "gpu"};
  for (size_t b = 0; b < 2; b++) {
    wm_map_backend_t *be = &f->backends[b];
    be->name = bnames[b];
    be->version = "1";
    be->target = b == 0 ? "host CPU" : "Imaginary Accelerator 9000 | rev B";
    be->fallback = b == 0;
    be->peak_gflops = b == 0 ? 100 : 10000;
    be->bandwidth_gbs = b == 0 ? 20 : 900;
    be->peak_source = b == 0 ? "measured" : "declared";
    be->ridge = be->peak_gflops / be->bandwidth_gbs;
    for (size_t i = 0; i < 4; i++) {
      be->count[f->cells[i][b].cover]++;
      be->t_roof += f->cells[i][b].t_roof;
    }
    be->nodes_covered = b == 0 ? 3 : 1;
    be->flops_covered = b == 0 ? 9e9 : 4e9;
    be->t_roof_covered = be->t_roof / 2;
    be->partitions = b == 0 ? 1 : 2;
    be->suitability = b == 0 ? "good" : "poor";
    be->has_collectives = b == 1;
    be->coll_level[1] = b == 1 ? 2 : 0;
  }
  f->todo[0] = (wm_map_todo_t){
      "MatMul",
      "",
      1,
      3e9,
      1,
      "the accelerator has no kernel for this operator yet and the detail "
      "text is long enough to need wrapping onto a second line of the table",
  };
  f->backends[1].todo = f->todo;
  f->backends[1].n_todo = 1;
  f->backends[1].boundary_copies = 2;
  f->backends[1].boundary_bytes = 8192;
  f->live[0] = (wm_map_live_t){"t|1", 4096};
  f->live[1] = (wm_map_live_t){"t2", 2048};
  for (size_t i = 0; i < 25; i++) {
    wm_map_collective_t *c = &f->coll[i];
    c->kind = i < 24 ? 1 : WM_MAP_P2P;
    c->why = i < 24 ? "tensor-parallel: row-parallel MatMul output"
                    : "pipeline: activations to the next stage";
    c->tensor = i < 24 ? "h" : "act";
    c->node = 1;
    c->ranks = 2;
    c->per_forward = 1;
    c->per_step = 2;
    c->bytes = 1 << 20;
    c->wire_bytes = 2.0 * (1 << 20);
    c->t_call = 1e-4;
  }
  f->path[0] = 0;
  f->path[1] = 1;
  f->path[2] = 3;
  f->stage_t[0] = 1e-2;
  f->stage_t[1] = 1e-3;
  f->stage_f[0] = 7e9;
  f->stage_f[1] = 1e9;
  f->notes[0] =
      "1 node could not be analysed (FancyOp): its FLOPs and bytes are "
      "missing from every figure below, and this note is long enough to wrap";
  f->dims[0] = (wm_map_dim_t){"batch", 8};
  m->model = "fake";
  m->graph_name = "g";
  m->opset = 17;
  m->n_dims = 1;
  m->dims = f->dims;
  m->n_nodes = 4;
  m->nodes = f->nodes;
  m->n_types = 4;
  m->types = f->types;
  m->n_backends = 2;
  m->backends = f->backends;
  m->totals =
      (wm_map_totals_t){4, 1, 524288, 3e9, 6e9, 0, 2 << 20, 16384, 16384, 8192};
  m->memory = (wm_map_memory_t){2 << 20, 8192, 1, 2, f->live};
  m->critical = (wm_map_critical_t){1, "t_roof", 8e-2, 8e-2 + 1e-6, 3, f->path};
  m->plan.enabled = true;
  m->plan.spec = (wm_map_parallel_t){1, 2, 2, 4, false, 25, 4};
  m->plan.link_gbs = 25;
  m->plan.n_coll = 25;
  m->plan.coll = f->coll;
  m->plan.wire_bytes = 50.0 * (1 << 20);
  m->plan.t_comm = 2.5e-3;
  m->plan.bubble = 0.2;
  m->plan.bubble_ideal = 0.25;
  m->plan.stage_t_roof = f->stage_t;
  m->plan.stage_flops = f->stage_f;
  m->n_notes = 1;
  m->notes = f->notes;
  m->have_machine = true;
  snprintf(m->machine.model, sizeof(m->machine.model), "Test CPU");
  m->machine.cores = 4;
  snprintf(m->machine.kernel, sizeof(m->machine.kernel), "6.1.0");
  snprintf(m->machine.fingerprint, sizeof(m->machine.fingerprint),
           "0123456789abcdef");
}

static fake_t g_fake;

WM_TEST(text_fits_100_columns_and_colour_is_only_escape_codes) {
  fake_init(&g_fake);
  wm_strbuf_t plain, color;
  wm_strbuf_init(&plain);
  wm_strbuf_init(&color);
  wm_map_to_text(&g_fake.map, false, &plain);
  wm_map_to_text(&g_fake.map, true, &color);
  char *stripped = strip_ansi(wm_strbuf_str(&color));
  const char *p = wm_strbuf_str(&plain);
  size_t bad = bad_line(p);
  bool has_esc = strchr(wm_strbuf_str(&color), '\x1b') != NULL;
  bool same = stripped && strcmp(stripped, p) == 0;
  bool bold = strstr(wm_strbuf_str(&color), "\x1b[1m== Totals ==") != NULL;
  bool red = strstr(wm_strbuf_str(&color), "\x1b[31mmiss") != NULL;
  free(stripped);
  if (!same) {
    fprintf(stderr, "%s", p);
  }
  wm_strbuf_deinit(&color);
  wm_strbuf_deinit(&plain);
  WM_CHECK_INT_EQ(bad, 0);
  WM_CHECK(has_esc);
  WM_CHECK(same);
  WM_CHECK(bold);
  WM_CHECK(red);
}

WM_TEST(text_shows_every_section_of_a_planned_map) {
  fake_init(&g_fake);
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_map_to_text(&g_fake.map, false, &b);
  const char *t = wm_strbuf_str(&b);
  static const char *const want[] = {
      "wmap map: fake",
      "dims: batch=8",
      "machine: Test CPU, 4 cores",
      "note: 1 node could not be analysed (FancyOp)",
      "== Totals ==",
      "524,288",
      "FLOPs = 2 x MACs for contractions",
      "== Operators by type ==",
      "lib",
      "nat 10/fb 1",
      "== Roofline per backend ==",
      "== Coverage per backend ==",
      "operators to write for ref: none listed",
      "operators to write for gpu (1):",
      "== Top 4 nodes by roofline time on gpu ==",
      "xxx...",
      "== Critical path on gpu ==",
      "== Parallel plan ==",
      "dp=1 tp=2 pp=2 microbatches=4, training",
      "device copies",
      "== Unmapped nodes ==",
      "bad?name",
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    if (!strstr(t, want[i])) {
      fprintf(stderr, "%s\nmissing: \"%s\"\n", t, want[i]);
      wm_strbuf_deinit(&b);
      WM_CHECK(!"text holds every expected piece");
    }
  }
  // The 24 AllReduces are one row with their count.
  char *plan = section(t, "Parallel plan");
  size_t rows = 0;
  bool counted = false;
  for (const char *p = plan; p && (p = strstr(p, "\nAllReduce")); p++) {
    rows++;
    const char *end = strchr(p + 1, '\n');
    char line[128];
    snprintf(line, sizeof(line), "%.*s", (int)(end ? end - p : 100), p);
    counted = counted || strstr(line, " 24 ") != NULL;
  }
  free(plan);
  wm_strbuf_deinit(&b);
  WM_CHECK_INT_EQ(rows, 1);
  WM_CHECK(counted);
}

WM_TEST(markdown_tables_are_consistent_and_escaped) {
  fake_init(&g_fake);
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_map_to_markdown(&g_fake.map, &b);
  const char *t = wm_strbuf_str(&b);
  size_t bad = bad_table(t);
  bool esc = strchr(t, '\x1b') != NULL;
  bool pipe = strstr(t, "conv\\|0") != NULL;
  bool titles = strstr(t, "# wmap map: fake\n") == t &&
                strstr(t, "\n## Totals\n") && strstr(t, "\n## Parallel plan\n");
  bool quote = strstr(t, "\n> **note:** 1 node could not") != NULL;
  bool full = strstr(t, g_fake.long_name) != NULL;  // no truncation
  if (bad || !pipe || !titles || !quote) {
    fprintf(stderr, "%s", t);
  }
  wm_strbuf_deinit(&b);
  WM_CHECK_INT_EQ(bad, 0);
  WM_CHECK(!esc);
  WM_CHECK(pipe);
  WM_CHECK(titles);
  WM_CHECK(quote);
  WM_CHECK(full);
}

WM_TEST(csv_quotes_fields_and_dot_escapes_labels) {
  fake_init(&g_fake);
  g_fake.nodes[3].name = "relu, \"last\"";
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_map_to_csv(&g_fake.map, &b);
  const char *t = wm_strbuf_str(&b);
  bool quoted = strstr(t, ",\"relu, \"\"last\"\"\",Relu,") != NULL;
  bool rows = true;  // a header and 4 rows, each ending in CRLF
  size_t lines = 0;
  for (const char *p = t; (p = strstr(p, "\r\n")) != NULL; p += 2) {
    lines++;
  }
  rows = lines == 5;
  bool esc = strchr(t, '\x1b') != NULL;  // kept as data inside the field
  wm_strbuf_deinit(&b);
  wm_strbuf_init(&b);
  wm_map_to_dot(&g_fake.map, &b);
  const char *d = wm_strbuf_str(&b);
  bool label = strstr(d, "[label=\"relu, \\\"last\\\"\\nRelu\"") != NULL;
  bool no_escape_char = strchr(d, '\x1b') == NULL;
  bool braces =
      strncmp(d, "digraph \"fake\" {", 16) == 0 && strstr(d, "}\n") != NULL;
  if (!quoted || !rows || !label || !braces) {
    fprintf(stderr, "%s\n---\n%s", t, d);
  }
  wm_strbuf_deinit(&b);
  WM_CHECK(quoted);
  WM_CHECK(rows);
  WM_CHECK(esc);
  WM_CHECK(label);
  WM_CHECK(no_escape_char);
  WM_CHECK(braces);
}

// A skip edge between two path nodes that the path does not take is not
// drawn as part of it: only consecutive path nodes' edges are red.
WM_TEST(dot_marks_only_the_path_edges) {
  fake_init(&g_fake);
  static size_t preds3[2] = {2, 0};  // node 3 reads node 2 and skips from 0
  g_fake.nodes[3].preds = preds3;
  g_fake.nodes[3].n_preds = 2;
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_map_to_dot(&g_fake.map, &b);
  const char *d = wm_strbuf_str(&b);
  size_t red = 0;
  for (const char *p = d; (p = strstr(p, "penwidth=2]")) != NULL; p++) {
    red++;
  }
  bool path_edge = strstr(d, "n0 -> n1 [color=") != NULL;
  bool skip_plain = strstr(d, "n0 -> n3;\n") != NULL;
  if (red != 1 || !path_edge || !skip_plain) {
    fprintf(stderr, "%s", d);
  }
  wm_strbuf_deinit(&b);
  WM_CHECK_INT_EQ(red, 1);
  WM_CHECK(path_edge);
  WM_CHECK(skip_plain);
}

WM_TEST(many_backends_drop_cover_columns_and_still_fit) {
  fake_init(&g_fake);
  // Six backends named long, all pointing at the two real ones' data.
  static wm_map_backend_t many[6];
  static wm_map_cell_t cells[4][6];
  static wm_map_type_cell_t tcells[4][6];
  static const char *const names[6] = {
      "backend-number-one",  "backend-number-two",  "backend-number-three",
      "backend-number-four", "backend-number-five", "backend-number-six"};
  for (size_t b = 0; b < 6; b++) {
    many[b] = g_fake.backends[b % 2];
    many[b].name = names[b];
    for (size_t i = 0; i < 4; i++) {
      cells[i][b] = g_fake.cells[i][b % 2];
      tcells[i][b] = g_fake.tcells[i][b % 2];
    }
  }
  for (size_t i = 0; i < 4; i++) {
    g_fake.nodes[i].cells = cells[i];
    g_fake.types[i].cells = tcells[i];
  }
  g_fake.map.backends = many;
  g_fake.map.n_backends = 6;
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_map_to_text(&g_fake.map, false, &b);
  size_t bad = bad_line(wm_strbuf_str(&b));
  char *inv = section(wm_strbuf_str(&b), "Operators by type");
  bool dropped = inv && !strstr(inv, "backend-number-one");
  free(inv);
  wm_strbuf_deinit(&b);
  WM_CHECK_INT_EQ(bad, 0);
  WM_CHECK(dropped);
}

WM_TEST(rendering_survives_each_failed_allocation) {
  fake_init(&g_fake);
  wm_strbuf_t want;
  wm_strbuf_init(&want);
  wm_map_to_text(&g_fake.map, true, &want);
  wm_map_to_markdown(&g_fake.map, &want);
  // Fail the n-th allocation until a render needs fewer than n.
  bool complete = false;
  int64_t n = 1;
  for (; n < 100000 && !complete; n++) {
    wm_strbuf_t b;
    wm_strbuf_init(&b);
    wm_alloc_fail_after(n);
    wm_map_to_text(&g_fake.map, true, &b);
    wm_map_to_markdown(&g_fake.map, &b);
    wm_alloc_fail_after(0);
    complete =
        !b.failed && strcmp(wm_strbuf_str(&b), wm_strbuf_str(&want)) == 0;
    wm_strbuf_deinit(&b);
  }
  wm_strbuf_deinit(&want);
  WM_CHECK(complete);
  WM_CHECK(n > 10);  // allocations did fail on the way
}

// ------------------------------------------------------------- real maps

// Peaks for ref that do not depend on this machine: 100 GFLOP/s, 10 GB/s.
static void fixed_peaks(wm_peaks_t *p) {
  memset(p, 0, sizeof(*p));
  snprintf(p->machine.model, sizeof(p->machine.model), "Test CPU");
  p->machine.cores = 2;
  snprintf(p->machine.kernel, sizeof(p->machine.kernel), "6.1.0");
  snprintf(p->machine.fingerprint, sizeof(p->machine.fingerprint),
           "0123456789abcdef");
  p->threads = 2;
  p->fma_fp32[0] = 50;
  p->fma_fp32[1] = 100;
  p->triad_gbs[0] = 10;
  p->triad_gbs[1] = 10;
  p->n_backends = 1;
  snprintf(p->backends[0].name, sizeof(p->backends[0].name), "ref");
  p->backends[0].host = true;
}

// Maps |graph| (taken) on ref with fixed peaks.
static wm_status_t map_on_ref(wm_graph_t *graph, const char *model,
                              wm_map_t **out) {
  *out = NULL;
  wm_backend_t *ref = NULL;
  wm_status_t s = wm_backend_create(wm_ref_plugin_query, "built-in", &ref);
  if (!s) {
    static wm_peaks_t peaks;
    fixed_peaks(&peaks);
    wm_map_options_t o = {0};
    o.model = model;
    o.backends = &ref;
    o.backend_count = 1;
    o.peaks = &peaks;
    s = wm_map_build(graph, &o, out);
  }
  wm_backend_destroy(ref);
  wm_graph_destroy(graph);
  return s;
}

static wm_status_t map_zoo(const char *spec, wm_map_t **out) {
  wm_graph_t *g = NULL;
  *out = NULL;
  WM_RETURN_IF_ERROR(wm_zoo_build(spec, &g));
  return map_on_ref(g, spec, out);
}

// Checks the text and Markdown of |m|: widths, ASCII, colour, tables, and
// that the inventory has a row per op type.
static bool check_reports(const wm_map_t *m, const char *must_hold) {
  wm_strbuf_t plain, color, md;
  wm_strbuf_init(&plain);
  wm_strbuf_init(&color);
  wm_strbuf_init(&md);
  wm_map_to_text(m, false, &plain);
  wm_map_to_text(m, true, &color);
  wm_map_to_markdown(m, &md);
  const char *t = wm_strbuf_str(&plain);
  bool ok = true;
  if (bad_line(t) != 0) {
    ok = false;
  }
  if (strchr(t, '\x1b') || !strchr(wm_strbuf_str(&color), '\x1b') ||
      strchr(wm_strbuf_str(&md), '\x1b')) {
    fprintf(stderr, "escape codes where they should not be, or none\n");
    ok = false;
  }
  if (bad_table(wm_strbuf_str(&md)) != 0) {
    ok = false;
  }
  if (must_hold && !strstr(t, must_hold)) {
    fprintf(stderr, "missing \"%s\"\n", must_hold);
    ok = false;
  }
  char *inv = section(t, "Operators by type");
  for (size_t k = 0; k < m->n_types; k++) {
    if (!inv || !has_row(inv, m->types[k].op_type)) {
      fprintf(stderr, "op type %s has no inventory row\n", m->types[k].op_type);
      ok = false;
    }
  }
  free(inv);
  if (!ok) {
    fprintf(stderr, "%s", t);
  }
  wm_strbuf_deinit(&plain);
  wm_strbuf_deinit(&color);
  wm_strbuf_deinit(&md);
  return ok;
}

WM_TEST(mlp_reports_fit_and_list_every_op_type) {
  wm_map_t *m;
  WM_CHECK_OK(map_zoo("mlp", &m));
  bool ok = check_reports(m, "== Critical path on ref ==");
  wm_map_destroy(m);
  WM_CHECK(ok);
}

WM_TEST(resnet18_reports_exact_params_and_fit) {
  wm_map_t *m;
  WM_CHECK_OK(map_zoo("resnet18", &m));
  bool ok = check_reports(m, "11,689,512");
  wm_map_destroy(m);
  WM_CHECK(ok);
}

// x -> Relu -> FancyOp -> Relu -> y.
static wm_status_t fancy_graph(wm_graph_t **out) {
  WM_RETURN_IF_ERROR(wm_graph_create("fancy", NULL, out));
  wm_graph_t *g = *out;
  int64_t dims[] = {2, 3};
  wm_shape_t s = wm_shape_make(2, dims);
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &s);
  WM_RETURN_IF_ERROR(wm_graph_set_opset(g, "", 17));
  WM_RETURN_IF_ERROR(wm_graph_add_input(g, "x", &t, NULL));
  const char *in0[] = {"x"}, *out0[] = {"a"};
  const char *in1[] = {"a"}, *out1[] = {"b"};
  const char *in2[] = {"b"}, *out2[] = {"y"};
  WM_RETURN_IF_ERROR(
      wm_graph_add_node(g, "Relu", "", "relu_in", in0, 1, out0, 1, NULL));
  WM_RETURN_IF_ERROR(
      wm_graph_add_node(g, "FancyOp", "", "fancy", in1, 1, out1, 1, NULL));
  WM_RETURN_IF_ERROR(
      wm_graph_add_node(g, "Relu", "", "relu_out", in2, 1, out2, 1, NULL));
  return wm_graph_add_output(g, "y", NULL, NULL);
}

WM_TEST(unknown_op_is_listed_as_unmapped_and_in_a_note) {
  wm_graph_t *g = NULL;
  wm_status_t s = fancy_graph(&g);
  if (s) {
    wm_graph_destroy(g);
  }
  WM_CHECK_OK(s);
  wm_map_t *m;
  WM_CHECK_OK(map_on_ref(g, "fancy", &m));
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_map_to_text(m, false, &b);
  const char *t = wm_strbuf_str(&b);
  char *un = section(t, "Unmapped nodes");
  bool listed = un && has_row(un, "fancy") && strstr(un, "FancyOp");
  bool noted = false;
  for (const char *p = t; (p = strstr(p, "note: ")); p++) {
    const char *end = strstr(p, "\n\n");
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char *line = wm_strndup(p, n);
    noted =
        noted || (line && (strstr(line, "FancyOp") ||
                           strstr(line, "\"fancy\"") || strstr(line, "fancy")));
    free(line);
  }
  bool fits = bad_line(t) == 0;
  if (!listed || !noted) {
    fprintf(stderr, "%s", t);
  }
  free(un);
  wm_strbuf_deinit(&b);
  wm_map_destroy(m);
  WM_CHECK(listed);
  WM_CHECK(noted);
  WM_CHECK(fits);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(text_fits_100_columns_and_colour_is_only_escape_codes),
      WM_CASE(text_shows_every_section_of_a_planned_map),
      WM_CASE(markdown_tables_are_consistent_and_escaped),
      WM_CASE(csv_quotes_fields_and_dot_escapes_labels),
      WM_CASE(dot_marks_only_the_path_edges),
      WM_CASE(many_backends_drop_cover_columns_and_still_fit),
      WM_CASE(rendering_survives_each_failed_allocation),
      WM_CASE(mlp_reports_fit_and_list_every_op_type),
      WM_CASE(resnet18_reports_exact_params_and_fit),
      WM_CASE(unknown_op_is_listed_as_unmapped_and_in_a_note),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
