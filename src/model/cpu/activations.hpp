// Scalar activations in fp32 exactly as spec/model.md writes them.
#pragma once

#include <cmath>

namespace cua_s1::cpu {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

// log(1 + e^x), linear above the threshold 20 (torch.nn.functional.softplus defaults).
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (vision block MLPs).
inline float gelu_tanh(float x) {
  constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

// Exact GELU 0.5 x (1 + erf(x / sqrt 2)) (vision merger).
inline float gelu_erf(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f)); }

}  // namespace cua_s1::cpu
