// The importer on models built here with the ONNX protobuf API: folding,
// parameters, provenance, op-version resolution, and how unsupported nodes
// are collected.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "frontend/onnx/attributes.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/op_table.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "onnx/onnx_pb.h"

namespace kfuse::onnx_import {
namespace {

using onnx::TensorProto;

// A model under construction; dims < 0 are symbolic ("batch").
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13) {
    proto_->set_ir_version(8);
    auto* o = proto_->add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    proto_->mutable_graph()->set_name("test");
  }
  ModelBuilder& input(const std::string& name, std::vector<int64_t> dims, int type = TensorProto::FLOAT) {
    valueInfo(proto_->mutable_graph()->add_input(), name, dims, type);
    return *this;
  }
  ModelBuilder& output(const std::string& name, std::vector<int64_t> dims, int type = TensorProto::FLOAT) {
    valueInfo(proto_->mutable_graph()->add_output(), name, dims, type);
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                        const std::string& name = "") {
    onnx::NodeProto* n = proto_->mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return *n;
  }
  ModelBuilder& initializer(const std::string& name, const Tensor& t) {
    tensorToProto(t, name, *proto_->mutable_graph()->add_initializer());
    return *this;
  }
  OnnxModel model() const { return OnnxModel{proto_, "test.onnx", proto_->opset_import(0).version()}; }

 private:
  static void valueInfo(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims, int type) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    auto* shape = t->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d >= 0) dim->set_dim_value(d);
      else dim->set_dim_param("batch");
    }
  }
  std::shared_ptr<onnx::ModelProto> proto_ = std::make_shared<onnx::ModelProto>();
};

void setInts(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void setInt(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

Tensor i64(std::vector<int64_t> v, Shape shape) {
  Tensor t(TensorType(DType::I64, std::move(shape)));
  for (size_t i = 0; i < v.size(); ++i) t.as<int64_t>()[i] = v[i];
  return t;
}

std::vector<std::string> opNames(const Graph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodeList()) ops.emplace_back(n->opName());
  return ops;
}

TEST(Importer, FoldsTheShapeSubgraphOfADynamicBatch) {
  ModelBuilder b;
  b.input("x", {-1, 3, 4}).output("y", {-1, 12});
  b.initializer("zero", i64({0}, {})).initializer("axes", i64({0}, {1})).initializer("minus1", i64({-1}, {1}));
  b.node("Shape", {"x"}, {"s"});
  setInt(b.node("Gather", {"s", "zero"}, {"n"}), "axis", 0);
  b.node("Unsqueeze", {"n", "axes"}, {"n1"});
  setInt(b.node("Concat", {"n1", "minus1"}, {"shape"}), "axis", 0);
  b.node("Reshape", {"x", "shape"}, {"y"}, "/Reshape");
  ImportOptions opts;
  opts.shapes["x"] = {2, 3, 4};
  auto m = importModel(b.model(), opts);
  ASSERT_TRUE(m) << m.error().message();
  const Graph& g = *(*m)->functions().front();
  EXPECT_EQ(opNames(g), (std::vector<std::string>{"reshape"}));
  EXPECT_EQ(g.nodeList().front()->attr("shape").asInts(), (std::vector<int64_t>{2, -1}));
  // Integer initializers used only for shape arithmetic leave no parameter.
  EXPECT_TRUE((*m)->params().empty());
}

TEST(Importer, KeepsProvenanceAndMakesParameters) {
  ModelBuilder b;
  b.input("x", {2, 4}).output("y", {2, 3});
  b.initializer("w", Tensor::fromDoubles(TensorType(DType::F32, {4, 3}), std::vector<double>(12, 0.5)));
  b.node("MatMul", {"x", "w"}, {"h"}, "/fc/MatMul");
  b.node("Relu", {"h"}, {"y"});  // unnamed: known by its first output
  auto m = importModel(b.model());
  ASSERT_TRUE(m) << m.error().message();
  const Graph& g = *(*m)->functions().front();
  ASSERT_EQ(g.numNodes(), 2u);
  EXPECT_EQ(g.nodeList().front()->sourceName, "/fc/MatMul");
  EXPECT_EQ(g.nodeList().front()->sourceOp, "MatMul");
  EXPECT_EQ(g.nodeList().back()->sourceName, "y");
  EXPECT_EQ(g.nodeList().back()->sourceOp, "Relu");
  ASSERT_EQ((*m)->params().size(), 1u);
  const Param& w = *(*m)->params().front();
  EXPECT_EQ(w.name, "w");
  EXPECT_TRUE(w.trainable);
  ASSERT_TRUE(w.data);
  EXPECT_EQ(w.data->at(0), 0.5);
  EXPECT_EQ(g.results().front()->name(), "y");

  auto out = interpret(g, {Tensor::fromDoubles(TensorType(DType::F32, {2, 4}), {1, 1, 1, 1, -1, -1, -1, -1})});
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->outputs[0].toDoubles(), (std::vector<double>{2, 2, 2, 0, 0, 0}));
}

TEST(Importer, StoresLargeConstantsAsBuffers) {
  ModelBuilder b;
  b.input("x", {100}).output("y", {100});
  auto& c = b.node("Constant", {}, {"c"}, "/Constant");
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  tensorToProto(Tensor::fromDoubles(TensorType(DType::F32, {100}), std::vector<double>(100, 2.0)), "", *a->mutable_t());
  b.node("Mul", {"x", "c"}, {"y"});
  auto m = importModel(b.model());
  ASSERT_TRUE(m) << m.error().message();
  ASSERT_EQ((*m)->params().size(), 1u);
  EXPECT_EQ((*m)->params().front()->name, "/Constant.value");
  EXPECT_FALSE((*m)->params().front()->trainable);
}

// Every unsupported node is reported, including those found only while
// lowering (a 3-D Conv), while nodes downstream of them are skipped.
TEST(Importer, CollectsEveryUnsupportedNode) {
  ModelBuilder b;
  b.input("x", {1, 1, 4, 4, 4}).input("w", {1, 1, 1, 1, 1}).input("v", {1, 1, 4}).output("y", {1, 1, 4, 4, 4});
  b.output("z", {1, 1, 4});
  b.node("Conv", {"x", "w"}, {"c"}, "/conv3d");
  b.node("Relu", {"c"}, {"y"}, "/after_conv");
  auto& pool = b.node("MaxPool", {"v"}, {"p", "indices"}, "/pool");
  setInts(pool, "kernel_shape", {1});
  b.node("Identity", {"p"}, {"z"});
  ImportReport report;
  auto m = importModel(b.model(), {}, &report);
  ASSERT_FALSE(m);
  ASSERT_EQ(report.unsupported.size(), 2u) << m.error().message();
  EXPECT_EQ(report.unsupported[0],
            "node '/conv3d' (Conv), opset 13: Conv over 3 spatial axes (kfuse has 1-D and 2-D)");
  EXPECT_EQ(report.unsupported[1], "node '/pool' (MaxPool), opset 13: MaxPool's Indices output");
  EXPECT_EQ(m.error().message(),
            "test.onnx: the model uses 2 unsupported features:\n  " + report.unsupported[0] + "\n  " +
                report.unsupported[1]);
}

TEST(Importer, NamesEverySymbolicInput) {
  ModelBuilder b;
  b.input("a", {-1, 3}).input("b", {2, -1}).output("y", {-1, 3});
  b.node("Add", {"a", "b"}, {"y"});
  auto m = importModel(b.model());
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message(),
            "test.onnx: the shapes of these inputs are not fully known: 'a' [batch,3] (symbolic: batch); 'b' "
            "[2,batch] (symbolic: batch); give each with --shape NAME=D0,D1,...");
}

// BatchNormalization-15 in training mode over x [2, 2, 1, 2] (4 values per
// channel: channel 0 {1, 2, 3, 6}, channel 1 {0, 0, 4, -4}), momentum 0.9
// (torch's 0.1), with initializer running statistics.
ModelBuilder trainingBatchNorm(bool statsAreOutputs) {
  ModelBuilder b(15);
  b.input("x", {2, 2, 1, 2}).output("y", {2, 2, 1, 2});
  if (statsAreOutputs) b.output("rm", {2}).output("rv", {2});
  auto f32 = [](std::vector<double> v) { return Tensor::fromDoubles(TensorType(DType::F32, {2}), v); };
  b.initializer("bn.weight", f32({1, 1})).initializer("bn.bias", f32({0, 0}));
  b.initializer("bn.running_mean", f32({0.5, -1})).initializer("bn.running_var", f32({2, 1}));
  auto& n = b.node("BatchNormalization", {"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
                   {"y", "rm", "rv"}, "/bn");
  setInt(n, "training_mode", 1);
  auto* a = n.add_attribute();
  a->set_name("momentum");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.9f);
  return b;
}

// torch.onnx.export (training mode) leaves the running-statistic outputs
// unread, having removed the buffers' in-place update: the importer keeps the
// statistics as buffers and updates them as torch does (unbiased variance).
TEST(Importer, TrainingBatchNormUpdatesInitializerRunningStatistics) {
  auto m = importModel(trainingBatchNorm(false).model());
  ASSERT_TRUE(m) << m.error().message();
  const Graph& g = *(*m)->functions().front();
  ASSERT_EQ(g.stateUpdates().size(), 2u);
  EXPECT_EQ(g.stateUpdates()[0].param, "bn.running_mean");
  EXPECT_EQ(g.stateUpdates()[1].param, "bn.running_var");
  for (const char* name : {"bn.running_mean", "bn.running_var"}) {
    const Param* p = (*m)->findParam(name);
    ASSERT_TRUE(p) << name;
    EXPECT_FALSE(p->trainable) << name;
  }
  Tensor x = Tensor::fromDoubles(TensorType(DType::F32, {2, 2, 1, 2}), {1, 2, 0, 0, 3, 6, 4, -4});
  auto out = interpret(g, {x});
  ASSERT_TRUE(out) << out.error().message();
  // mean {3, 0}; unbiased variance {14/3, 32/3}.
  std::vector<double> mean = out->updates.at("bn.running_mean")->toDoubles();
  EXPECT_NEAR(mean[0], 0.9 * 0.5 + 0.1 * 3, 1e-6);
  EXPECT_NEAR(mean[1], 0.9 * -1 + 0.1 * 0, 1e-6);
  std::vector<double> var = out->updates.at("bn.running_var")->toDoubles();
  EXPECT_NEAR(var[0], 0.9 * 2 + 0.1 * 14 / 3, 1e-6);
  EXPECT_NEAR(var[1], 0.9 * 1 + 0.1 * 32 / 3, 1e-6);
}

// Running statistics the graph returns follow the ONNX spec (population
// variance) and update no state.
TEST(Importer, TrainingBatchNormStatisticsOutputsFollowTheSpec) {
  auto m = importModel(trainingBatchNorm(true).model());
  ASSERT_TRUE(m) << m.error().message();
  const Graph& g = *(*m)->functions().front();
  EXPECT_TRUE(g.stateUpdates().empty());
  Tensor x = Tensor::fromDoubles(TensorType(DType::F32, {2, 2, 1, 2}), {1, 2, 0, 0, 3, 6, 4, -4});
  auto out = interpret(g, {x});
  ASSERT_TRUE(out) << out.error().message();
  ASSERT_EQ(out->outputs.size(), 3u);
  std::vector<double> var = out->outputs[2].toDoubles();
  EXPECT_NEAR(var[0], 0.9 * 2 + 0.1 * 3.5, 1e-6);
  EXPECT_NEAR(var[1], 0.9 * 1 + 0.1 * 8, 1e-6);
}

// BatchNormalization-9 (opsets 9-13) as torch.onnx.export writes it in
// training mode: all five outputs (Y, mean, var, saved_mean, saved_var),
// none read. Training is told by the outputs; the running statistics
// update as torch's buffers do, through the same lowering as opset 14's.
ModelBuilder fiveOutputBatchNorm(std::vector<std::string> graphOutputs, std::vector<std::string> nodeOutputs = {
                                                                             "y", "rm", "rv", "sm", "sv"}) {
  ModelBuilder b(13);
  b.input("x", {2, 2, 1, 2});
  for (const auto& o : graphOutputs) b.output(o, o == "y" ? std::vector<int64_t>{2, 2, 1, 2} : std::vector<int64_t>{2});
  auto f32 = [](std::vector<double> v) { return Tensor::fromDoubles(TensorType(DType::F32, {2}), v); };
  b.initializer("bn.weight", f32({1, 1})).initializer("bn.bias", f32({0, 0}));
  b.initializer("bn.running_mean", f32({0.5, -1})).initializer("bn.running_var", f32({2, 1}));
  auto& n = b.node("BatchNormalization", {"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
                   nodeOutputs, "/bn");
  auto* a = n.add_attribute();
  a->set_name("momentum");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.9f);
  return b;
}

const Tensor kBatchNormX = Tensor::fromDoubles(TensorType(DType::F32, {2, 2, 1, 2}), {1, 2, 0, 0, 3, 6, 4, -4});

TEST(Importer, BatchNorm9FiveOutputsTrainAsTorchExportsThem) {
  auto m = importModel(fiveOutputBatchNorm({"y"}).model());
  ASSERT_TRUE(m) << m.error().message();
  const Graph& g = *(*m)->functions().front();
  std::vector<std::string> ops = opNames(g);
  EXPECT_NE(std::find(ops.begin(), ops.end(), "batch_norm_train"), ops.end());
  ASSERT_EQ(g.stateUpdates().size(), 2u);
  auto out = interpret(g, {kBatchNormX});
  ASSERT_TRUE(out) << out.error().message();
  // Normalised with the batch's statistics: channel 0 {1, 2, 3, 6} has mean 3, variance 3.5.
  EXPECT_NEAR(out->outputs[0].toDoubles()[0], (1 - 3) / std::sqrt(3.5 + 1e-5), 1e-5);
  std::vector<double> var = out->updates.at("bn.running_var")->toDoubles();
  EXPECT_NEAR(var[0], 0.9 * 2 + 0.1 * 14 / 3, 1e-6);  // unbiased, as torch's buffer
  EXPECT_NEAR(out->updates.at("bn.running_mean")->toDoubles()[0], 0.9 * 0.5 + 0.1 * 3, 1e-6);
}

TEST(Importer, BatchNorm9ReadStatisticsFollowTheSpec) {
  auto m = importModel(fiveOutputBatchNorm({"y", "rv", "sm"}).model());
  ASSERT_TRUE(m) << m.error().message();
  const Graph& g = *(*m)->functions().front();
  auto out = interpret(g, {kBatchNormX});
  ASSERT_TRUE(out) << out.error().message();
  ASSERT_EQ(out->outputs.size(), 3u);
  EXPECT_NEAR(out->outputs[1].toDoubles()[1], 0.9 * 1 + 0.1 * 8, 1e-6);  // population variance
  EXPECT_EQ(out->outputs[2].toDoubles(), (std::vector<double>{3, 0}));   // saved_mean: the batch mean
  // The unread running mean still updates its initializer.
  ASSERT_EQ(g.stateUpdates().size(), 1u);
  EXPECT_EQ(g.stateUpdates()[0].param, "bn.running_mean");
}

TEST(Importer, BatchNorm9ReadSavedVarIsUnsupported) {
  ImportReport report;
  auto m = importModel(fiveOutputBatchNorm({"y", "sv"}).model(), {}, &report);
  ASSERT_FALSE(m);
  ASSERT_EQ(report.unsupported.size(), 1u) << m.error().message();
  EXPECT_EQ(report.unsupported[0],
            "node '/bn' (BatchNormalization), opset 13: BatchNormalization's saved_var output read by the graph "
            "(runtimes disagree on whether it is the batch variance or 1 / sqrt(variance + epsilon))");
}

TEST(Importer, BatchNorm9WithYAloneIsInference) {
  auto m = importModel(fiveOutputBatchNorm({"y"}, {"y"}).model());
  ASSERT_TRUE(m) << m.error().message();
  const Graph& g = *(*m)->functions().front();
  EXPECT_TRUE(g.stateUpdates().empty());
  std::vector<std::string> ops = opNames(g);
  EXPECT_NE(std::find(ops.begin(), ops.end(), "batch_norm"), ops.end());
  EXPECT_EQ(std::find(ops.begin(), ops.end(), "batch_norm_train"), ops.end());
}

TEST(Importer, BatchNorm15StatisticsOutputsNeedTrainingMode) {
  ModelBuilder b = trainingBatchNorm(true);
  auto* attrs = b.model().proto->mutable_graph()->mutable_node(0)->mutable_attribute();
  for (auto& a : *attrs)
    if (a.name() == "training_mode") a.set_i(0);
  auto m = importModel(b.model());
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message(),
            "test.onnx: node '/bn' (BatchNormalization), opset 15: running_mean / running_var outputs with "
            "training_mode = 0 (they exist in training only)");
}

// Dropout-13 x [4, 64] -> (y, mask): ratio and training_mode from initializers.
ModelBuilder trainingDropout(bool readMask, double ratio = 0.25, int opset = 13) {
  ModelBuilder b(opset);
  b.input("x", {4, 64}).output("y", {4, 64});
  if (readMask) b.output("mask", {4, 64}, TensorProto::BOOL);
  b.initializer("ratio", Tensor::scalar(DType::F32, ratio));
  Tensor on(TensorType(DType::Bool, {}));
  on.set(0, 1);
  b.initializer("training", on);
  b.node("Dropout", {"x", "ratio", "training"}, {"y", "mask"}, "/drop/Dropout");
  return b;
}

Tensor dropoutInput() {
  Tensor x(TensorType(DType::F32, {4, 64}));
  for (int64_t i = 0; i < x.numElements(); ++i) x.set(i, 1.0 + static_cast<double>(i % 7));
  return x;
}

const Node* findOp(const Graph& g, std::string_view op) {
  for (const auto& n : g.nodeList())
    if (n->opName() == op) return n.get();
  return nullptr;
}

TEST(Importer, TrainingDropoutIsKfusesDropout) {
  auto m = importModel(trainingDropout(false).model());
  ASSERT_TRUE(m) << m.error().message();
  const Graph& g = *(*m)->functions().front();
  const Node* d = findOp(g, "dropout");
  ASSERT_TRUE(d) << "no dropout node";
  EXPECT_EQ(d->attr("ratio").asFloat(), 0.25);
  EXPECT_FALSE(d->attr("mask").asBool());  // the unread mask is not computed
  EXPECT_TRUE((*m)->params().empty());     // ratio and training_mode are import-time data
  auto out = interpret(g, {dropoutInput()});
  ASSERT_TRUE(out) << out.error().message();
  std::vector<double> x = dropoutInput().toDoubles(), y = out->outputs[0].toDoubles();
  int kept = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] != 0) {
      EXPECT_NEAR(y[i], x[i] / 0.75, 1e-5) << i;
      ++kept;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, static_cast<int>(y.size()));
}

TEST(Importer, TrainingDropoutMaskIsWhereYIsKept) {
  auto m = importModel(trainingDropout(true).model());
  ASSERT_TRUE(m) << m.error().message();
  const Graph& g = *(*m)->functions().front();
  int dropouts = 0;
  for (const auto& n : g.nodeList()) dropouts += n->opName() == "dropout";
  EXPECT_EQ(dropouts, 1);  // y and the mask from one draw
  auto out = interpret(g, {dropoutInput()});
  ASSERT_TRUE(out) << out.error().message();
  ASSERT_EQ(out->outputs[1].dtype(), DType::Bool);
  std::vector<double> y = out->outputs[0].toDoubles(), mask = out->outputs[1].toDoubles();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(mask[i] != 0, y[i] != 0) << i;
}

// Each node draws its own masks: its seed attribute, else a hash of its name.
TEST(Importer, TrainingDropoutSeedsDifferPerNode) {
  ModelBuilder b = trainingDropout(false);
  b.output("y2", {4, 64}).output("y3", {4, 64});
  b.node("Dropout", {"x", "ratio", "training"}, {"y2"}, "/drop2/Dropout");
  setInt(b.node("Dropout", {"x", "ratio", "training"}, {"y3"}, "/drop3/Dropout"), "seed", 42);
  auto m = importModel(b.model());
  ASSERT_TRUE(m) << m.error().message();
  std::vector<int64_t> seeds;
  for (const auto& n : (*m)->functions().front()->nodeList())
    if (n->opName() == "dropout") seeds.push_back(n->attr("seed").asInt());
  ASSERT_EQ(seeds.size(), 3u);
  EXPECT_NE(seeds[0], seeds[1]);
  EXPECT_EQ(seeds[2], 42);
}

TEST(Importer, TrainingDropoutOverAConstantIsNotFolded) {
  ModelBuilder b(13);
  b.output("y", {8});
  Tensor on(TensorType(DType::Bool, {}));
  on.set(0, 1);
  b.initializer("training", on).initializer("ratio", Tensor::scalar(DType::F32, 0.5));
  auto& c = b.node("Constant", {}, {"c"});
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  tensorToProto(Tensor::fromDoubles(TensorType(DType::F32, {8}), {1, 2, 3, 4, 5, 6, 7, 8}), "", *a->mutable_t());
  b.node("Dropout", {"c", "ratio", "training"}, {"y"}, "/drop");
  auto m = importModel(b.model());
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_TRUE(findOp(*(*m)->functions().front(), "dropout"));  // a training step gives it the step
}

TEST(Importer, Dropout6IsTestZeroTrainsWithAMaskOfXsType) {
  ModelBuilder b(6);
  b.input("x", {4, 64}).output("y", {4, 64}).output("mask", {4, 64});
  auto& n = b.node("Dropout", {"x"}, {"y", "mask"}, "/drop");
  setInt(n, "is_test", 0);
  auto* r = n.add_attribute();
  r->set_name("ratio");
  r->set_type(onnx::AttributeProto::FLOAT);
  r->set_f(0.5f);
  auto m = importModel(b.model());
  ASSERT_TRUE(m) << m.error().message();
  const Node* d = findOp(*(*m)->functions().front(), "dropout");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->attr("ratio").asFloat(), 0.5);
  EXPECT_EQ((*m)->functions().front()->results()[1]->type().dtype, DType::F32);
}

// Dropout-7 and -10 carry no mode: inference, as onnxruntime runs them.
TEST(Importer, Dropout10IsTheIdentity) {
  ModelBuilder b(10);
  b.input("x", {4, 64}).output("y", {4, 64});
  b.node("Dropout", {"x"}, {"y"}, "/drop");
  auto m = importModel(b.model());
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_FALSE(findOp(*(*m)->functions().front(), "dropout"));
}

TEST(Importer, TrainingDropoutRatioMustBeKnownAndBelowOne) {
  auto tooLarge = importModel(trainingDropout(false, 1.0).model());
  ASSERT_FALSE(tooLarge);
  EXPECT_EQ(tooLarge.error().message(), "test.onnx: node '/drop/Dropout' (Dropout), opset 13: ratio = 1 must be in [0, 1)");
  ModelBuilder b(13);
  b.input("x", {4, 64}).input("r", {}).output("y", {4, 64});
  Tensor on(TensorType(DType::Bool, {}));
  on.set(0, 1);
  b.initializer("training", on);
  b.node("Dropout", {"x", "r", "training"}, {"y"}, "/drop");
  ImportReport report;
  auto runtime = importModel(b.model(), {}, &report);
  ASSERT_FALSE(runtime);
  ASSERT_EQ(report.unsupported.size(), 1u) << runtime.error().message();
  EXPECT_EQ(report.unsupported[0],
            "node '/drop' (Dropout), opset 13: input 1 ('r') must be known at import time, but it is computed from "
            "the graph input 'r' at run time (kfuse needs static shapes; data-dependent ones are not supported)");
}

// Malformed training-mode inputs are errors naming the node and the input.
TEST(Importer, TrainingDropoutAndBatchNormRejectMalformedModes) {
  ModelBuilder twoModes(13);
  twoModes.input("x", {4, 64}).output("y", {4, 64});
  Tensor modes(TensorType(DType::Bool, {2}));
  modes.set(0, 1);
  twoModes.initializer("training", modes).initializer("ratio", Tensor::scalar(DType::F32, 0.5));
  twoModes.node("Dropout", {"x", "ratio", "training"}, {"y"}, "/drop");
  auto a = importModel(twoModes.model());
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message(),
            "test.onnx: node '/drop' (Dropout), opset 13: input 2 (training_mode) must be one boolean, got bool[2]");

  ModelBuilder intRatio(13);
  intRatio.input("x", {4, 64}).output("y", {4, 64});
  Tensor on(TensorType(DType::Bool, {}));
  on.set(0, 1);
  intRatio.initializer("training", on).initializer("ratio", i64({0}, {}));
  intRatio.node("Dropout", {"x", "ratio", "training"}, {"y"}, "/drop");
  auto b = importModel(intRatio.model());
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().message(), "test.onnx: node '/drop' (Dropout), opset 13: input 1 (ratio) must be one "
                                 "floating-point number, got i64[]");

  ModelBuilder testWithStats(6);
  testWithStats.input("x", {2, 2, 1, 2}).output("y", {2, 2, 1, 2}).output("rm", {2});
  auto f32 = [](std::vector<double> v) { return Tensor::fromDoubles(TensorType(DType::F32, {2}), v); };
  testWithStats.initializer("s", f32({1, 1})).initializer("b", f32({0, 0}));
  testWithStats.initializer("m", f32({0, 0})).initializer("v", f32({1, 1}));
  setInt(testWithStats.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "rm", "rv", "sm", "sv"}, "/bn"),
         "is_test", 1);
  auto c = importModel(testWithStats.model());
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(), "test.onnx: node '/bn' (BatchNormalization), opset 6: is_test = 1 with "
                                 "running-statistics outputs (they exist in training only)");
}

TEST(OpTable, ResolvesSchemaVersionsAtTheModelsOpset) {
  OpResolution softmax12 = resolveOp("", "Softmax", 12);
  ASSERT_TRUE(softmax12.lowering);
  EXPECT_EQ(softmax12.version, 11);
  EXPECT_EQ(resolveOp("", "Softmax", 13).version, 13);
  OpResolution legacy = resolveOp("", "Relu", 5);
  EXPECT_FALSE(legacy.lowering);
  EXPECT_EQ(legacy.reason, "kfuse lowers Relu versions 6, 13, 14, not version 1");
  EXPECT_EQ(resolveOp("", "TopK", 11).reason, "kfuse has no lowering for TopK");
  EXPECT_EQ(resolveOp("", "Bogus", 13).reason, "'Bogus' is not an ONNX op");
  EXPECT_EQ(resolveOp("", "Gelu", 17).reason, "'Gelu' is not an ONNX op at opset 17");
  // Past what Debian's ONNX library knows: kfuse's schema table resolves it.
  EXPECT_EQ(resolveOp("", "Softmax", 28).version, 13);
  EXPECT_EQ(resolveOp("", "Attention", 23).version, 23);
  EXPECT_EQ(resolveOp("com.example", "Relu", 13).reason, "ops of domain 'com.example' are not supported");
  // Each op type appears once and lists its versions in order.
  std::string previous;
  for (const OpLowering* l : allLowerings()) {
    EXPECT_LT(previous, std::string(l->opType));
    EXPECT_TRUE(std::is_sorted(l->versions.begin(), l->versions.end())) << l->opType;
    previous = l->opType;
  }
}

TEST(NodeAttributes, TypesReadsAndReportsUnreadAttributes) {
  onnx::NodeProto n;
  setInt(n, "axis", 2);
  setInts(n, "perm", {1, 0});
  NodeAttributes attrs(n);
  EXPECT_EQ(*attrs.getInt("axis"), 2);
  EXPECT_EQ(*attrs.getInt("missing", 7), 7);
  auto wrongType = attrs.getFloat("axis");
  ASSERT_FALSE(wrongType);
  EXPECT_EQ(wrongType.error().message(), "attribute 'axis' must be a float, got an int");
  auto required = attrs.getString("mode");
  ASSERT_FALSE(required);
  EXPECT_EQ(required.error().message(), "the required attribute 'mode' is missing");
  EXPECT_EQ(attrs.unread(), (std::vector<std::string>{"perm"}));
  attrs.ignore("perm");
  EXPECT_TRUE(attrs.unread().empty());
}

}  // namespace
}  // namespace kfuse::onnx_import
