#include <iostream>

#include "tools/kfuse/commands.h"

namespace kfuse::cli {

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
