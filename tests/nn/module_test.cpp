// Module: registration, names, traversal, modes, conversion, state dicts, containers, printing
// and summary.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <sstream>

#include "test_util.h"

namespace {

using namespace ox;
using oxtest::caught;
using oxtest::kind_of;

// A module with its own parameter, a buffer and two children, as a user writes one.
class NetImpl : public nn::Module {
 public:
  NetImpl() : Module("Net") {
    scale = register_parameter("scale", ones({1}));
    steps = register_buffer("steps", zeros({}, {.dtype = kI64}));
    fc1 = register_module("fc1", nn::Linear(3, 4));
    body = register_module("body", nn::Sequential(nn::ReLU(), nn::Linear(4, 2)));
  }
  Tensor forward(const Tensor& x) { return body(fc1(x)) * scale; }

  Tensor scale, steps;
  nn::Linear fc1 = nullptr;
  nn::Sequential body = nullptr;
};
OX_MODULE(Net);

std::vector<std::string> keys(const TensorDict& d) { return d.keys(); }

TEST(Module, NamesAreDottedInRegistrationOrder) {
  Net net;
  EXPECT_EQ(keys(net->named_parameters()),
            (std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "body.1.weight",
                                      "body.1.bias"}));
  EXPECT_EQ(keys(net->named_buffers()), std::vector<std::string>{"steps"});
  EXPECT_EQ(keys(net->state_dict()),
            (std::vector<std::string>{"scale", "steps", "fc1.weight", "fc1.bias", "body.1.weight",
                                      "body.1.bias"}));
  EXPECT_EQ(net->parameters().size(), 5u);
  EXPECT_EQ(net->parameters(/*recurse=*/false).size(), 1u);
  EXPECT_EQ(net->children().size(), 2u);
  EXPECT_EQ(net->named_modules().keys(),
            (std::vector<std::string>{"", "fc1", "body", "body.0", "body.1"}));
  EXPECT_EQ(net->modules(/*include_self=*/false).size(), 4u);
  // The handles are the registered tensors themselves.
  EXPECT_EQ(net->fc1->weight.impl(), net->named_parameters()["fc1.weight"].impl());
  for (const Tensor& p : net->parameters()) EXPECT_TRUE(p.requires_grad());
}

TEST(Module, RegistrationErrors) {
  nn::Module m("M");
  m.register_parameter("w", zeros({2}));
  EXPECT_EQ(kind_of([&] { m.register_parameter("w", zeros({2})); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { m.register_buffer("w", zeros({2})); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { m.register_parameter("a.b", zeros({2})); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { m.register_parameter("", zeros({2})); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { m.register_module("w", nn::ReLU()); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { m.register_parameter("u", Tensor()); }), ErrorKind::Value);
  // A parameter made from a tensor with history becomes a leaf.
  Tensor x = ones({2}).requires_grad_();
  const Tensor& p = m.register_parameter("p", x * 2);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
}

TEST(Module, TrainEvalIsRecursive) {
  Net net;
  EXPECT_TRUE(net->is_training());
  net->eval();
  for (const auto& m : net->modules()) EXPECT_FALSE(m->is_training());
  net->train();
  for (const auto& m : net->modules()) EXPECT_TRUE(m->is_training());
}

TEST(Module, ToConvertsInPlace) {
  Net net;
  const Tensor weight = net->fc1->weight;  // another handle to the same parameter
  const std::vector<double> before = weight.to_vector<double>();
  Tensor y = net(ones({2, 3}));
  y.sum().backward();
  net->to(kF64);
  EXPECT_EQ(weight.dtype(), kF64);  // every handle sees the conversion
  EXPECT_EQ(net->fc1->weight.dtype(), kF64);
  EXPECT_EQ(net->fc1->weight.grad().dtype(), kF64);
  EXPECT_EQ(net->steps.dtype(), kI64);  // integer buffers keep their dtype
  EXPECT_TRUE(weight.requires_grad());
  EXPECT_EQ(weight.to_vector<double>(), before);  // f32 values are exact in f64
  // Modules do not promote: an f32 input into the f64 model is refused, naming both dtypes.
  const Error e = caught([&] { net(ones({2, 3})); });
  EXPECT_EQ(e.kind(), ErrorKind::DType);
  EXPECT_TRUE(oxtest::contains(e, "[Linear]")) << e.what();
  EXPECT_TRUE(oxtest::contains(e, "f32") && oxtest::contains(e, "f64")) << e.what();
  EXPECT_EQ(net(ones({2, 3}, {.dtype = kF64})).dtype(), kF64);
  EXPECT_EQ(kind_of([&] { net->to(kI32); }), ErrorKind::DType);
}

TEST(Module, ZeroGrad) {
  nn::Linear fc(2, 2);
  fc(ones({1, 2})).sum().backward();
  ASSERT_TRUE(fc->weight.grad().defined());
  fc->zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(fc->weight.grad().to_vector<float>(), std::vector<float>(4, 0.f));
  fc->zero_grad();
  EXPECT_FALSE(fc->weight.grad().defined());
}

TEST(Module, StateDictRoundTrip) {
  manual_seed(1);
  Net a, b;
  {
    NoGradGuard g;
    a->steps.fill_(7);
  }
  const TensorDict state = a->state_dict();
  EXPECT_FALSE(state["fc1.weight"].requires_grad());  // detached, sharing storage
  EXPECT_TRUE(state["fc1.weight"].is_same_storage(a->fc1->weight));
  const nn::LoadStateResult r = b->load_state_dict(state);
  EXPECT_TRUE(r.missing_keys.empty() && r.unexpected_keys.empty());
  for (const auto& [name, t] : a->state_dict())
    EXPECT_EQ(t.to_vector<double>(), b->state_dict()[name].to_vector<double>()) << name;
  EXPECT_EQ(b->steps.item<int64_t>(), 7);
  EXPECT_FALSE(b->fc1->weight.is_same_storage(a->fc1->weight));  // copied, not shared
  // f64 values load into the f32 model converted.
  TensorDict f64_state;
  for (const auto& [name, t] : state)
    f64_state.insert(name, t.to(is_floating(t.dtype()) ? kF64 : t.dtype()));
  b->load_state_dict(f64_state);
  EXPECT_EQ(b->fc1->weight.dtype(), kF32);
}

TEST(Module, LoadStateDictListsEveryProblem) {
  Net net;
  TensorDict state = net->state_dict();
  state.erase("fc1.bias");
  state.erase("scale");
  state.insert("extra.weight", zeros({1}));
  state.insert_or_assign("body.1.weight", zeros({5, 5}));
  const Error e = caught([&] { net->load_state_dict(state); });
  EXPECT_EQ(e.kind(), ErrorKind::Value);
  for (const char* text : {"[load_state_dict]", "missing keys (2)", "fc1.bias", "scale",
                           "unexpected keys (1)", "extra.weight", "shape mismatch (1)",
                           "body.1.weight: the module has [2, 4], the dict [5, 5]"})
    EXPECT_TRUE(oxtest::contains(e, text)) << text << " not in " << e.what();
  // Nothing was written when refused.
  EXPECT_NE(net->state_dict()["body.1.weight"].to_vector<float>(), std::vector<float>(8, 0.f));

  // Not strict: missing and unexpected keys are reported, shape mismatches still refused.
  state.insert_or_assign("body.1.weight", zeros({2, 4}));
  const nn::LoadStateResult r = net->load_state_dict(state, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"scale", "fc1.bias"}));
  EXPECT_EQ(r.unexpected_keys, std::vector<std::string>{"extra.weight"});
  EXPECT_EQ(net->body->at<nn::LinearImpl>(1)->weight.to_vector<float>(),
            std::vector<float>(8, 0.f));
  state.insert_or_assign("fc1.weight", zeros({1}));
  EXPECT_EQ(kind_of([&] { net->load_state_dict(state, false); }), ErrorKind::Value);
}

TEST(Module, ApplyVisitsChildrenFirst) {
  Net net;
  std::vector<std::string> order;
  net->apply([&](nn::Module& m) { order.push_back(m.type_name()); });
  EXPECT_EQ(order, (std::vector<std::string>{"Linear", "ReLU", "Linear", "Sequential", "Net"}));
}

TEST(Module, PrintsLikePyTorch) {
  Net net;
  std::ostringstream out;
  out << *net;
  EXPECT_EQ(out.str(),
            "Net(\n"
            "  (fc1): Linear(in_features=3, out_features=4, bias=true)\n"
            "  (body): Sequential(\n"
            "    (0): ReLU()\n"
            "    (1): Linear(in_features=4, out_features=2, bias=true)\n"
            "  )\n"
            ")");
  // The holder prints the module too, not the pointer it holds.
  std::ostringstream through_holder;
  through_holder << net;
  EXPECT_EQ(through_holder.str(), out.str());
}

TEST(Containers, SequentialForms) {
  manual_seed(0);
  nn::Linear a(2, 3), b(3, 1);
  nn::Sequential seq(a, nn::Tanh(), b);
  const Tensor x = tensor({{1.f, -2.f}, {0.5f, 3.f}});
  const Tensor expected = b(tanh(a(x)));
  EXPECT_EQ(seq(x).to_vector<float>(), expected.to_vector<float>());
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ(seq->at<nn::LinearImpl>(0), a.ptr());
  EXPECT_EQ(kind_of([&] { seq->at<nn::LinearImpl>(1); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { (*seq)[3]; }), ErrorKind::Index);

  nn::Sequential named({{"first", a}, {"act", nn::Tanh()}, {"last", b}});
  EXPECT_EQ(named(x).to_vector<float>(), expected.to_vector<float>());
  EXPECT_EQ(keys(named->named_parameters()),
            (std::vector<std::string>{"first.weight", "first.bias", "last.weight", "last.bias"}));

  nn::Sequential pushed;
  pushed->push_back(a);
  pushed->push_back("act", nn::Tanh());
  pushed->push_back(nn::Functional([&](const Tensor& t) { return b(t); }));
  EXPECT_EQ(pushed(x).to_vector<float>(), expected.to_vector<float>());
  EXPECT_EQ(pushed->named_children().keys(), (std::vector<std::string>{"0", "act", "2"}));
  // An empty Sequential is the identity.
  EXPECT_EQ(nn::Sequential()(x).to_vector<float>(), x.to_vector<float>());
}

TEST(Containers, ModuleListAndDict) {
  nn::ModuleList list(nn::Linear(2, 2), nn::ReLU());
  list->push_back(nn::Linear(2, 1));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(keys(list->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(list->at<nn::LinearImpl>(2)->out_features, 1);
  size_t count = 0;
  for (const auto& m : *list) count += m != nullptr;
  EXPECT_EQ(count, 3u);

  nn::ModuleDict dict;
  dict->insert("enc", nn::Linear(4, 2));
  dict->insert("act", nn::GELU());
  EXPECT_TRUE(dict->contains("enc"));
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"enc", "act"}));
  EXPECT_EQ(dict->at<nn::LinearImpl>("enc")->in_features, 4);
  EXPECT_EQ(kind_of([&] { (*dict)["nope"]; }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { dict->insert("enc", nn::ReLU()); }), ErrorKind::Value);
}

TEST(Summary, ShowsLayersShapesAndCounts) {
  nn::Sequential model(nn::Conv2d(1, 4, 3), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                       nn::Linear(4 * 3 * 3, 10));
  const std::string table = nn::summary(model, {2, 1, 8, 8});
  for (const char* text :
       {"Conv2d", "[2, 4, 6, 6]", "40", "MaxPool2d", "[2, 4, 3, 3]", "Flatten", "[2, 36]", "Linear",
        "[2, 10]", "370", "Total parameters: 410 (trainable 410)"})
    EXPECT_NE(table.find(text), std::string::npos) << text << " not in\n" << table;
  EXPECT_TRUE(model->is_training());  // restored after the eval-mode pass
}

TEST(Module, TiedWeightsAreListedOnce) {
  nn::Linear shared(3, 3);
  nn::Sequential model(shared, nn::Tanh(), shared);
  // parameters() and named_parameters() list the shared tensors once, under their first names;
  // state_dict keeps every name (PyTorch's rules).
  EXPECT_EQ(keys(model->named_parameters()), (std::vector<std::string>{"0.weight", "0.bias"}));
  EXPECT_EQ(model->parameters().size(), 2u);
  EXPECT_EQ(keys(model->state_dict()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(model->named_modules().keys(), (std::vector<std::string>{"", "0", "1"}));
  int visits = 0;
  model->apply([&](nn::Module&) { ++visits; });
  EXPECT_EQ(visits, 3);
  optim::SGD sgd(model->parameters(), {.lr = 0.1});  // no "parameter given twice" error
  model(ones({1, 3})).sum().backward();
  sgd.step();
  model->to(kF64);  // each tensor converted once
  EXPECT_EQ(shared->weight.dtype(), kF64);
}

TEST(Summary, RestoresEachModulesModeAndTakesAnInputDtype) {
  nn::Sequential model(nn::Embedding(10, 4), nn::Dropout(0.5), nn::Linear(4, 2));
  model->at<nn::DropoutImpl>(1)->eval();  // a child kept in eval mode on purpose
  const std::string table = nn::summary(model, {3, 5}, kI64);
  EXPECT_NE(table.find("[3, 5, 2]"), std::string::npos) << table;
  EXPECT_TRUE(model->is_training());
  EXPECT_FALSE(model->at<nn::DropoutImpl>(1)->is_training());
  EXPECT_TRUE(model->at<nn::LinearImpl>(2)->is_training());
}

TEST(OrderedDict, KeepsOrderAndRefusesDuplicates) {
  TensorDict d;
  d.insert("b", zeros({1}));
  d.insert("a", ones({1}));
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(kind_of([&] { d.insert("a", ones({1})); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { d.at("c"); }), ErrorKind::Index);
  EXPECT_TRUE(d.erase("b"));
  EXPECT_FALSE(d.erase("b"));
  EXPECT_EQ(d.keys(), std::vector<std::string>{"a"});
  EXPECT_EQ(d["a"].item<float>(), 1.f);
}

}  // namespace
