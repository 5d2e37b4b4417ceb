// Sequential, as torch.nn.Sequential: children named "0", "1", ... (or by
// the names given), applied in order.
#pragma once

#include <initializer_list>

#include "frontend/trace/nn/module.h"

namespace kfuse::nn {

class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);

  // Appends a module named by its position.
  void push_back(std::shared_ptr<Module> module);
  // Appends a module under a name of its own.
  void push_back(std::string name, std::shared_ptr<Module> module);

  size_t size() const { return children().size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return children()[i].second; }

  Tensor forward(const Tensor& x) override;
};

}  // namespace kfuse::nn
