#include "ir/parser.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "ir/builder.h"
#include "ir/lexer.h"
#include "ir/support/file_io.h"
#include "ir/support/strings.h"
#include "ir/value_names.h"
#include "ir/verifier.h"
#include "ir/weights.h"

namespace kfuse {
namespace {

// Edit distance counting an adjacent transposition as one edit, so that a
// typo like "rleu" suggests "relu".
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

class Parser {
 public:
  Parser(std::string_view text, std::string filename) : lex_(text, std::move(filename)) {}

  Expected<std::unique_ptr<Module>> parse() {
    KF_RETURN_IF_ERROR(advance());
    KF_RETURN_IF_ERROR(expectKeyword("module"));
    KF_ASSIGN_OR_RETURN(std::string name, expectName(Tok::ParamName, "module name (@name)"));
    module_ = std::make_unique<Module>(name);
    KF_RETURN_IF_ERROR(expect(Tok::LBrace, "after the module name"));
    while (tok_.kind != Tok::RBrace) {
      if (tok_.kind == Tok::Ident && tok_.text == "weights") {
        KF_RETURN_IF_ERROR(parseWeightsDecl());
      } else if (tok_.kind == Tok::Ident && (tok_.text == "param" || tok_.text == "buffer")) {
        KF_RETURN_IF_ERROR(parseParam());
      } else if (tok_.kind == Tok::Ident && tok_.text == "func") {
        KF_RETURN_IF_ERROR(parseFunc());
      } else {
        return err(str("expected 'weights', 'param', 'buffer', 'func' or '}' in module, got ", describe(tok_)));
      }
    }
    KF_RETURN_IF_ERROR(advance());
    if (tok_.kind != Tok::Eof) return err(str("unexpected ", describe(tok_), " after the end of the module"));
    return std::move(module_);
  }

 private:
  // ------------------------------------------------------------ tokens
  Status advance() {
    auto t = lex_.next();
    if (!t) return t.error();
    tok_ = std::move(*t);
    return Status::ok();
  }
  Error errAt(const Token& t, const std::string& msg) const {
    return Error(str(lex_.filename(), ":", t.line, ":", t.col, ": error: ", msg));
  }
  Error err(const std::string& msg) const { return errAt(tok_, msg); }
  Status expect(Tok k, const std::string& where) {
    if (tok_.kind != k) return err(str("expected ", tokName(k), " ", where, ", got ", describe(tok_)));
    return advance();
  }
  Status expectKeyword(const std::string& kw) {
    if (tok_.kind != Tok::Ident || tok_.text != kw) return err(str("expected '", kw, "', got ", describe(tok_)));
    return advance();
  }
  Expected<std::string> expectName(Tok k, const std::string& what) {
    if (tok_.kind != k) return err(str("expected ", what, ", got ", describe(tok_)));
    std::string s = tok_.text;
    KF_RETURN_IF_ERROR(advance());
    return s;
  }

  // ------------------------------------------------------------ literals
  Expected<int64_t> parseInt(const std::string& what) {
    if (tok_.kind != Tok::Int) return err(str("expected an integer ", what, ", got ", describe(tok_)));
    int64_t v = 0;
    const char* b = tok_.text.data();
    const char* e = b + tok_.text.size();
    if (*b == '+') ++b;
    auto res = std::from_chars(b, e, v);
    if (res.ec != std::errc() || res.ptr != e) return err(str("integer ", tok_.text, " is out of range"));
    KF_RETURN_IF_ERROR(advance());
    return v;
  }
  static double parseDoubleText(const std::string& s) {
    if (s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    return std::strtod(s.c_str(), nullptr);
  }
  bool atNumber() const {
    return tok_.kind == Tok::Int || tok_.kind == Tok::Float ||
           (tok_.kind == Tok::Ident && (tok_.text == "inf" || tok_.text == "nan"));
  }
  Expected<double> parseNumber(const std::string& what) {
    if (!atNumber()) return err(str("expected a number ", what, ", got ", describe(tok_)));
    double v = parseDoubleText(tok_.text);
    KF_RETURN_IF_ERROR(advance());
    return v;
  }

  Expected<TensorType> parseType() {
    Token typeAt = tok_;
    if (tok_.kind != Tok::Ident) return err(str("expected a type such as f32[2,3], got ", describe(tok_)));
    auto dtype = parseDType(tok_.text);
    if (!dtype)
      return err(str("unknown dtype '", tok_.text, "' (expected one of f32, f16, bf16, f64, i64, i32, i8, u8, bool)"));
    KF_RETURN_IF_ERROR(advance());
    KF_RETURN_IF_ERROR(expect(Tok::LBracket, "to open the shape"));
    Shape shape;
    while (tok_.kind != Tok::RBracket) {
      if (!shape.empty()) KF_RETURN_IF_ERROR(expect(Tok::Comma, "between dimensions"));
      Token at = tok_;
      KF_ASSIGN_OR_RETURN(int64_t d, parseInt("dimension"));
      if (d < 0) return errAt(at, str("dimension ", d, " is negative"));
      shape.push_back(d);
      if (shape.size() > static_cast<size_t>(kMaxRank)) return errAt(at, str("rank exceeds the maximum of ", kMaxRank));
    }
    KF_RETURN_IF_ERROR(advance());
    TensorType t(*dtype, shape);
    if (auto s = checkShapeBounds(shape, "type " + std::string(dtypeName(*dtype))); !s) return errAt(typeAt, s.message());
    if (tok_.kind == Tok::Hash) {
      KF_RETURN_IF_ERROR(advance());
      if (tok_.kind != Tok::Ident) return err(str("expected a layout after '#', got ", describe(tok_)));
      auto layout = parseLayout(tok_.text);
      if (!layout) return err(str("unknown layout '", tok_.text, "' (expected nchw, nhwc, oihw or ohwi)"));
      if (!layoutFitsRank(*layout, shape.size()))
        return err(str("layout ", tok_.text, " needs a rank-4 type, got rank ", shape.size()));
      t.layout = *layout;
      KF_RETURN_IF_ERROR(advance());
    }
    return t;
  }

  // dense<f32[2,2]>[1.0, 2.0, 3.0, 4.0]
  Expected<Tensor> parseDense() {
    KF_RETURN_IF_ERROR(expectKeyword("dense"));
    KF_RETURN_IF_ERROR(expect(Tok::Less, "after 'dense'"));
    KF_ASSIGN_OR_RETURN(TensorType type, parseType());
    KF_RETURN_IF_ERROR(expect(Tok::Greater, "after the dense type"));
    Token open = tok_;
    KF_RETURN_IF_ERROR(expect(Tok::LBracket, "to open the dense elements"));
    std::vector<double> values;
    while (tok_.kind != Tok::RBracket) {
      if (!values.empty()) KF_RETURN_IF_ERROR(expect(Tok::Comma, "between elements"));
      if (tok_.kind == Tok::Ident && (tok_.text == "true" || tok_.text == "false")) {
        values.push_back(tok_.text == "true");
        KF_RETURN_IF_ERROR(advance());
      } else {
        KF_ASSIGN_OR_RETURN(double v, parseNumber("in dense elements"));
        values.push_back(v);
      }
    }
    if (static_cast<int64_t>(values.size()) != type.numElements())
      return errAt(open, str("dense literal has ", values.size(), " elements, its type ", formatType(type), " needs ",
                             type.numElements()));
    KF_RETURN_IF_ERROR(advance());
    return Tensor::fromDoubles(type, values);
  }

  Expected<Attribute> parseAttrValue() {
    if (tok_.kind == Tok::String) {
      std::string s = tok_.text;
      KF_RETURN_IF_ERROR(advance());
      return Attribute(s);
    }
    if (tok_.kind == Tok::Ident && (tok_.text == "true" || tok_.text == "false")) {
      bool b = tok_.text == "true";
      KF_RETURN_IF_ERROR(advance());
      return Attribute(b);
    }
    if (tok_.kind == Tok::Ident && tok_.text == "dense") {
      KF_ASSIGN_OR_RETURN(Tensor t, parseDense());
      return Attribute(std::move(t));
    }
    if (tok_.kind == Tok::Int) {
      KF_ASSIGN_OR_RETURN(int64_t v, parseInt("attribute"));
      return Attribute(v);
    }
    if (atNumber()) {
      KF_ASSIGN_OR_RETURN(double v, parseNumber("attribute"));
      return Attribute(v);
    }
    if (tok_.kind == Tok::LBracket) {
      KF_RETURN_IF_ERROR(advance());
      std::vector<int64_t> ints;
      std::vector<double> floats;
      bool anyFloat = false;
      while (tok_.kind != Tok::RBracket) {
        if (!floats.empty()) KF_RETURN_IF_ERROR(expect(Tok::Comma, "between list elements"));
        anyFloat |= tok_.kind != Tok::Int;
        if (tok_.kind == Tok::Int) {
          KF_ASSIGN_OR_RETURN(int64_t v, parseInt("list element"));
          ints.push_back(v);
          floats.push_back(static_cast<double>(v));
        } else {
          KF_ASSIGN_OR_RETURN(double v, parseNumber("in list"));
          floats.push_back(v);
        }
      }
      KF_RETURN_IF_ERROR(advance());
      return anyFloat ? Attribute(floats) : Attribute(ints);
    }
    return err(str("expected an attribute value (number, string, true/false, list or dense<...>), got ", describe(tok_)));
  }

  // { name = value, ... } ; positions kept for messages.
  Expected<AttrMap> parseAttrDict(std::map<std::string, Token>& where) {
    AttrMap attrs;
    KF_RETURN_IF_ERROR(advance());  // '{'
    while (tok_.kind != Tok::RBrace) {
      if (!attrs.empty()) KF_RETURN_IF_ERROR(expect(Tok::Comma, "between attributes"));
      Token at = tok_;
      KF_ASSIGN_OR_RETURN(std::string name, expectName(Tok::Ident, "attribute name"));
      KF_RETURN_IF_ERROR(expect(Tok::Equal, "after attribute name '" + name + "'"));
      KF_ASSIGN_OR_RETURN(Attribute a, parseAttrValue());
      if (attrs.count(name)) return errAt(at, str("attribute '", name, "' is given twice"));
      attrs.emplace(name, std::move(a));
      where[name] = at;
    }
    KF_RETURN_IF_ERROR(advance());
    return attrs;
  }

  // ------------------------------------------------------------ module items
  Status parseWeightsDecl() {
    KF_RETURN_IF_ERROR(advance());
    if (tok_.kind != Tok::String) return err(str("expected the weights file path as a string, got ", describe(tok_)));
    if (!module_->weightsPath().empty()) return err("the module names a weights file twice");
    module_->setWeightsPath(tok_.text);
    return advance();
  }

  Status parseParam() {
    bool trainable = tok_.text == "param";
    KF_RETURN_IF_ERROR(advance());
    Token at = tok_;
    KF_ASSIGN_OR_RETURN(std::string name, expectName(Tok::ParamName, "parameter name (@name)"));
    KF_RETURN_IF_ERROR(expect(Tok::Colon, "after parameter name"));
    KF_ASSIGN_OR_RETURN(TensorType type, parseType());
    Param* p = module_->addParam(name, type, trainable);
    if (!p) return errAt(at, str("parameter @", name, " is declared twice"));
    if (tok_.kind == Tok::Equal) {
      KF_RETURN_IF_ERROR(advance());
      Token denseAt = tok_;
      KF_ASSIGN_OR_RETURN(Tensor t, parseDense());
      if (t.dtype() != type.dtype || t.shape() != type.shape)
        return errAt(denseAt, str("inline data ", formatType(t.type()), " does not match parameter type ", formatType(type)));
      module_->setParamData(name, std::move(t));
    }
    return Status::ok();
  }

  struct FuncState {
    Graph* g;
    std::map<std::string, Value*, std::less<>> values;
    std::map<std::string, Token, std::less<>> defs;  // where each value was defined
    bool isBody = false;  // a fused node's body: isolated, no parameters
  };

  Expected<Value*> parseOperand(FuncState& fs) {
    Token at = tok_;
    if (tok_.kind == Tok::ParamName) {
      if (fs.isBody)
        return err(str("parameter @", tok_.text, " is not visible inside a fused body; pass it as an operand"));
      Value* v = fs.g->paramValue(tok_.text);
      if (!v) return err(str("use of undeclared parameter @", tok_.text));
      KF_RETURN_IF_ERROR(advance());
      return v;
    }
    if (tok_.kind != Tok::ValueName) return err(str("expected an operand (%value or @param), got ", describe(tok_)));
    auto it = fs.values.find(tok_.text);
    if (it == fs.values.end()) return err(str("use of undefined value %", tok_.text, " (values must be defined before use)"));
    KF_RETURN_IF_ERROR(advance());
    return it->second;
  }

  Status defineValue(FuncState& fs, const Token& at, const std::string& name, Value* v) {
    auto prev = fs.defs.find(name);
    if (prev != fs.defs.end())
      return errAt(at, str("value %", name, " is defined twice (first at line ", prev->second.line, ":",
                           prev->second.col, ")"));
    fs.values[name] = v;
    fs.defs[name] = at;
    return Status::ok();
  }

  std::string suggestOp(const std::string& name) const {
    const OpDef* best = nullptr;
    size_t bestD = 3;
    for (const OpDef* op : OpRegistry::global().all()) {
      size_t d = editDistance(name, op->name);
      if (d < bestD) {
        bestD = d;
        best = op;
      }
    }
    return best ? str(" (did you mean '", best->name, "'?)") : std::string();
  }

  Status parseNodeStmt(FuncState& fs) {
    Token stmtAt = tok_;
    std::vector<std::pair<Token, std::string>> resultNames;
    if (tok_.kind == Tok::ValueName) {
      for (;;) {
        Token at = tok_;
        KF_ASSIGN_OR_RETURN(std::string n, expectName(Tok::ValueName, "result name"));
        resultNames.emplace_back(at, n);
        if (tok_.kind != Tok::Comma) break;
        KF_RETURN_IF_ERROR(advance());
      }
      KF_RETURN_IF_ERROR(expect(Tok::Equal, "after the result names"));
    }
    Token opAt = tok_;
    if (tok_.kind != Tok::Ident) return err(str("expected an op name, got ", describe(tok_)));
    std::string opName = tok_.text;
    const OpDef* op = OpRegistry::global().find(opName);
    if (!op) return err(str("unknown op '", opName, "'", suggestOp(opName)));
    KF_RETURN_IF_ERROR(advance());
    if (op->hasBody) return parseBodyNode(fs, *op, resultNames, stmtAt, opAt);
    std::vector<Value*> operands;
    if (tok_.kind == Tok::ValueName || tok_.kind == Tok::ParamName) {
      for (;;) {
        KF_ASSIGN_OR_RETURN(Value* v, parseOperand(fs));
        operands.push_back(v);
        if (tok_.kind != Tok::Comma) break;
        KF_RETURN_IF_ERROR(advance());
      }
    }
    AttrMap given;
    std::map<std::string, Token> attrAt;
    Token attrsAt = tok_;
    if (tok_.kind == Tok::LBrace) {
      KF_ASSIGN_OR_RETURN(given, parseAttrDict(attrAt));
    }
    KF_RETURN_IF_ERROR(expect(Tok::Colon, str("before the result types of '", opName, "'")));
    Token typesAt = tok_;
    std::vector<TensorType> declared;
    for (;;) {
      KF_ASSIGN_OR_RETURN(TensorType t, parseType());
      declared.push_back(t);
      if (tok_.kind != Tok::Comma) break;
      KF_RETURN_IF_ERROR(advance());
    }
    std::string srcName, srcOp;
    if (tok_.kind == Tok::Ident && tok_.text == "loc") {
      KF_RETURN_IF_ERROR(advance());
      KF_RETURN_IF_ERROR(expect(Tok::LParen, "after 'loc'"));
      KF_ASSIGN_OR_RETURN(srcName, expectName(Tok::String, "source node name (a string)"));
      if (tok_.kind == Tok::Comma) {
        KF_RETURN_IF_ERROR(advance());
        KF_ASSIGN_OR_RETURN(srcOp, expectName(Tok::String, "source op type (a string)"));
      }
      KF_RETURN_IF_ERROR(expect(Tok::RParen, "to close loc(...)"));
    }

    // Semantic checks, each reported at the most precise position.
    if (auto s = checkArity(*op, operands.size()); !s) return errAt(opAt, s.message());
    auto full = completeAttrs(*op, given);
    if (!full) {
      Token at = attrsAt;
      for (const auto& [name, pos] : attrAt)
        if (full.error().message().find("'" + name + "'") != std::string::npos) at = pos;
      return errAt(at, full.error().message());
    }
    std::vector<TensorType> inputTypes;
    for (Value* v : operands) inputTypes.push_back(v->type());
    auto inferred = inferResultTypes(*op, *full, inputTypes);
    if (!inferred) return errAt(opAt, inferred.error().message());
    if (resultNames.size() != inferred->size())
      return errAt(stmtAt, str("op '", opName, "' produces ", inferred->size(), " result",
                               inferred->size() == 1 ? "" : "s", ", but ", resultNames.size(), " are named"));
    if (declared.size() != inferred->size())
      return errAt(typesAt, str("op '", opName, "' produces ", inferred->size(), " result",
                                inferred->size() == 1 ? "" : "s", ", but ", declared.size(), " types are given"));
    for (size_t i = 0; i < declared.size(); ++i) {
      if (!(declared[i] == (*inferred)[i]))
        return errAt(typesAt, str("declared result type ", formatType(declared[i]), " of '", opName,
                                  "' does not match the inferred type ", formatType((*inferred)[i])));
    }
    Node* n = fs.g->createNode(*op, operands, *inferred, std::move(*full));
    n->loc = SourceLoc{lex_.filename(), opAt.line, opAt.col};
    n->sourceName = std::move(srcName);
    n->sourceOp = std::move(srcOp);
    for (size_t i = 0; i < resultNames.size(); ++i) {
      n->result(i)->setName(resultNames[i].second);
      KF_RETURN_IF_ERROR(defineValue(fs, resultNames[i].first, resultNames[i].second, n->result(i)));
    }
    return Status::ok();
  }

  // Arguments "(%a: t, ...)" into fs, values defined as arguments of fs.g.
  Status parseArguments(FuncState& fs) {
    KF_RETURN_IF_ERROR(expect(Tok::LParen, "to open the argument list"));
    while (tok_.kind != Tok::RParen) {
      if (!fs.g->arguments().empty()) KF_RETURN_IF_ERROR(expect(Tok::Comma, "between arguments"));
      Token at = tok_;
      KF_ASSIGN_OR_RETURN(std::string arg, expectName(Tok::ValueName, "argument name (%name)"));
      KF_RETURN_IF_ERROR(expect(Tok::Colon, "after argument name"));
      KF_ASSIGN_OR_RETURN(TensorType t, parseType());
      KF_RETURN_IF_ERROR(defineValue(fs, at, arg, fs.g->addArgument(arg, t)));
    }
    return advance();
  }

  Expected<std::vector<Value*>> parseOperandList(FuncState& fs) {
    std::vector<Value*> out;
    if (tok_.kind != Tok::ValueName && tok_.kind != Tok::ParamName) return out;
    for (;;) {
      KF_ASSIGN_OR_RETURN(Value* v, parseOperand(fs));
      out.push_back(v);
      if (tok_.kind != Tok::Comma) return out;
      KF_RETURN_IF_ERROR(advance());
    }
  }

  // %r = fused @kernel(%a, @w) {attrs} : types { ^bb(%x: t, ...): stmt* yield %y } loc(...)
  Status parseBodyNode(FuncState& fs, const OpDef& op, const std::vector<std::pair<Token, std::string>>& resultNames,
                       const Token& stmtAt, const Token& opAt) {
    KF_ASSIGN_OR_RETURN(std::string kernel, expectName(Tok::ParamName, str("the name of the ", op.name, " node (@name)")));
    KF_RETURN_IF_ERROR(expect(Tok::LParen, "to open the operands"));
    KF_ASSIGN_OR_RETURN(std::vector<Value*> operands, parseOperandList(fs));
    KF_RETURN_IF_ERROR(expect(Tok::RParen, "to close the operands"));
    AttrMap given;
    std::map<std::string, Token> attrAt;
    if (tok_.kind == Tok::LBrace) {
      KF_ASSIGN_OR_RETURN(given, parseAttrDict(attrAt));
    }
    KF_RETURN_IF_ERROR(expect(Tok::Colon, str("before the result types of '", op.name, "'")));
    Token typesAt = tok_;
    std::vector<TensorType> declared;
    for (;;) {
      KF_ASSIGN_OR_RETURN(TensorType t, parseType());
      declared.push_back(t);
      if (tok_.kind != Tok::Comma) break;
      KF_RETURN_IF_ERROR(advance());
    }
    KF_RETURN_IF_ERROR(expect(Tok::LBrace, "to open the body"));
    if (tok_.kind != Tok::BlockName) return err(str("expected the body's block label ^bb, got ", describe(tok_)));
    KF_RETURN_IF_ERROR(advance());
    auto body = std::make_unique<Graph>(kernel, module_.get());
    FuncState inner{body.get(), {}, {}, true};
    KF_RETURN_IF_ERROR(parseArguments(inner));
    KF_RETURN_IF_ERROR(expect(Tok::Colon, "after the block arguments"));
    KF_RETURN_IF_ERROR(parseStatements(inner, "yield"));
    Token yieldAt = tok_;
    KF_RETURN_IF_ERROR(advance());
    KF_ASSIGN_OR_RETURN(std::vector<Value*> yields, parseOperandList(inner));
    body->setResults(yields);
    KF_RETURN_IF_ERROR(expect(Tok::RBrace, "after 'yield' (it must end the body)"));
    std::string srcName;
    if (tok_.kind == Tok::Ident && tok_.text == "loc") {
      KF_RETURN_IF_ERROR(advance());
      KF_RETURN_IF_ERROR(expect(Tok::LParen, "after 'loc'"));
      KF_ASSIGN_OR_RETURN(srcName, expectName(Tok::String, "source node name (a string)"));
      KF_RETURN_IF_ERROR(expect(Tok::RParen, "to close loc(...)"));
    }
    KF_ASSIGN_OR_RETURN(AttrMap full, completeAttrs(op, given));
    std::vector<TensorType> inputTypes;
    for (Value* v : operands) inputTypes.push_back(v->type());
    auto inferred = inferResultTypes(op, full, inputTypes, nullptr, body.get());
    if (!inferred) return errAt(opAt, inferred.error().message());
    if (resultNames.size() != inferred->size())
      return errAt(stmtAt, str("the body yields ", inferred->size(), " values, but ", resultNames.size(), " are named"));
    if (declared != *inferred)
      return errAt(yieldAt, str("the body yields ", typeList(*inferred), " but the node declares ", typeList(declared)));
    (void)typesAt;
    Node* n = fs.g->createNode(op, operands, *inferred, std::move(full));
    n->setBody(std::move(body));
    n->loc = SourceLoc{lex_.filename(), opAt.line, opAt.col};
    n->sourceName = std::move(srcName);
    for (size_t i = 0; i < resultNames.size(); ++i) {
      n->result(i)->setName(resultNames[i].second);
      KF_RETURN_IF_ERROR(defineValue(fs, resultNames[i].first, resultNames[i].second, n->result(i)));
    }
    return Status::ok();
  }

  static std::string typeList(const std::vector<TensorType>& ts) {
    std::vector<std::string> parts;
    for (const TensorType& t : ts) parts.push_back(formatType(t));
    return "(" + join(parts) + ")";
  }

  // Statements up to (not including) the terminator keyword.
  Status parseStatements(FuncState& fs, const std::string& terminator) {
    for (;;) {
      if (tok_.kind == Tok::Ident && tok_.text == terminator) return Status::ok();
      if (!fs.isBody && tok_.kind == Tok::Ident && tok_.text == "update") {
        KF_RETURN_IF_ERROR(parseUpdate(fs));
        continue;
      }
      if (tok_.kind == Tok::Eof || tok_.kind == Tok::RBrace)
        return err(str("expected '", terminator, "' before the end of ", fs.isBody ? "the body of " : "function ", "@",
                       fs.g->name(), ", got ", describe(tok_)));
      KF_RETURN_IF_ERROR(parseNodeStmt(fs));
    }
  }

  Status parseFunc() {
    KF_RETURN_IF_ERROR(advance());
    Token nameAt = tok_;
    KF_ASSIGN_OR_RETURN(std::string name, expectName(Tok::ParamName, "function name (@name)"));
    if (module_->findFunction(name)) return errAt(nameAt, str("function @", name, " is defined twice"));
    FuncState fs{module_->addFunction(name), {}, {}};
    KF_RETURN_IF_ERROR(parseArguments(fs));
    KF_RETURN_IF_ERROR(expect(Tok::Arrow, "after the argument list"));
    KF_RETURN_IF_ERROR(expect(Tok::LParen, "to open the result types"));
    std::vector<TensorType> resultTypes;
    while (tok_.kind != Tok::RParen) {
      if (!resultTypes.empty()) KF_RETURN_IF_ERROR(expect(Tok::Comma, "between result types"));
      KF_ASSIGN_OR_RETURN(TensorType t, parseType());
      resultTypes.push_back(t);
    }
    KF_RETURN_IF_ERROR(advance());
    KF_RETURN_IF_ERROR(expect(Tok::LBrace, "to open the function body"));
    KF_RETURN_IF_ERROR(parseStatements(fs, "return"));
    Token retAt = tok_;
    KF_RETURN_IF_ERROR(advance());
    KF_ASSIGN_OR_RETURN(std::vector<Value*> results, parseOperandList(fs));
    if (results.size() != resultTypes.size())
      return errAt(retAt, str("function @", name, " returns ", results.size(), " values but its signature declares ",
                              resultTypes.size()));
    for (size_t i = 0; i < results.size(); ++i)
      if (!(results[i]->type() == resultTypes[i]))
        return errAt(retAt, str("result ", i, " has type ", formatType(results[i]->type()),
                                " but the signature declares ", formatType(resultTypes[i])));
    fs.g->setResults(results);
    KF_RETURN_IF_ERROR(expect(Tok::RBrace, "after 'return' (it must be the last statement)"));
    return Status::ok();
  }

  Status parseUpdate(FuncState& fs) {
    KF_RETURN_IF_ERROR(advance());
    Token at = tok_;
    KF_ASSIGN_OR_RETURN(std::string param, expectName(Tok::ParamName, "the updated parameter (@name)"));
    const Param* p = module_->findParam(param);
    if (!p) return errAt(at, str("update of undeclared parameter @", param));
    for (const StateUpdate& u : fs.g->stateUpdates())
      if (u.param == param) return errAt(at, str("parameter @", param, " is updated twice"));
    KF_RETURN_IF_ERROR(expect(Tok::Equal, "after the updated parameter"));
    KF_ASSIGN_OR_RETURN(Value* v, parseOperand(fs));
    if (!(v->type() == p->type))
      return errAt(at, str("update of @", param, " : ", formatType(p->type), " with a value of type ", formatType(v->type())));
    fs.g->addStateUpdate(param, v);
    return Status::ok();
  }

  Lexer lex_;
  Token tok_;
  std::unique_ptr<Module> module_;
};

}  // namespace

Status loadModuleWeights(Module& m) {
  if (m.weightsPath().empty()) return Status::ok();
  std::filesystem::path p(m.weightsPath());
  if (p.is_relative() && !m.weightsDir().empty()) p = std::filesystem::path(m.weightsDir()) / p;
  KF_ASSIGN_OR_RETURN(TensorMap tensors, readWeightsFile(p.string()));
  for (const auto& param : m.params()) {
    if (param->data) continue;  // given inline
    auto it = tensors.find(param->name);
    if (it == tensors.end())
      return Error(str("weights file '", p.string(), "' has no tensor for parameter ", sigilName('@', param->name)));
    const Tensor& t = it->second;
    if (t.dtype() != param->type.dtype || t.shape() != param->type.shape)
      return Error(str("weights file '", p.string(), "': tensor '", param->name, "' is ", formatType(t.type()),
                       " but parameter ", sigilName('@', param->name), " is ", formatType(param->type)));
    m.setParamData(param->name, t, /*backedByFile=*/true);
  }
  return Status::ok();
}

Expected<std::unique_ptr<Module>> parseModule(std::string_view text, const std::string& filename,
                                              const ParseOptions& opts) {
  KF_ASSIGN_OR_RETURN(auto m, Parser(text, filename).parse());
  // The parser checked each node as it was built; the verifier adds the
  // whole-module checks.
  KF_RETURN_IF_ERROR(verifyModule(*m));
  std::string base = std::filesystem::path(filename).parent_path().string();
  m->setWeightsDir(std::filesystem::absolute(base.empty() ? "." : base).string());
  if (opts.loadWeights) {
    if (auto s = loadModuleWeights(*m); !s) return Error(str(filename, ": error: ", s.message()));
  }
  return m;
}

Expected<std::unique_ptr<Module>> parseModuleFile(const std::string& path, const ParseOptions& opts) {
  KF_ASSIGN_OR_RETURN(std::string text, readFile(path));
  return parseModule(text, path, opts);
}

}  // namespace kfuse
