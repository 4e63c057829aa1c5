// LayerNormalization on the GPU against the CPU reference: the vectorized kernel (nn/normalization/cuda/layernorm.cu:
// a group of 1..32 lanes per row, 16-byte loads) for the row widths of the zoo's transformers and ConvNeXt (96, 192,
// 384, 768) and around its limits (8 values = one vector, 1024 / 2048, odd widths and widths above the limit that
// take the older kernels), float32 / float16 / bfloat16, with and without bias, ONNX and com.kilnrt domains; and the
// kernel entry point itself: which calls it takes (aligned, a multiple of 16 bytes) and refuses (-1, nothing
// launched), the Mean / InvStdDev outputs, row counts that leave lanes of the last warp idle. Skips without a GPU.
#include <cmath>
#include <cstring>

#include "attention_test_util.h"
#include "ops/nn/normalization/cuda/layernorm.h"
#include "cuda_backend_test_util.h"

namespace kilnrt::cudatest {
namespace {

using attntest::random_tensor;

struct Prec {
  const char* name;  // "" = float32
  DType dt;
  double u;  // unit roundoff of the storage dtype
};
const Prec kPrecs[] = {
    {"", DType::kFloat32, 0.0}, {"fp16", DType::kFloat16, 1.0 / 2048}, {"bf16", DType::kBFloat16, 1.0 / 256}};

float round_to(float v, DType dt) {
  if (dt == DType::kFloat16) return half_to_float(float_to_half(v));
  if (dt == DType::kBFloat16) return bfloat16_to_float(float_to_bfloat16(v));
  return v;
}
Tensor rounded(const Tensor& t, DType dt) {
  Tensor r = Tensor::from_data(t.raw(), t.dtype(), t.shape());
  for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] = round_to(r.data<float>()[i], dt);
  return r;
}

void run_graph_case(const Prec& p, const Shape& xs, int axis, bool bias, bool kilnrt_domain) {
  SCOPED_TRACE(std::string(*p.name ? p.name : "fp32") + " x " + shape_to_string(xs) + " axis " + std::to_string(axis) +
               (bias ? " bias" : "") + (kilnrt_domain ? " com.kilnrt" : " onnx"));
  Shape norm(xs.begin() + (axis < 0 ? static_cast<int64_t>(xs.size()) + axis : axis), xs.end());
  attntest::Builder b;
  // An offset mean (3) makes a wrong mean or a one-pass variance visible.
  b.input("x", xs, 1.f, 5.f);
  std::vector<std::string> ins = {"x", b.constant("g", rounded(random_tensor(norm, 41, 0.5f, 1.5f), p.dt))};
  if (bias) ins.push_back(b.constant("bb", rounded(random_tensor(norm, 42), p.dt)));
  ir::Node& n = b.node("LayerNormalization", ins, "y");
  if (kilnrt_domain) {
    n.domain = "com.kilnrt";
    b.g.opsets["com.kilnrt"] = 1;
  }
  n.attrs["epsilon"].kind = ir::Attribute::Kind::kFloat;
  n.attrs["epsilon"].f = 1e-5f;
  n.attrs["axis"].kind = ir::Attribute::Kind::kInt;
  n.attrs["axis"].i = axis;
  if (*p.name) {
    n.attrs["kilnrt_precision"].kind = ir::Attribute::Kind::kString;
    n.attrs["kilnrt_precision"].s = p.name;
  }
  b.output("y");
  ir::Graph g = b.finish();
  std::map<std::string, Tensor> feeds = {{"x", rounded(b.feeds["x"], p.dt)}};
  const double tol = p.u == 0 ? 3e-5 : 8 * p.u;
  expect_tensors_close(run_cuda(g, feeds).at("y"), run_cpu(g, feeds).at("y"), tol, tol);
}

TEST(CudaLayerNorm, RowWidthsPrecisionsAndDomainsMatchCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  // Widths: one vector (8), ConvNeXt's 96 / 192 / 384 (several rows per warp), BERT / ViT's 768, the vector path's
  // limits (1024: float32's last; 2048: 16-bit's last), 1000 (125 vectors of 16-bit: 4 per lane, some lanes short),
  // 1001 (odd: the older warp kernel), 2056 (above both limits) and 3072 (block per row). Row counts that are not
  // multiples of the rows per block.
  for (const Prec& p : kPrecs) {
    for (int64_t w : {8, 96, 192, 384, 768, 1000, 1001, 1024, 2048, 2056, 3072}) {
      run_graph_case(p, {3, 111, w}, -1, w % 3 == 0, (w & 1) == 0 && w % 16 != 0);
      run_graph_case(p, {1, w}, -1, true, false);
    }
    // Normalizing over the last two axes: rows of 12 x 64 = 768 values.
    run_graph_case(p, {5, 12, 64}, 1, true, false);
  }
}

// Host reference in double of one row-major [rows, n] LayerNorm.
void reference(const std::vector<float>& x, const std::vector<float>& g, const std::vector<float>& bb, int64_t rows,
               int64_t n, std::vector<double>* y, std::vector<double>* mean, std::vector<double>* inv) {
  y->assign(static_cast<size_t>(rows * n), 0.0);
  mean->assign(static_cast<size_t>(rows), 0.0);
  inv->assign(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < n; ++i) s += x[r * n + i];
    const double m = s / n;
    for (int64_t i = 0; i < n; ++i) q += (x[r * n + i] - m) * (x[r * n + i] - m);
    const double is = 1.0 / std::sqrt(q / n + 1e-5);
    (*mean)[r] = m;
    (*inv)[r] = is;
    for (int64_t i = 0; i < n; ++i) (*y)[r * n + i] = (x[r * n + i] - m) * is * g[i] + bb[i];
  }
}

std::vector<uint16_t> to16(const std::vector<float>& v, DType dt) {
  std::vector<uint16_t> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = dt == DType::kFloat16 ? float_to_half(v[i]) : float_to_bfloat16(v[i]);
  return o;
}
float from16(uint16_t v, DType dt) { return dt == DType::kFloat16 ? half_to_float(v) : bfloat16_to_float(v); }

TEST(CudaLayerNorm, VectorKernelTakesAlignedRowsAndRefusesTheRest) {
  KILNRT_SKIP_WITHOUT_GPU();
  namespace k = kilnrt::cuda::kernels;
  const int dev = 0;
  kilnrt::cuda::ContextGuard guard(dev);
  kilnrt::cuda::Stream stream(dev);
  struct Case {
    DType dt;
    int64_t rows, n;
  };
  // Row counts leave part of the last block's groups without a row (they must still join the shuffles). 16-bit rows
  // of 768 / 1024 values without statistics outputs run on persistent warps: 4000+ rows give each warp several (an
  // H100 runs 2 x 132 blocks of 8); those cases also run that way below.
  const Case cases[] = {{DType::kFloat16, 1001, 96},    {DType::kFloat16, 77, 768},  {DType::kBFloat16, 33, 192},
                        {DType::kFloat16, 5, 2048},     {DType::kFloat32, 19, 1024}, {DType::kFloat32, 300, 4},
                        {DType::kBFloat16, 9, 8},       {DType::kFloat32, 3, 640},   {DType::kFloat16, 5003, 768},
                        {DType::kBFloat16, 4401, 1024}, {DType::kFloat32, 4099, 512}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dt)) + " rows " + std::to_string(c.rows) + " n " + std::to_string(c.n));
    const size_t es = c.dt == DType::kFloat32 ? 4 : 2, count = static_cast<size_t>(c.rows * c.n);
    std::vector<float> x(count), g(static_cast<size_t>(c.n)), bb(static_cast<size_t>(c.n));
    const Tensor rx = random_tensor({c.rows, c.n}, 5, -1.f, 7.f), rg = random_tensor({c.n}, 6, 0.5f, 1.5f),
                 rb = random_tensor({c.n}, 7);
    for (size_t i = 0; i < count; ++i) x[i] = round_to(rx.data<float>()[i], c.dt);
    for (size_t i = 0; i < g.size(); ++i) g[i] = round_to(rg.data<float>()[i], c.dt);
    for (size_t i = 0; i < bb.size(); ++i) bb[i] = round_to(rb.data<float>()[i], c.dt);
    // One spare element in front of x and y: +1 element gives the misaligned pointers of the refusal check.
    kilnrt::cuda::DeviceBuffer dx(dev, (count + 8) * es), dy(dev, (count + 8) * es), dg(dev, g.size() * es),
        db(dev, bb.size() * es), dm(dev, static_cast<size_t>(c.rows) * 4), di(dev, static_cast<size_t>(c.rows) * 4);
    auto upload = [&](kilnrt::cuda::DeviceBuffer& d, const std::vector<float>& v, size_t offset_elems) {
      if (c.dt == DType::kFloat32) {
        d.copy_from_host_async(v.data(), v.size() * 4, stream.get(), offset_elems * 4);
      } else {
        const std::vector<uint16_t> h = to16(v, c.dt);
        d.copy_from_host_async(h.data(), h.size() * 2, stream.get(), offset_elems * 2);
      }
      stream.synchronize();  // the host vector dies at the end of this call
    };
    upload(dx, x, 0);
    upload(dg, g, 0);
    upload(db, bb, 0);
    const int dt = c.dt == DType::kFloat32 ? 0 : c.dt == DType::kFloat16 ? 1 : 2;
    ASSERT_EQ(k::layernorm_vec(dt, dx.data(), dg.data(), db.data(), dy.data(), static_cast<float*>(dm.data()),
                               static_cast<float*>(di.data()), c.rows, c.n, 1e-5f, stream.get()),
              0)
        << "the vector kernel must take an aligned row of a multiple of 16 bytes";
    std::vector<unsigned char> hy(count * es);
    std::vector<float> hm(static_cast<size_t>(c.rows)), hi(static_cast<size_t>(c.rows));
    dy.copy_to_host_async(hy.data(), hy.size(), stream.get());
    dm.copy_to_host_async(hm.data(), hm.size() * 4, stream.get());
    di.copy_to_host_async(hi.data(), hi.size() * 4, stream.get());
    stream.synchronize();
    std::vector<double> wy, wm, wi;
    reference(x, g, bb, c.rows, c.n, &wy, &wm, &wi);
    const double u = c.dt == DType::kFloat32 ? 0.0 : c.dt == DType::kFloat16 ? 1.0 / 2048 : 1.0 / 256;
    const double tol = u == 0 ? 3e-5 : 8 * u;
    int bad = 0;
    const auto check_y = [&](const std::vector<unsigned char>& out) {
      for (size_t i = 0; i < count && bad < 5; ++i) {
        float got;
        if (c.dt == DType::kFloat32) {
          std::memcpy(&got, &out[i * 4], 4);
        } else {
          uint16_t h;
          std::memcpy(&h, &out[i * 2], 2);
          got = from16(h, c.dt);
        }
        if (!(std::fabs(got - wy[i]) <= tol + tol * std::fabs(wy[i]))) {
          ADD_FAILURE() << "y[" << i << "] = " << got << ", want " << wy[i];
          ++bad;
        }
      }
    };
    check_y(hy);
    for (size_t r = 0; r < hm.size() && bad < 5; ++r) {
      if (!(std::fabs(hm[r] - wm[r]) <= 1e-5 + 1e-5 * std::fabs(wm[r])) ||
          !(std::fabs(hi[r] - wi[r]) <= 1e-4 * std::fabs(wi[r]))) {
        ADD_FAILURE() << "row " << r << ": mean " << hm[r] << " / " << wm[r] << ", inv_std " << hi[r] << " / " << wi[r];
        ++bad;
      }
    }
    if (c.rows >= 4000) {
      // Without statistics outputs (the persistent kernel for 16-bit rows of 768 / 1024 values): against the
      // reference, then in place (x is y) for the same bytes: a prefetched row is never one being written.
      ASSERT_EQ(k::layernorm_vec(dt, dx.data(), dg.data(), db.data(), dy.data(), nullptr, nullptr, c.rows, c.n, 1e-5f,
                                 stream.get()),
                0);
      std::vector<unsigned char> plain(count * es), in_place(count * es);
      dy.copy_to_host_async(plain.data(), plain.size(), stream.get());
      stream.synchronize();
      check_y(plain);
      {  // KILNRT_LAYERNORM_ROWS=0: the one-row-per-warp kernel, the same results within the tolerance
        kilnrt::cudatest::ScopedEnv off("KILNRT_LAYERNORM_ROWS", "0");
        ASSERT_EQ(k::layernorm_vec(dt, dx.data(), dg.data(), db.data(), dy.data(), nullptr, nullptr, c.rows, c.n, 1e-5f,
                                   stream.get()),
                  0);
        std::vector<unsigned char> switched(count * es);
        dy.copy_to_host_async(switched.data(), switched.size(), stream.get());
        stream.synchronize();
        check_y(switched);
      }
      ASSERT_EQ(k::layernorm_vec(dt, dx.data(), dg.data(), db.data(), dx.data(), nullptr, nullptr, c.rows, c.n, 1e-5f,
                                 stream.get()),
                0);
      dx.copy_to_host_async(in_place.data(), in_place.size(), stream.get());
      stream.synchronize();
      EXPECT_TRUE(in_place == plain) << "in-place LayerNorm differs from the out-of-place one";
    }
    // Refusals: nothing launched, -1 (the caller then takes the older kernels).
    char* ox = static_cast<char*>(dx.data()) + es;  // one element off 16-byte alignment
    EXPECT_EQ(
        k::layernorm_vec(dt, ox, dg.data(), db.data(), dy.data(), nullptr, nullptr, c.rows, c.n, 1e-5f, stream.get()),
        -1);
    EXPECT_EQ(k::layernorm_vec(dt, dx.data(), dg.data(), db.data(), dy.data(), nullptr, nullptr, c.rows, c.n - 1, 1e-5f,
                               stream.get()),
              -1);
  }
  stream.synchronize();
  // Rows above the limit (2048 halves / 1024 floats) go to the older kernels.
  kilnrt::cuda::DeviceBuffer big(dev, 4 * 2064);
  EXPECT_EQ(
      k::layernorm_vec(1, big.data(), nullptr, nullptr, big.data(), nullptr, nullptr, 1, 2056, 1e-5f, stream.get()),
      -1);
  EXPECT_EQ(
      k::layernorm_vec(0, big.data(), nullptr, nullptr, big.data(), nullptr, nullptr, 1, 1028, 1e-5f, stream.get()),
      -1);
}

}  // namespace
}  // namespace kilnrt::cudatest
