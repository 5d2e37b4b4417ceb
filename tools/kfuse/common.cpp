#include <iostream>
#include <sstream>

#include "ir/parser.h"

#include "tools/kfuse/commands.h"

namespace kfuse::cli {

Expected<std::unique_ptr<Module>> loadModuleArg(const std::string& path) {
  if (path != "-") return parseModuleFile(path);
  std::ostringstream text;
  text << std::cin.rdbuf();
  return parseModule(text.str(), "<stdin>");
}

int reportError(const std::string& command, const Error& e) {
  const std::string& msg = e.message();
  // Messages from the parser already read "file:line:col: error: ...".
  if (msg.find(": error: ") != std::string::npos)
    std::cerr << msg << "\n";
  else
    std::cerr << "kfuse " << command << ": error: " << msg << "\n";
  return 1;
}

}  // namespace kfuse::cli
