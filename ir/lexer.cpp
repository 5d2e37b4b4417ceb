#include "ir/lexer.h"

#include <cctype>

#include "ir/support/strings.h"

namespace kfuse {

std::string_view tokName(Tok t) {
  switch (t) {
    case Tok::Eof: return "end of file";
    case Tok::Ident: return "identifier";
    case Tok::ValueName: return "value name (%name)";
    case Tok::ParamName: return "parameter name (@name)";
    case Tok::BlockName: return "block label (^name)";
    case Tok::Int: return "integer";
    case Tok::Float: return "number";
    case Tok::String: return "string";
    case Tok::LBrace: return "'{'";
    case Tok::RBrace: return "'}'";
    case Tok::LParen: return "'('";
    case Tok::RParen: return "')'";
    case Tok::LBracket: return "'['";
    case Tok::RBracket: return "']'";
    case Tok::Less: return "'<'";
    case Tok::Greater: return "'>'";
    case Tok::Comma: return "','";
    case Tok::Colon: return "':'";
    case Tok::Equal: return "'='";
    case Tok::Hash: return "'#'";
    case Tok::Arrow: return "'->'";
  }
  return "?";
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::Eof: return "end of file";
    case Tok::Ident:
    case Tok::Int:
    case Tok::Float: return str("'", t.text, "'");
    case Tok::ValueName: return str("'%", t.text, "'");
    case Tok::ParamName: return str("'@", t.text, "'");
    case Tok::BlockName: return str("'^", t.text, "'");
    case Tok::String: return str("string ", quoteString(t.text));
    default: return std::string(tokName(t.kind));
  }
}

void Lexer::advance() {
  if (pos_ >= text_.size()) return;
  if (text_[pos_] == '\n') {
    ++line_;
    col_ = 1;
  } else {
    ++col_;
  }
  ++pos_;
}

void Lexer::skipSpaceAndComments() {
  for (;;) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance();
    } else if (c == '/' && peek(1) == '/') {
      while (peek() != '\n' && peek() != '\0') advance();
    } else {
      return;
    }
  }
}

Error Lexer::errorAt(int line, int col, const std::string& msg) const {
  return Error(str(file_, ":", line, ":", col, ": error: ", msg));
}

namespace {
bool identStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$'; }
bool sigilChar(char c) { return identChar(c) || c == '-'; }
}  // namespace

Expected<std::string> Lexer::lexQuoted(int line, int col) {
  advance();  // opening quote
  std::string out;
  for (;;) {
    char c = peek();
    if (c == '\0' && pos_ >= text_.size()) return errorAt(line, col, "unterminated string");
    if (c == '\n') return errorAt(line, col, "unterminated string (newline before the closing quote)");
    advance();
    if (c == '"') return out;
    if (c == '\\') {
      char e = peek();
      advance();
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        default: return errorAt(line_, col_ - 1, str("unknown escape '\\", std::string(1, e), "' in string"));
      }
    } else {
      out += c;
    }
  }
}

Expected<Token> Lexer::lexNumber(Token t) {
  size_t start = pos_;
  if (peek() == '-' || peek() == '+') advance();
  if (identStart(peek())) {  // -inf
    std::string word;
    while (identChar(peek())) {
      word += peek();
      advance();
    }
    if (word != "inf") return errorAt(t.line, t.col, str("expected a number after '-', got '", word, "'"));
    t.kind = Tok::Float;
    t.text = std::string(text_.substr(start, pos_ - start));
    return t;
  }
  bool isFloatTok = false;
  while (std::isdigit(static_cast<unsigned char>(peek()))) advance();
  if (peek() == '.') {
    isFloatTok = true;
    advance();
    while (std::isdigit(static_cast<unsigned char>(peek()))) advance();
  }
  if (peek() == 'e' || peek() == 'E') {
    isFloatTok = true;
    advance();
    if (peek() == '-' || peek() == '+') advance();
    if (!std::isdigit(static_cast<unsigned char>(peek()))) return errorAt(line_, col_, "malformed exponent in number");
    while (std::isdigit(static_cast<unsigned char>(peek()))) advance();
  }
  t.text = std::string(text_.substr(start, pos_ - start));
  if (t.text == "-" || t.text == "+") return errorAt(t.line, t.col, "expected a number after the sign");
  t.kind = isFloatTok ? Tok::Float : Tok::Int;
  return t;
}

Expected<Token> Lexer::next() {
  skipSpaceAndComments();
  Token t;
  t.line = line_;
  t.col = col_;
  char c = peek();
  if (pos_ >= text_.size()) return t;  // Eof
  auto single = [&](Tok k) {
    advance();
    t.kind = k;
    return t;
  };
  switch (c) {
    case '{': return single(Tok::LBrace);
    case '}': return single(Tok::RBrace);
    case '(': return single(Tok::LParen);
    case ')': return single(Tok::RParen);
    case '[': return single(Tok::LBracket);
    case ']': return single(Tok::RBracket);
    case '<': return single(Tok::Less);
    case '>': return single(Tok::Greater);
    case ',': return single(Tok::Comma);
    case ':': return single(Tok::Colon);
    case '=': return single(Tok::Equal);
    case '#': return single(Tok::Hash);
    default: break;
  }
  if (c == '-' && peek(1) == '>') {
    advance();
    advance();
    t.kind = Tok::Arrow;
    return t;
  }
  if (c == '"') {
    KF_ASSIGN_OR_RETURN(t.text, lexQuoted(t.line, t.col));
    t.kind = Tok::String;
    return t;
  }
  if (c == '%' || c == '@' || c == '^') {
    advance();
    t.kind = c == '%' ? Tok::ValueName : c == '@' ? Tok::ParamName : Tok::BlockName;
    if (peek() == '"') {
      KF_ASSIGN_OR_RETURN(t.text, lexQuoted(line_, col_));
    } else {
      while (sigilChar(peek())) {
        t.text += peek();
        advance();
      }
    }
    if (t.text.empty()) return errorAt(t.line, t.col, str("expected a name after '", std::string(1, c), "'"));
    return t;
  }
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') return lexNumber(t);
  if (identStart(c)) {
    while (identChar(peek())) {
      t.text += peek();
      advance();
    }
    t.kind = Tok::Ident;
    return t;
  }
  std::string shown = std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : str("\\x", std::hex, +static_cast<unsigned char>(c));
  return errorAt(t.line, t.col, str("unexpected character '", shown, "'"));
}

}  // namespace kfuse
