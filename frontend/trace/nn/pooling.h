// MaxPool2d, AvgPool2d and AdaptiveAvgPool2d, as their torch.nn namesakes
// (NCHW input; an nhwc-tagged input works too).
#pragma once

#include <optional>

#include "frontend/trace/nn/module.h"

namespace kfuse::nn {

struct MaxPool2dOptions {
  std::optional<Size2> stride;  // default: the kernel size
  Size2 padding = 0;            // symmetric; padded positions never win
  Size2 dilation = 1;
  bool ceilMode = false;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Size2 kernel, MaxPool2dOptions options = {});
  Tensor forward(const Tensor& x) override;

  const Size2 kernel;
  const MaxPool2dOptions options;
};

struct AvgPool2dOptions {
  std::optional<Size2> stride;  // default: the kernel size
  Size2 padding = 0;            // symmetric
  bool ceilMode = false;
  bool countIncludePad = true;  // torch's default (the op's default is false)
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Size2 kernel, AvgPool2dOptions options = {});
  Tensor forward(const Tensor& x) override;

  const Size2 kernel;
  const AvgPool2dOptions options;
};

// Averages each image down to outputSize. Size 1 is global average pooling;
// other sizes must divide the input's height and width (equal windows:
// torch's uneven windows for other sizes are not supported and give an error).
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Size2 outputSize);
  Tensor forward(const Tensor& x) override;

  const Size2 outputSize;
};

}  // namespace kfuse::nn
