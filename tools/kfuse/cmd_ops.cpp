// kfuse ops: the op registry as a table (name, arity, fusion class, attributes).
#include <iostream>

#include "ir/op_registry.h"
#include "ir/support/strings.h"
#include "tools/kfuse/commands.h"

namespace kfuse::cli {

Action addOpsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List the ops kfuse knows, with their attributes and fusion class");
  auto markdown = std::make_shared<bool>(false);
  cmd->add_flag("--markdown", *markdown, "Print a Markdown table (docs/ops.md is generated this way)");
  return [markdown] {
    for (const OpDef* op : OpRegistry::global().all()) {
      std::vector<std::string> attrs;
      for (const AttrSpec& s : op->attrs)
        attrs.push_back(s.defaultValue ? str(s.name, "=", formatAttribute(*s.defaultValue)) : str(s.name, " (required)"));
      std::string arity = op->maxInputs < 0 ? str(op->minInputs, "+")
                          : op->minInputs == op->maxInputs ? str(op->minInputs)
                                                           : str(op->minInputs, "-", op->maxInputs);
      if (*markdown)
        std::cout << "| `" << op->name << "` | " << arity << " | " << fusionClassName(op->fusion) << " | "
                  << join(attrs) << " | " << op->summary << " |\n";
      else
        std::cout << op->name << "  [" << arity << " operands, " << fusionClassName(op->fusion) << "]  "
                  << join(attrs) << "\n    " << op->summary << "\n";
    }
    return 0;
  };
}

}  // namespace kfuse::cli
