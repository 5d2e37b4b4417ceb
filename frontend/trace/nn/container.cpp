#include "frontend/trace/nn/container.h"

namespace kfuse::nn {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) { push_back(std::to_string(size()), std::move(module)); }

void Sequential::push_back(std::string name, std::shared_ptr<Module> module) {
  registerModule(std::move(name), std::move(module));
}

Tensor Sequential::forward(const Tensor& x) {
  auto s = scope(x);
  if (!problem().empty()) return fail(x, problem());
  Tensor y = x;
  for (const auto& [name, child] : children()) y = child->forward(y);
  return y;
}

}  // namespace kfuse::nn
