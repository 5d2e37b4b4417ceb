#include "tools/kfuse/model_loader.h"

#include "tools/kfuse/commands.h"

namespace kfuse::cli {

Expected<std::unique_ptr<Module>> loadModel(const std::string& path, const ModelOptions&) {
  return loadModuleArg(path);
}

}  // namespace kfuse::cli
