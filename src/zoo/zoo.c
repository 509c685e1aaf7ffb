// The zoo's model table, spec parsing ("bert-base:layers=2,seq=64") and
// the framework-style parameter count.
#include "wmap/zoo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo/build.h"

static const wm_zoo_key_t batch_only[] = {
    {"batch", 1, 1, 1024, "batch size"},
};
static const wm_zoo_key_t mlp_keys[] = {
    {"batch", 1, 1, 1 << 20, "batch size"},
    {"in", 784, 1, 1 << 16, "input features"},
    {"hidden", 512, 1, 1 << 14, "hidden width"},
    {"layers", 2, 0, 64, "hidden Gemm+Relu layers"},
    {"out", 10, 1, 1 << 16, "output features"},
};
static const wm_zoo_key_t mlp_train_keys[] = {
    {"batch", 8, 1, 1 << 20, "batch size (split over data-parallel ranks)"},
    {"in", 784, 1, 1 << 16, "input features"},
    {"hidden", 512, 1, 1 << 14, "hidden width"},
    {"layers", 2, 0, 64, "hidden Gemm+Relu layers"},
    {"out", 10, 1, 1 << 16, "output features"},
    {"lr", 50, 1, 1000000, "learning rate in thousandths"},
};
static const wm_zoo_key_t bert_keys[] = {
    {"layers", 12, 1, 48, "encoder layers"},
    {"seq", 128, 1, 512, "sequence length"},
    {"batch", 1, 1, 1024, "batch size"},
};
static const wm_zoo_key_t gpt2_keys[] = {
    {"layers", 12, 1, 48, "decoder layers"},
    {"seq", 128, 1, 1024, "sequence length"},
    {"batch", 1, 1, 1024, "batch size"},
};

#define KEYS(k) sizeof(k) / sizeof(k[0]), k

typedef struct zoo_entry {
  wm_zoo_model_t model;  // public description
  void (*build)(wm_zoo_builder_t *b, const wm_zoo_args_t *a);
} zoo_entry_t;

static const zoo_entry_t entries[] = {
    {{"resnet18",
      "ResNet-18 v1.5: image [batch,3,224,224] -> logits [batch,1000]",
      KEYS(batch_only)},
     wm_zoo_resnet18},
    {{"resnet50",
      "ResNet-50 v1.5: image [batch,3,224,224] -> logits [batch,1000]",
      KEYS(batch_only)},
     wm_zoo_resnet50},
    {{"mobilenetv2",
      "MobileNetV2 1.0: image [batch,3,224,224] -> logits [batch,1000]",
      KEYS(batch_only)},
     wm_zoo_mobilenetv2},
    {{"bert-base",
      "BERT-base + pooler: input_ids, attention_mask, token_type_ids "
      "int64 [batch,seq]",
      KEYS(bert_keys)},
     wm_zoo_bert},
    {{"gpt2", "GPT-2 small, tied LM head: input_ids int64 [batch,seq]",
      KEYS(gpt2_keys)},
     wm_zoo_gpt2},
    {{"mlp", "Gemm+Relu layers: input [batch,in] -> logits [batch,out]",
      KEYS(mlp_keys)},
     wm_zoo_mlp},
    {{"mlp-train",
      "one SGD step of mlp on a mean squared error: input [batch,in], "
      "target [batch,out] -> loss, NAME.next per parameter",
      KEYS(mlp_train_keys)},
     wm_zoo_mlp_train},
};

#define N_ENTRIES (sizeof(entries) / sizeof(entries[0]))

size_t wm_zoo_count(void) {
  return N_ENTRIES;
}

const wm_zoo_model_t *wm_zoo_at(size_t i) {
  return i < N_ENTRIES ? &entries[i].model : NULL;
}

static const zoo_entry_t *find_entry(const char *name, size_t len) {
  for (size_t i = 0; i < N_ENTRIES; i++) {
    if (strlen(entries[i].model.name) == len &&
        strncmp(entries[i].model.name, name, len) == 0) {
      return &entries[i];
    }
  }
  return NULL;
}

const wm_zoo_model_t *wm_zoo_find(const char *name) {
  const zoo_entry_t *e = find_entry(name, strlen(name));
  return e ? &e->model : NULL;
}

// Appends "a, b, c" of the model names or of |m|'s keys to |buf|.
static void list_names(wm_strbuf_t *buf, const wm_zoo_model_t *m) {
  size_t n = m ? m->key_count : N_ENTRIES;
  for (size_t i = 0; i < n; i++) {
    wm_strbuf_printf(buf, "%s%s", i ? ", " : "",
                     m ? m->keys[i].name : entries[i].model.name);
  }
  if (n == 0) {
    wm_strbuf_printf(buf, "none");
  }
}

static wm_status_t spec_error(const char *spec, const wm_zoo_model_t *m,
                              const char *fmt, const char *what,
                              size_t what_len) {
  wm_strbuf_t buf;
  wm_strbuf_init(&buf);
  list_names(&buf, m);
  wm_status_t s = WM_ERROR(
      INVALID_ARGUMENT, "zoo spec \"%s\": %s \"%.*s\"; %s: %s", spec, fmt,
      (int)what_len, what, m ? "keys" : "models", wm_strbuf_str(&buf));
  wm_strbuf_deinit(&buf);
  return s;
}

// Parses "key=value,..." after the model name into |args|.
static wm_status_t parse_args(const char *spec, const char *p,
                              const wm_zoo_model_t *m, wm_zoo_args_t *args) {
  for (size_t i = 0; i < m->key_count; i++) {
    args->v[i] = m->keys[i].def;
  }
  while (*p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    if (!eq) {
      return spec_error(spec, m, "want key=value, got", p, len);
    }
    size_t klen = (size_t)(eq - p);
    size_t k = 0;
    while (k < m->key_count && (strlen(m->keys[k].name) != klen ||
                                strncmp(m->keys[k].name, p, klen) != 0)) {
      k++;
    }
    if (k == m->key_count) {
      return spec_error(spec, m, "unknown key", p, klen);
    }
    const wm_zoo_key_t *key = &m->keys[k];
    const char *vs = eq + 1;
    size_t vlen = len - klen - 1;
    char text[32];
    long long v = 0;
    char *vend = NULL;
    bool ok = vlen > 0 && vlen < sizeof(text);
    if (ok) {
      memcpy(text, vs, vlen);
      text[vlen] = '\0';
      errno = 0;
      v = strtoll(text, &vend, 10);
      ok = !*vend && errno == 0 && v >= key->min && v <= key->max;
    }
    if (!ok) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "zoo spec \"%s\": key \"%s\" wants an integer from "
                      "%lld to %lld, got \"%.*s\"",
                      spec, key->name, (long long)key->min, (long long)key->max,
                      (int)vlen, vs);
    }
    args->v[k] = v;
    p = end ? end + 1 : p + len;
    if (end && !*p) {
      return spec_error(spec, m, "want key=value, got", "", 0);
    }
  }
  return NULL;
}

wm_status_t wm_zoo_build(const char *spec, wm_graph_t **out_graph) {
  *out_graph = NULL;
  if (!spec) {
    spec = "";
  }
  const char *colon = strchr(spec, ':');
  size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
  const zoo_entry_t *e = find_entry(spec, nlen);
  if (!e) {
    return spec_error(spec, NULL, "unknown model", spec, nlen);
  }
  wm_zoo_args_t args;
  memset(&args, 0, sizeof(args));
  WM_RETURN_IF_ERROR(
      parse_args(spec, colon ? colon + 1 : spec + nlen, &e->model, &args));
  wm_zoo_builder_t b = {NULL, NULL};
  WM_RETURN_IF_ERROR(wm_graph_create(e->model.name, NULL, &b.g));
  b.g->ir_version = 8;
  wm_zoo_fail(&b, wm_graph_set_opset(b.g, "", 17));
  if (!b.err) {
    wm_zoo_fail(&b, wm_graph_add_metadata(b.g, "wmap.zoo", spec));
  }
  if (!b.err) {
    e->build(&b, &args);
  }
  if (b.err) {
    wm_graph_destroy(b.g);
    return wm_status_annotate(b.err, "building zoo model \"%s\"", spec);
  }
  *out_graph = b.g;
  return NULL;
}
