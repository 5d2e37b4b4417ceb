// A small writer for generated CUDA C: indented lines, braces, and fresh
// variable names. The emitters build readable source with it; nothing here
// knows about kernels.
#pragma once

#include <string>
#include <string_view>

#include "ir/support/strings.h"

namespace kfuse::cuda {

class CodeWriter {
 public:
  // One line at the current indentation.
  template <typename... Args>
  void line(const Args&... parts) {
    text_.append(static_cast<size_t>(indent_) * 2, ' ');
    text_ += str(parts...);
    text_ += '\n';
  }
  void blank() { text_ += '\n'; }
  // "head {" and one more level of indentation; close() ends it.
  template <typename... Args>
  void open(const Args&... head) {
    line(head..., " {");
    ++indent_;
  }
  void close(std::string_view tail = "}") {
    --indent_;
    line(tail);
  }
  // Verbatim text (already formatted, e.g. the prelude).
  void raw(std::string_view text) { text_ += text; }

  // A name no other fresh() call of this writer returned: "v12".
  std::string fresh(std::string_view stem) { return str(stem, counter_++); }

  const std::string& text() const { return text_; }
  int indent() const { return indent_; }

 private:
  std::string text_;
  int indent_ = 0;
  int counter_ = 0;
};

// Closes the block it opened when it goes out of scope.
class Block {
 public:
  template <typename... Args>
  explicit Block(CodeWriter& w, const Args&... head) : w_(w) {
    w_.open(head...);
  }
  ~Block() { w_.close(); }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

 private:
  CodeWriter& w_;
};

}  // namespace kfuse::cuda
