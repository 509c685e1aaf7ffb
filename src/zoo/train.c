// Training steps of the zoo, built with the builder API: "mlp-train" is
// one SGD step of the zoo's mlp (Gemm+Relu layers and a Gemm head) on a
// mean squared error: forward, loss, the backward pass written out node by
// node, and the update. The parameters are graph inputs whose defaults are
// the initial weights; each updated parameter is the output NAME.next, so
// a run of several steps feeds NAME.next back into NAME (wmap run
// --steps). The gradients are the values NAME.grad, listed in the graph's
// metadata "wmap.training.gradients" (data parallelism averages them over
// the ranks); the loss is the batch's own mean, so it adapts to a batch
// split over ranks.
#include <math.h>
#include <string.h>

#include "zoo/build.h"

// A parameter: an initializer that is also a graph input (its default).
static const char *param(wm_zoo_builder_t *b, const char *name, int32_t rank,
                         const int64_t *dims, double std) {
  if (std > 0) {
    wm_zoo_random(b, name, rank, dims, std);
  } else {
    wm_zoo_fill(b, name, rank, dims, 0.0);
  }
  wm_zoo_input(b, name, WM_DTYPE_FLOAT, rank, dims);
  return name;
}

// y = x @ w^T + bias (w is [out, in], as the mlp's Gemm has it).
static const char *gemm_t(wm_zoo_builder_t *b, const char *name, const char *x,
                          const char *w, const char *bias) {
  const char *ins[] = {x, w, bias};
  int32_t n = wm_zoo_node(b, "Gemm", name, ins, 3);
  wm_zoo_attr_int(b, n, "transB", 1);
  return name;
}

// The gradients of a Gemm layer's weight and bias from the gradient |dy|
// of its output and its input |x|: dW = dy^T x, db = sum of dy's rows.
static void layer_grads(wm_zoo_builder_t *b, const char *layer, const char *dy,
                        const char *x) {
  const char *ins[] = {dy, x};
  int32_t n =
      wm_zoo_node(b, "Gemm", wm_zoo_name(b, "%s.weight.grad", layer), ins, 2);
  wm_zoo_attr_int(b, n, "transA", 1);
  const char *rin[] = {dy, "train.batch_axis"};
  n = wm_zoo_node(b, "ReduceSum", wm_zoo_name(b, "%s.bias.grad", layer), rin,
                  2);
  wm_zoo_attr_int(b, n, "keepdims", 0);
}

// NAME.next = NAME - lr * NAME.grad.
static void sgd(wm_zoo_builder_t *b, const char *p, int32_t rank,
                const int64_t *dims) {
  const char *step = wm_zoo_binary(b, "Mul", wm_zoo_name(b, "%s.step", p),
                                   wm_zoo_name(b, "%s.grad", p), "train.lr");
  const char *next = wm_zoo_name(b, "%s.next", p);
  wm_zoo_binary(b, "Sub", next, p, step);
  wm_zoo_output(b, next, WM_DTYPE_FLOAT, rank, dims);
}

void wm_zoo_mlp_train(wm_zoo_builder_t *b, const wm_zoo_args_t *a) {
  int64_t batch = a->v[0], in = a->v[1], hidden = a->v[2], layers = a->v[3];
  int64_t out = a->v[4];
  double lr = (double)a->v[5] / 1000.0;
  int64_t xd[] = {batch, in}, td[] = {batch, out};
  wm_zoo_input(b, "input", WM_DTYPE_FLOAT, 2, xd);
  wm_zoo_input(b, "target", WM_DTYPE_FLOAT, 2, td);
  wm_zoo_scalar(b, "train.lr", lr);
  wm_zoo_scalar(b, "train.two", 2.0);
  wm_zoo_scalar(b, "train.zero", 0.0);
  static const int64_t axis0[] = {0};
  wm_zoo_ints(b, "train.batch_axis", 1, axis0);

  // Forward: keep each layer's input (acts) and pre-activation (z).
  const char *acts[65], *z[65], *names[65];
  int64_t width[66];
  int64_t n_layers = layers + 1;  // the hidden ones and the head
  const char *x = "input";
  width[0] = in;
  for (int64_t l = 0; l < n_layers; l++) {
    bool head = l == layers;
    const char *nm = head ? "head" : wm_zoo_name(b, "fc%lld", (long long)l);
    int64_t w_out = head ? out : hidden;
    width[l + 1] = w_out;
    int64_t wd[] = {w_out, width[l]};
    const char *w = param(
        b, wm_zoo_name(b, "%s.weight", nm), 2, wd,
        head ? 1.0 / sqrt((double)width[l]) : sqrt(2.0 / (double)width[l]));
    const char *bias = param(b, wm_zoo_name(b, "%s.bias", nm), 1, &w_out, 0);
    acts[l] = x;
    names[l] = nm;
    z[l] = gemm_t(b, head ? "logits" : nm, x, w, bias);
    x = head ? z[l]
             : wm_zoo_unary(b, "Relu", wm_zoo_name(b, "relu%lld", (long long)l),
                            z[l]);
  }

  // Loss: the mean of (logits - target)^2 over the batch at hand.
  const char *diff = wm_zoo_binary(b, "Sub", "train.diff", "logits", "target");
  const char *sq = wm_zoo_binary(b, "Mul", "train.squared", diff, diff);
  const char *lin[] = {sq};
  int32_t n = wm_zoo_node(b, "ReduceMean", "loss", lin, 1);
  wm_zoo_attr_int(b, n, "keepdims", 0);
  wm_zoo_output(b, "loss", WM_DTYPE_FLOAT, 0, NULL);

  // Backward: d loss / d logits = 2 (logits - target) / its element count.
  const char *sin[] = {diff};
  wm_zoo_node(b, "Size", "train.count", sin, 1);
  const char *cin[] = {"train.count"};
  n = wm_zoo_node(b, "Cast", "train.count_f", cin, 1);
  wm_zoo_attr_int(b, n, "to", WM_DTYPE_FLOAT);
  const char *scale =
      wm_zoo_binary(b, "Div", "train.scale", "train.two", "train.count_f");
  const char *dy = wm_zoo_binary(b, "Mul", "logits.grad", diff, scale);
  wm_strbuf_t grads;
  wm_strbuf_init(&grads);
  for (int64_t l = n_layers - 1; l >= 0; l--) {
    bool head = l == layers;
    if (!head) {  // through the Relu: where its input was positive
      const char *pos =
          wm_zoo_binary(b, "Greater", wm_zoo_name(b, "%s.positive", names[l]),
                        z[l], "train.zero");
      const char *win[] = {pos, dy, "train.zero"};
      const char *dz = wm_zoo_name(b, "%s.out.grad", names[l]);
      wm_zoo_node(b, "Where", dz, win, 3);
      dy = dz;
    }
    layer_grads(b, names[l], dy, acts[l]);
    if (l > 0) {  // the gradient of this layer's input
      dy = wm_zoo_binary(b, "MatMul", wm_zoo_name(b, "%s.in.grad", names[l]),
                         dy, wm_zoo_name(b, "%s.weight", names[l]));
    }
  }
  // Updates, and the gradients in parameter order for the metadata.
  for (int64_t l = 0; l < n_layers; l++) {
    int64_t wd[] = {width[l + 1], width[l]};
    sgd(b, wm_zoo_name(b, "%s.weight", names[l]), 2, wd);
    sgd(b, wm_zoo_name(b, "%s.bias", names[l]), 1, &width[l + 1]);
    wm_strbuf_printf(&grads, "%s%s.weight.grad,%s.bias.grad", l ? "," : "",
                     names[l], names[l]);
  }
  if (!b->err) {
    wm_zoo_fail(b, grads.failed
                       ? WM_ERROR(RESOURCE_EXHAUSTED, "out of memory")
                       : wm_graph_add_metadata(b->g, "wmap.training.gradients",
                                               wm_strbuf_str(&grads)));
  }
  wm_strbuf_deinit(&grads);
}
