// passes/pack_qkv_projection on the GPU: FusedAttention reading Q, K and V as parts of one packed input
// (q_part / k_part / v_part offsets into a [B, S, 3H, D] tensor, row stride 3E) on each kernel path, and BERT's
// attention block with its three projections packed into one GEMM, in float32 / float16 / bfloat16 CUDA engines
// against the float32 CPU reference. ViT's packed in-projection: CudaXfmrRewrites.*. Skips without a GPU.
#include "cuda_backend_test_util.h"
#include "passes/optimize.h"
#include "qkv_test_util.h"

namespace kilnrt::cudatest {
namespace {

void set_precision(ir::Graph& g, const char* prec) {
  if (!*prec) return;
  for (ir::Node& n : g.nodes) {
    n.attrs[backends::cuda::kPrecisionAttr].kind = ir::Attribute::Kind::kString;
    n.attrs[backends::cuda::kPrecisionAttr].s = prec;
  }
}

const Precision16* precision(const char* prec) {
  for (const Precision16& p : kPrecisions16)
    if (std::string(p.name) == prec) return &p;
  return nullptr;
}

// FusedAttention(p, p, p [, mask]) with parts [0, H), [H, 2H), [2H, 3H) of p [B, S, 3H, D] along axis 2 and the
// BERT perms (0, 2, 1, 3): Q, K, V [B, H, S, D] read in place, the output [B, S, H, D].
ir::Graph packed_attention_graph(int64_t B, int64_t S, int64_t H, int64_t D, bool mask) {
  ir::Graph g = attntest::packed_attention_graph("packed_attention", "packed_attention", B, S, H, D, false, mask);
  passes::infer_shapes(g);
  return g;
}

TEST(CudaQkvPacking, PackedAttentionOnEachKernelPathMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  // D = 64 and 32: the mma.sync kernel in 16 bits (16-byte aligned rows: part offsets H * D, row stride 3 H D);
  // D = 48: WMMA; D = 40: the SIMT kernel. Float32: the SIMT kernel for all.
  struct Case {
    int64_t h, d;
    bool mask;
  };
  for (const Case& c : {Case{2, 64, true}, Case{3, 32, false}, Case{2, 48, true}, Case{3, 40, false}}) {
    SCOPED_TRACE("H " + std::to_string(c.h) + ", D " + std::to_string(c.d));
    const int64_t B = 2, S = 77;
    const ir::Graph g = packed_attention_graph(B, S, c.h, c.d, c.mask);
    std::map<std::string, Tensor> feeds = {{"p", passtest::random_tensor({B, S, 3 * c.h, c.d}, 11)}};
    if (c.mask) feeds["mask"] = passtest::random_tensor({B, 1, 1, S}, 12, -4.f, 0.f);
    for (const char* prec : {"", "fp16", "bf16"}) {
      SCOPED_TRACE(*prec ? prec : "fp32");
      const Precision16* p = precision(prec);
      std::map<std::string, Tensor> in;
      for (const auto& [name, t] : feeds) in[name] = p ? rounded_to_16bit(t, p->dt) : t;
      const Tensor want = run_cpu(g, in).at("y");
      ir::Graph gp = g;
      set_precision(gp, prec);
      const double u = p ? p->u : 1e-6;
      expect_tensors_close(run_cuda(gp, in).at("y"), want, 16 * u, 16 * u);
    }
  }
}

TEST(CudaQkvPacking, BertBlockWithOnePackedGemmMatchesUnfusedCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (int64_t d : {64, 40}) {
    SCOPED_TRACE("D " + std::to_string(d));
    attntest::Builder b;
    const ir::Graph before = attntest::bert_projected_block(b, 3, 37, 2, d, true, "x", /*pad_last_entry=*/false);
    const auto want = run_cpu(before, b.feeds).at("y");
    for (const char* prec : {"", "fp16", "bf16"}) {
      SCOPED_TRACE(*prec ? prec : "fp32");
      ir::Graph g = before;
      passes::optimize_graph(g);
      size_t fused = 0, gemms = 0, packed = 0;
      for (const ir::Node& n : g.nodes) {
        fused += n.op_type == "FusedAttention";
        packed += n.op_type == "FusedAttention" && n.attrs.count("q_part");
        gemms += n.op_type == "FusedMatMul" || n.op_type == "MatMul";
      }
      EXPECT_EQ(fused, 1u);
      EXPECT_EQ(packed, 1u);
      EXPECT_EQ(gemms, 1u) << g.to_string(false);
      set_precision(g, prec);
      passes::infer_shapes(g);
      // Projection sums of 2 d products (|x| <= 1, |w| <= 0.3), then attention: outputs of order 1.
      const double tol = !*prec ? 1e-4 : std::string(prec) == "fp16" ? 0.02 : 0.1;
      expect_tensors_close(run_cuda(g, b.feeds).at("y"), want, tol, 2e-2);
    }
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
