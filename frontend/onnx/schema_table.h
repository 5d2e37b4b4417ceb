// ONNX's op schemas as kfuse reads them: every ai.onnx schema up to
// kMaxOpset (op type, since_version, input and output counts, attributes),
// generated from the onnx package that defines them
// (schemas/gen_schema_table.py). Nodes resolve to their schema version and
// are checked against it here, not through the ONNX library on the machine,
// so what kfuse reads does not depend on that library's version (Debian's
// libonnx 1.12 knows opsets up to 17).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ir/support/expected.h"

namespace onnx {
class NodeProto;
}

namespace kfuse::onnx_import {

struct AttributeSchema {
  std::string_view name;
  int type = 0;  // onnx::AttributeProto::AttributeType
  bool required = false;
};

struct OpSchemaInfo {
  std::string_view opType;
  int sinceVersion = 0;
  bool deprecated = false;
  int minInputs = 0, maxInputs = 0, minOutputs = 0, maxOutputs = 0;
  std::vector<AttributeSchema> attributes;
};

// The schema of ai.onnx op `opType` in effect at `opset` (the newest
// since_version at or below it), or null when ONNX defines no such op then.
const OpSchemaInfo* findSchema(std::string_view opType, int64_t opset);

// The opset that first defines `opType`; 0 when ONNX defines no such op.
int firstVersion(std::string_view opType);

// Checks a node against its schema, as ONNX's checker does: input and output
// counts in range, every attribute defined by the schema and of its type,
// every required attribute present. The message names the attribute or the
// counts; callers prefix the node.
Status checkNode(const onnx::NodeProto& node, const OpSchemaInfo& schema);

}  // namespace kfuse::onnx_import
