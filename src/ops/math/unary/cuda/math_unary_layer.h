// The CUDA layer of the float32 math unary ops (Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Shrink),
// IsNaN / IsInf (float32, 16-bit and float64) and Not (bool): math_unary_layer.cc registers the unary ops,
// ops/math/logic/cuda/not_layer.cc registers Not with the same layer. Kernels: math_unary.cu, kernels::nan_inf.
#pragma once
#include <map>
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ops/math/unary/cuda/math_unary_kernels.h"
#include "ops/math/unary/cuda/nan_inf_kernels.h"

namespace kilnrt::backends::cuda {

namespace k = kilnrt::cuda::kernels;

inline k::XUnary xunary_of(const std::string& op) {
  static const std::map<std::string, k::XUnary> ops = {
      {"Tan", k::XUnary::kTan},       {"Asin", k::XUnary::kAsin},   {"Acos", k::XUnary::kAcos},
      {"Atan", k::XUnary::kAtan},     {"Sinh", k::XUnary::kSinh},   {"Cosh", k::XUnary::kCosh},
      {"Asinh", k::XUnary::kAsinh},   {"Acosh", k::XUnary::kAcosh}, {"Atanh", k::XUnary::kAtanh},
      {"Shrink", k::XUnary::kShrink}, {"IsNaN", k::XUnary::kIsNaN}, {"IsInf", k::XUnary::kIsInf},
      {"Not", k::XUnary::kNot}};
  return ops.at(op);
}

class XUnaryLayer final : public CudaLayer {
 public:
  explicit XUnaryLayer(const ir::Node& n) : name_(n.describe()), op_(xunary_of(n.op_type)) {
    if (op_ == k::XUnary::kShrink) {
      a_ = n.attr_float("lambd", 0.5f);
      b_ = n.attr_float("bias", 0.0f);
    } else if (op_ == k::XUnary::kIsInf) {
      a_ = n.attr_int("detect_positive", 1) != 0 ? 1.f : 0.f;
      b_ = n.attr_int("detect_negative", 1) != 0 ? 1.f : 0.f;
    }
  }
  std::string tactic() const override { return "kernel:math-unary"; }
  void enqueue(LayerLaunch& l) override {
    const DType t = l.inputs[0].dtype;
    if (t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat64) {  // IsNaN / IsInf
      const int code = t == DType::kFloat16 ? 4 : t == DType::kBFloat16 ? 5 : 12;
      check_launch(kilnrt::cuda::kernels::nan_inf(code, l.inputs[0].data, static_cast<uint8_t*>(l.outputs[0].data),
                                                  l.outputs[0].numel(), op_ == k::XUnary::kIsNaN, a_ != 0.f, b_ != 0.f,
                                                  l.stream),
                   name_, "nan_inf");
      return;
    }
    check_launch(k::xunary(op_, l.inputs[0].data, l.outputs[0].data, l.outputs[0].numel(), a_, b_, l.stream), name_,
                 "xunary");
  }

 private:
  std::string name_;
  k::XUnary op_;
  float a_ = 0.f, b_ = 0.f;
};

}  // namespace kilnrt::backends::cuda
