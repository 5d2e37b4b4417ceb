// Tokens of the textual IR.
#pragma once

#include <string>
#include <string_view>

#include "ir/support/expected.h"

namespace kfuse {

enum class Tok : uint8_t {
  Eof, Ident, ValueName, ParamName, BlockName, Int, Float, String,
  LBrace, RBrace, LParen, RParen, LBracket, RBracket, Less, Greater, Comma, Colon, Equal, Hash, Arrow,
};

struct Token {
  Tok kind = Tok::Eof;
  std::string text;  // identifier / name (unquoted) / string contents / number spelling
  int line = 1;
  int col = 1;
};

std::string_view tokName(Tok t);  // for messages: "identifier", "'{'", "end of file"
std::string describe(const Token& t);  // "'foo'", "end of file", "string \"x\""

class Lexer {
 public:
  Lexer(std::string_view text, std::string filename) : text_(text), file_(std::move(filename)) {}
  Expected<Token> next();
  const std::string& filename() const { return file_; }

 private:
  char peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  void advance();
  void skipSpaceAndComments();
  Error errorAt(int line, int col, const std::string& msg) const;
  Expected<std::string> lexQuoted(int line, int col);
  Expected<Token> lexNumber(Token t);

  std::string_view text_;
  std::string file_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace kfuse
