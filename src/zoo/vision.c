// Convolutional and dense models of the zoo: ResNet-18/50 (v1.5, as in
// torchvision), MobileNetV2 and a small MLP. Weights follow the
// frameworks' layouts ([out, in/group, k, k] for Conv, [out, in] for Gemm
// with transB) so parameter counts match the published ones.
#include <math.h>

#include "zoo/build.h"

// Conv without bias, He-scaled weights NAME.weight.
static const char *conv(wm_zoo_builder_t *b, const char *name, const char *x,
                        int64_t cin, int64_t cout, int64_t k, int64_t stride,
                        int64_t group) {
  const char *w = wm_zoo_name(b, "%s.weight", name);
  int64_t wd[] = {cout, cin / group, k, k};
  wm_zoo_random(b, w, 4, wd, sqrt(2.0 / (double)(cin / group * k * k)));
  const char *in[] = {x, w};
  int32_t n = wm_zoo_node(b, "Conv", name, in, 2);
  int64_t ks[] = {k, k}, st[] = {stride, stride};
  int64_t p = k / 2, pads[] = {p, p, p, p};
  wm_zoo_attr_ints(b, n, "kernel_shape", ks, 2);
  wm_zoo_attr_ints(b, n, "strides", st, 2);
  wm_zoo_attr_ints(b, n, "pads", pads, 4);
  if (group != 1) {
    wm_zoo_attr_int(b, n, "group", group);
  }
  return name;
}

// BatchNormalization (inference form) with its four per-channel tensors.
static const char *bn(wm_zoo_builder_t *b, const char *name, const char *x,
                      int64_t c) {
  const char *scale = wm_zoo_name(b, "%s.weight", name);
  const char *bias = wm_zoo_name(b, "%s.bias", name);
  const char *mean = wm_zoo_name(b, "%s.running_mean", name);
  const char *var = wm_zoo_name(b, "%s.running_var", name);
  wm_zoo_fill(b, scale, 1, &c, 1.0);
  wm_zoo_fill(b, bias, 1, &c, 0.0);
  wm_zoo_uniform(b, mean, 1, &c, -0.1, 0.1);
  wm_zoo_uniform(b, var, 1, &c, 0.5, 1.5);  // positive
  const char *in[] = {x, scale, bias, mean, var};
  int32_t n = wm_zoo_node(b, "BatchNormalization", name, in, 5);
  wm_zoo_attr_float(b, n, "epsilon", 1e-5f);
  return name;
}

static const char *relu(wm_zoo_builder_t *b, const char *name, const char *x) {
  return wm_zoo_unary(b, "Relu", name, x);
}

// ReLU6 as Clip(x, 0, 6) with shared scalar bounds.
static const char *relu6(wm_zoo_builder_t *b, const char *name, const char *x) {
  wm_zoo_scalar(b, "relu6.min", 0.0);
  wm_zoo_scalar(b, "relu6.max", 6.0);
  const char *in[] = {x, "relu6.min", "relu6.max"};
  wm_zoo_node(b, "Clip", name, in, 3);
  return name;
}

// Gemm with NAME.weight [out, in] (transB) and NAME.bias [out]; the
// output value is |y|, or |name| when |y| is NULL.
static const char *gemm(wm_zoo_builder_t *b, const char *name, const char *y,
                        const char *x, int64_t in, int64_t out, double std) {
  const char *w = wm_zoo_name(b, "%s.weight", name);
  const char *bias = wm_zoo_name(b, "%s.bias", name);
  int64_t wd[] = {out, in};
  wm_zoo_random(b, w, 2, wd, std);
  wm_zoo_fill(b, bias, 1, &out, 0.0);
  const char *ins[] = {x, w, bias};
  y = y ? y : name;
  int32_t n = wm_zoo_node_out(b, "Gemm", name, y, ins, 3);
  wm_zoo_attr_int(b, n, "transB", 1);
  return y;
}

// GlobalAveragePool, Flatten and the classifier Gemm: [B,C,H,W] -> logits.
static void head(wm_zoo_builder_t *b, int64_t batch, const char *x, int64_t c,
                 const char *fc) {
  const char *p = wm_zoo_unary(b, "GlobalAveragePool", "avgpool", x);
  const char *in[] = {p};
  int32_t n = wm_zoo_node(b, "Flatten", "flatten", in, 1);
  wm_zoo_attr_int(b, n, "axis", 1);
  gemm(b, fc, "logits", "flatten", c, 1000, 1.0 / sqrt((double)c));
  int64_t dims[] = {batch, 1000};
  wm_zoo_output(b, "logits", WM_DTYPE_FLOAT, 2, dims);
}

static void image_input(wm_zoo_builder_t *b, int64_t batch) {
  int64_t dims[] = {batch, 3, 224, 224};
  wm_zoo_input(b, "input", WM_DTYPE_FLOAT, 4, dims);
}

// conv1, bn1, relu, maxpool: [B,3,224,224] -> [B,64,56,56].
static const char *resnet_stem(wm_zoo_builder_t *b) {
  const char *x = conv(b, "conv1", "input", 3, 64, 7, 2, 1);
  x = relu(b, "relu", bn(b, "bn1", x, 64));
  const char *in[] = {x};
  int32_t n = wm_zoo_node(b, "MaxPool", "maxpool", in, 1);
  int64_t ks[] = {3, 3}, st[] = {2, 2}, pads[] = {1, 1, 1, 1};
  wm_zoo_attr_ints(b, n, "kernel_shape", ks, 2);
  wm_zoo_attr_ints(b, n, "strides", st, 2);
  wm_zoo_attr_ints(b, n, "pads", pads, 4);
  return "maxpool";
}

// One residual block "layerL.I": basic (two 3x3) or bottleneck (1x1, 3x3
// with the stride, 1x1 expanding by 4), with a 1x1 projection when the
// shape changes.
static const char *resnet_block(wm_zoo_builder_t *b, const char *x,
                                const char *p, bool bottleneck, int64_t cin,
                                int64_t width, int64_t stride) {
  int64_t cout = bottleneck ? width * 4 : width;
  const char *y;
  if (bottleneck) {
    y = conv(b, wm_zoo_name(b, "%s.conv1", p), x, cin, width, 1, 1, 1);
    y = bn(b, wm_zoo_name(b, "%s.bn1", p), y, width);
    y = relu(b, wm_zoo_name(b, "%s.relu1", p), y);
    y = conv(b, wm_zoo_name(b, "%s.conv2", p), y, width, width, 3, stride, 1);
    y = bn(b, wm_zoo_name(b, "%s.bn2", p), y, width);
    y = relu(b, wm_zoo_name(b, "%s.relu2", p), y);
    y = conv(b, wm_zoo_name(b, "%s.conv3", p), y, width, cout, 1, 1, 1);
    y = bn(b, wm_zoo_name(b, "%s.bn3", p), y, cout);
  } else {
    y = conv(b, wm_zoo_name(b, "%s.conv1", p), x, cin, width, 3, stride, 1);
    y = bn(b, wm_zoo_name(b, "%s.bn1", p), y, width);
    y = relu(b, wm_zoo_name(b, "%s.relu1", p), y);
    y = conv(b, wm_zoo_name(b, "%s.conv2", p), y, width, width, 3, 1, 1);
    y = bn(b, wm_zoo_name(b, "%s.bn2", p), y, width);
  }
  const char *identity = x;
  if (stride != 1 || cin != cout) {
    identity = conv(b, wm_zoo_name(b, "%s.downsample.0", p), x, cin, cout, 1,
                    stride, 1);
    identity = bn(b, wm_zoo_name(b, "%s.downsample.1", p), identity, cout);
  }
  y = wm_zoo_binary(b, "Add", wm_zoo_name(b, "%s.add", p), y, identity);
  return relu(b, wm_zoo_name(b, "%s.relu", p), y);
}

static void resnet(wm_zoo_builder_t *b, int64_t batch, const int *blocks,
                   bool bottleneck) {
  image_input(b, batch);
  const char *x = resnet_stem(b);
  int64_t cin = 64;
  for (int l = 0; l < 4; l++) {
    int64_t width = 64 << l;
    for (int i = 0; i < blocks[l]; i++) {
      int64_t stride = (l > 0 && i == 0) ? 2 : 1;
      const char *p = wm_zoo_name(b, "layer%d.%d", l + 1, i);
      x = resnet_block(b, x, p, bottleneck, cin, width, stride);
      cin = bottleneck ? width * 4 : width;
    }
  }
  head(b, batch, x, cin, "fc");
}

void wm_zoo_resnet18(wm_zoo_builder_t *b, const wm_zoo_args_t *a) {
  static const int blocks[] = {2, 2, 2, 2};
  resnet(b, a->v[0], blocks, false);
}

void wm_zoo_resnet50(wm_zoo_builder_t *b, const wm_zoo_args_t *a) {
  static const int blocks[] = {3, 4, 6, 3};
  resnet(b, a->v[0], blocks, true);
}

void wm_zoo_mobilenetv2(wm_zoo_builder_t *b, const wm_zoo_args_t *a) {
  // Expansion t, output channels c, repeats n, first stride s.
  static const int64_t cfg[7][4] = {
      {1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
      {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  image_input(b, a->v[0]);
  const char *x = conv(b, "features.0.conv", "input", 3, 32, 3, 2, 1);
  x = relu6(b, "features.0.relu6", bn(b, "features.0.bn", x, 32));
  int64_t cin = 32;
  int f = 1;
  for (int s = 0; s < 7; s++) {
    for (int64_t i = 0; i < cfg[s][2]; i++, f++) {
      int64_t cout = cfg[s][1], stride = i == 0 ? cfg[s][3] : 1;
      int64_t hidden = cin * cfg[s][0];
      const char *y = x;
      if (cfg[s][0] != 1) {
        y = conv(b, wm_zoo_name(b, "features.%d.expand", f), y, cin, hidden, 1,
                 1, 1);
        y = bn(b, wm_zoo_name(b, "features.%d.expand_bn", f), y, hidden);
        y = relu6(b, wm_zoo_name(b, "features.%d.expand_relu6", f), y);
      }
      y = conv(b, wm_zoo_name(b, "features.%d.depthwise", f), y, hidden, hidden,
               3, stride, hidden);
      y = bn(b, wm_zoo_name(b, "features.%d.depthwise_bn", f), y, hidden);
      y = relu6(b, wm_zoo_name(b, "features.%d.depthwise_relu6", f), y);
      y = conv(b, wm_zoo_name(b, "features.%d.project", f), y, hidden, cout, 1,
               1, 1);
      y = bn(b, wm_zoo_name(b, "features.%d.project_bn", f), y, cout);
      if (stride == 1 && cin == cout) {
        y = wm_zoo_binary(b, "Add", wm_zoo_name(b, "features.%d.add", f), y, x);
      }
      x = y;
      cin = cout;
    }
  }
  x = conv(b, "features.18.conv", x, cin, 1280, 1, 1, 1);
  x = relu6(b, "features.18.relu6", bn(b, "features.18.bn", x, 1280));
  head(b, a->v[0], x, 1280, "classifier.1");
}

void wm_zoo_mlp(wm_zoo_builder_t *b, const wm_zoo_args_t *a) {
  int64_t batch = a->v[0], in = a->v[1], hidden = a->v[2], layers = a->v[3];
  int64_t out = a->v[4];
  int64_t dims[] = {batch, in};
  wm_zoo_input(b, "input", WM_DTYPE_FLOAT, 2, dims);
  const char *x = "input";
  int64_t width = in;
  for (int64_t l = 0; l < layers; l++) {
    x = gemm(b, wm_zoo_name(b, "fc%lld", (long long)l), NULL, x, width, hidden,
             sqrt(2.0 / (double)width));
    x = relu(b, wm_zoo_name(b, "relu%lld", (long long)l), x);
    width = hidden;
  }
  gemm(b, "head", "logits", x, width, out, 1.0 / sqrt((double)width));
  int64_t out_dims[] = {batch, out};
  wm_zoo_output(b, "logits", WM_DTYPE_FLOAT, 2, out_dims);
}
