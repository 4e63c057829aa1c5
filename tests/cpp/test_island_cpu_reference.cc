// CPU reference fixes found while closing CUDA gaps: GridSample's opset-20 mode names ("linear", "cubic")
// and GRU with linear_before_reset=0, whose candidate gate multiplies Rh by (r (.) H_{t-1}) element-wise (the k-th
// hidden unit's reset gate times h[k]), not by the current unit's reset gate. Expected values were computed outside
// kilnrt: GridSample with torch.nn.functional.grid_sample (float64), GRU with a NumPy transcription of the ONNX
// formulas (see the comments at each table).
#include <cmath>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

// X = 1..12 as [1, 1, 3, 4]; grid [1, 2, 3, 2]: corners, inside points, and points outside on both sides.
const std::vector<float> kGridX = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
const std::vector<float> kGrid = {-1, -1, 1, 1, 0.3f, -0.45f, -1.3f, 0.8f, 1.7f, -1.6f, 0.05f, 0.55f};

struct GridCase {
  const char* mode;  // opset 16 name
  const char* pad;
  int align;
  std::vector<double> want;
};

// torch.nn.functional.grid_sample(x, g, mode, padding_mode, align_corners) in float64 (torch 1.13).
const GridCase kGridCases[] = {
    {"bilinear", "zeros", 0, {0.25, 3, 4.4, 0, 0, 9.9}},
    {"bilinear", "zeros", 1, {1, 12, 5.15, 4.51, 0, 8.775}},
    {"bilinear", "border", 0, {1, 12, 4.4, 9, 4, 9.9}},
    {"bilinear", "border", 1, {1, 12, 5.15, 8.2, 4, 8.775}},
    {"bilinear", "reflection", 0, {1, 12, 4.4, 9.1, 4.7, 9.9}},
    {"bilinear", "reflection", 1, {1, 12, 5.15, 8.65, 5.35, 8.775}},
    {"bicubic", "zeros", 0, {0.015625, 3.234375, 4.53791907, -0.47385, 0.002916, 10.9904162}},
    {"bicubic", "zeros", 1, {1, 12, 4.98963171, 5.03617675, -0.0427785, 10.1933171}},
    {"bicubic", "border", 0, {0.53125, 12.46875, 4.15207813, 9.384, 4, 10.0456406}},
    {"bicubic", "border", 1, {1, 12, 4.745, 8.28990625, 3.712, 9.11554688}},
    {"bicubic", "reflection", 0, {0.0625, 12.9375, 4.15207813, 9.55525, 4.40675, 10.0456406}},
    {"bicubic", "reflection", 1, {1, 12, 4.410875, 9.0341875, 4.656625, 9.52392188}},
    {"nearest", "zeros", 0, {1, 0, 3, 0, 0, 11}},
    {"nearest", "zeros", 1, {1, 12, 7, 9, 0, 11}},
    {"nearest", "border", 0, {1, 12, 3, 9, 4, 11}},
    {"nearest", "border", 1, {1, 12, 7, 9, 4, 11}},
    {"nearest", "reflection", 0, {1, 12, 3, 9, 3, 11}},
    {"nearest", "reflection", 1, {1, 12, 7, 9, 7, 11}},
};

std::string opset20_name(const std::string& m) { return m == "bilinear" ? "linear" : m == "bicubic" ? "cubic" : m; }

TEST(IslandCpuReference, GridSampleModesOpset16And20Names) {
  const Tensor x = f32(kGridX, {1, 1, 3, 4});
  const Tensor grid = f32(kGrid, {1, 2, 3, 2});
  for (const GridCase& c : kGridCases) {
    for (int64_t opset : {16, 20, 22}) {
      const std::string mode = opset >= 20 ? opset20_name(c.mode) : std::string(c.mode);
      SCOPED_TRACE(mode + " " + c.pad + " align_corners=" + std::to_string(c.align) + " opset " +
                   std::to_string(opset));
      Node n("GridSample", 2);
      n.s("mode", mode).s("padding_mode", c.pad).i("align_corners", c.align);
      const Tensor y = run1(n.node, {&x, &grid}, opset);
      EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 3}));
      expect_values(y, c.want, 1e-6);
    }
  }
  // Opset 20's default mode is "linear": no attribute at all gives the bilinear / zeros / align 0 row.
  Node d("GridSample", 2);
  expect_values(run1(d.node, {&x, &grid}, 20), kGridCases[0].want, 1e-6);
  Node bad("GridSample", 2);
  bad.s("mode", "trilinear");
  expect_error_naming([&] { run1(bad.node, {&x, &grid}, 20); }, bad.node, ErrorCode::kInvalidModel, "trilinear");
}

// GRU, seq 3, batch 2, input 2, hidden 3, linear_before_reset=0. Inputs are closed-form so that the NumPy script
// below rebuilds them; R is not constant, so the reset gates differ between hidden units (constant weights, as in
// ONNX's own test_gru_defaults, hide the (r (.) H) vs r * (H Rh^T) difference).
//   X[i] = 0.5 sin(0.7 i + 0.1), W[i] = 0.9 cos(0.37 i), R[i] = 1.1 sin(0.53 i + 0.2), B[i] = 0.3 cos(0.29 i + 0.4)
//   z = sig(x Wz^T + h Rz^T + Wbz + Rbz); r = sig(x Wr^T + h Rr^T + Wbr + Rbr)
//   hh = tanh(x Wh^T + (r * h) Rh^T + Rbh + Wbh); h = (1 - z) hh + z h
std::vector<float> closed_form(int64_t n, double a, double f, double p, bool cosine) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        static_cast<float>(a * (cosine ? std::cos(f * double(i) + p) : std::sin(f * double(i) + p)));
  return v;
}

TEST(IslandCpuReference, GruLinearBeforeResetZeroUsesPerUnitResetGate) {
  const int64_t S = 3, B = 2, I = 2, H = 3;
  const Tensor x = f32(closed_form(S * B * I, 0.5, 0.7, 0.1, false), {S, B, I});
  const Tensor w = f32(closed_form(3 * H * I, 0.9, 0.37, 0.0, true), {1, 3 * H, I});
  const Tensor r = f32(closed_form(3 * H * H, 1.1, 0.53, 0.2, false), {1, 3 * H, H});
  const Tensor b = f32(closed_form(6 * H, 0.3, 0.29, 0.4, true), {1, 6 * H});
  const std::vector<double> forward = {-0.054657198, 0.0607705035, 0.141520965,   -0.0733974949, 0.129900101,
                                       0.32097522,   -0.163065658, -0.0894871042, 0.0030005291,  -0.240760269,
                                       -0.315969293, -0.214015796, -0.0767076947, -0.0830314831, -0.168872575,
                                       -0.158626032, 0.120276829,  0.0718824272};
  const std::vector<double> reverse = {-0.0360590836, 0.043873021,   -0.0553695275, -0.178776063, 0.105406133,
                                       0.0759666964,  -0.0676988655, -0.13827751,   -0.216825771, -0.238875691,
                                       -0.31424451,   -0.214406472,  -0.0435313751, -0.111532585, -0.14560455,
                                       -0.0627541574, 0.137231461,   0.316143884};
  for (const char* dir : {"forward", "reverse"}) {
    SCOPED_TRACE(dir);
    Node n("GRU", 4, 2);
    n.i("hidden_size", H).s("direction", dir);  // linear_before_reset defaults to 0
    const std::vector<Tensor> out = run(n.node, {&x, &w, &r, &b}, 14);
    ASSERT_EQ(out[0].shape(), (Shape{S, 1, B, H}));
    const std::vector<double>& want = std::string(dir) == "forward" ? forward : reverse;
    expect_values(out[0], want, 2e-6);
    // Y_h: the last step's state (t = S-1 forward, t = 0 reverse).
    const size_t last = std::string(dir) == "forward" ? static_cast<size_t>((S - 1) * B * H) : 0;
    expect_values(out[1], std::vector<double>(want.begin() + long(last), want.begin() + long(last + B * H)), 2e-6);
  }
}

}  // namespace
}  // namespace kilnrt::ops::optest
