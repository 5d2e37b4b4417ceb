// Typed access to an ONNX node's attributes. Every read is checked against
// the attribute's declared type, and every attribute read is recorded: after
// lowering, an attribute the lowering never looked at makes the node
// unsupported, so that kfuse never silently ignores part of a node's meaning.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace onnx {
class NodeProto;
class AttributeProto;
}  // namespace onnx

namespace kfuse::onnx_import {

class NodeAttributes {
 public:
  explicit NodeAttributes(const onnx::NodeProto& node) : node_(node) {}

  bool has(const std::string& name) const { return find(name) != nullptr; }

  // The attribute's value, or `def` when absent; an Error when it is absent
  // and has no default, or has another type.
  Expected<int64_t> getInt(const std::string& name, std::optional<int64_t> def = std::nullopt) const;
  Expected<double> getFloat(const std::string& name, std::optional<double> def = std::nullopt) const;
  Expected<std::string> getString(const std::string& name, std::optional<std::string> def = std::nullopt) const;
  Expected<std::vector<int64_t>> getInts(const std::string& name,
                                         std::optional<std::vector<int64_t>> def = std::nullopt) const;
  Expected<std::vector<double>> getFloats(const std::string& name,
                                          std::optional<std::vector<double>> def = std::nullopt) const;
  Expected<Tensor> getTensor(const std::string& name) const;

  // Marks an attribute as understood without reading it (one that does not
  // change an inference-time result, like BatchNormalization's momentum).
  void ignore(const std::string& name) const { read_.insert(name); }
  // Attributes present on the node that no lowering code read or ignored.
  std::vector<std::string> unread() const;

 private:
  const onnx::AttributeProto* find(const std::string& name) const;
  Expected<const onnx::AttributeProto*> typed(const std::string& name, int type) const;

  const onnx::NodeProto& node_;
  mutable std::set<std::string> read_;
};

}  // namespace kfuse::onnx_import
