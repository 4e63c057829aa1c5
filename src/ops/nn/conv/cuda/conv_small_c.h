// Convolutions with few input channels (C <= 4: the RGB stems of CNNs and ViTs) in 16-bit CUDA engines. cuDNN's
// 16-bit kernels are slow there (H100 fp16 b32: resnet50's 7x7/2 stem 0.47 ms, vit_b_16's 16x16/16 patch conv
// 0.32 ms), so ConvLayer (conv_layer.cc) hands such a node to SmallCConv first. Two kinds of path:
//  - kIm2colGemm (any geometry; for kernel == stride, no padding, no dilation — ViT / ConvNeXt patchify — the
//    im2col is a pure rearrangement): an im2col (conv_small_c.cu) into [N*P, C*KH*KW] in the workspace,
//    then cuBLASLt GEMMs against the [K, C*KH*KW] weights: NHWC output as [N*P, K] GEMMs with the bias (or a
//    FusedConv's bias + relu without residual) in cuBLASLt's epilogue, NCHW output as strided batched GEMMs
//    (K x P per image);
//  - kPack4Cudnn / kPack8Cudnn (NHWC output): the input packed into NHWC with 4 or 8 channels (zeros beyond C) in
//    the workspace, and cuDNN's NHWC tensor-core convolution on weights zero-padded the same way at load.
//  - kDirectMma (K % 16 == 0, K <= 128, C*KH*KW <= 512, no residual): small_c_direct.cu, an implicit GEMM
//    on tensor cores with the im2col in shared memory and the bias + activation applied before the one store (NCHW
//    or NHWC output, no workspace).
//  - kStemMma (even horizontal stride, K = 16 / 32 / 48 / 64, KW + pw % 2 <= 8, no residual): small_c_stem.cu,
//    an implicit GEMM on mma.sync that copies the input rows of a tile of pixels into shared memory once and reads
//    each A register (two adjacent taps) as one 32-bit shared load; bias + activation before one NHWC / NCHW store:
//    the stems of resnet50 (7x7/2, 3 -> 64), efficientnet (3x3/2, 3 -> 32) and mobilenet (3x3/2, 3 -> 16).
// The GEMM and pack paths work on images in chunks when the batch does not fit the workspace. Numerics: 16-bit
// operands, float32 accumulation, like the cuDNN path. Which path: fixed_rule() (KILNRT_CUDA_SMALL_C overrides, read at
// layer creation: 0 off, gemm, pack4, pack8, direct, stem; KILNRT_CUDA_CONV=direct turns it off too;
// KILNRT_CUDA_SMALL_C_STEM=0 leaves the stem kernel out of the rule); a tactic timer can compare
// applicable_paths() on a layer via set_path().
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/conv/cuda/conv_small_c_kernels.h"

namespace kilnrt::backends::cuda {

enum class SmallCPath { kIm2colGemm, kPack4Cudnn, kPack8Cudnn, kDirectMma, kStemMma };
const char* small_c_path_name(SmallCPath p);  // "im2col-gemm", "pack4-cudnn", "pack8-cudnn", "direct-mma", "stem-mma"

class SmallCConv {
 public:
  // Null when no small-C path applies: not an fp16 / bf16 node, not a 2-D convolution with constant float32
  // weights [K, C, KH, KW] with C <= 4 and group 1, or disabled (KILNRT_CUDA_SMALL_C=0). `cudnn`: cuDNN usable.
  static std::unique_ptr<SmallCConv> create(const LayerCreateArgs& a, bool cudnn);
  ~SmallCConv();

  // The paths this node can take (the pack ones need cuDNN).
  static std::vector<SmallCPath> applicable_paths(const ir::Node& node, bool cudnn);
  // Kernel == stride, no padding, no dilation (ViT / ConvNeXt patch embeddings).
  static bool is_patchify(const ir::Node& node);
  // Without timing: im2col GEMM for patchify geometries (faster on an H100, fp16, 2026-11-22),
  // else the stem kernel where its geometry applies (K is checked with the weights at create), else the direct
  // kernel for windows of at most 16 taps, else pack to 8 channels for cuDNN (im2col GEMM without cuDNN).
  static SmallCPath fixed_rule(const ir::Node& node, bool cudnn);
  SmallCPath path() const { return path_; }
  // Switches to another applicable path (uploading its weights if `a` allows); false when it cannot.
  bool set_path(SmallCPath p, const LayerCreateArgs& a);

  std::string tactic() const;
  // Runs the convolution of launch `l` (geometry p, symmetric padding or not) and returns true, or returns false
  // without enqueuing anything when this launch is not for it (float32 storage, asymmetric pads, an NCHW output
  // for the pack paths, a workspace too small for one image): the caller then takes its usual path. The output
  // has no bias / residual / activation unless *bias was consumed (set to null: the NHWC GEMM adds it) or *done is
  // set (the NHWC GEMM applied a FusedConv's whole epilogue: bias + relu, no residual).
  bool run(LayerLaunch& l, const kilnrt::cuda::kernels::Conv2d& p, bool symmetric, const void** bias, bool* done);

 private:
  struct CudnnSet;  // descriptors + algorithm for one chunk shape
  SmallCConv(const ir::Node& node, bool bf16, bool cudnn);
  bool upload_weights(SmallCPath p, const LayerCreateArgs& a);
  bool run_gemm(LayerLaunch& l, const kilnrt::cuda::kernels::Conv2d& p, const void** bias, bool* done);
  bool run_pack(LayerLaunch& l, const kilnrt::cuda::kernels::Conv2d& p);
  bool run_direct(LayerLaunch& l, const kilnrt::cuda::kernels::Conv2d& p, const void** bias, bool* done);
  bool run_stem(LayerLaunch& l, const kilnrt::cuda::kernels::Conv2d& p, const void** bias, bool* done);
  static bool direct_shape_ok(const ir::Node& node, const Tensor& w);
  // The stem kernel's weight layout for the node's attributes (static pads, even stride); false when it does not
  // apply.
  static bool stem_layout(const ir::Node& node, int64_t c, int kh, int kw,
                          kilnrt::cuda::kernels::SmallCStemLayout* out);
  CudnnSet* cudnn_set(LayerLaunch& l, const kilnrt::cuda::kernels::Conv2d& p, int64_t count, size_t ws_bytes);

  const ir::Node& node_;
  std::string name_;
  bool bf16_ = false;
  bool cudnn_ = false;
  bool relu_only_ = false;  // FusedConv with relu and no residual: cuBLASLt's RELU(_BIAS) epilogue does it all
  int act_ = 0;             // FusedConv's activation (ops::nn::FusedActivation) and parameters: the direct kernel
  float act_a_ = 0.f, act_b_ = 0.f;
  bool residual_ = false;  // FusedConv with a residual input: not the direct kernel
  SmallCPath path_ = SmallCPath::kIm2colGemm;
  const void* gemm_w_ = nullptr;  // [K, kc_pad] 16-bit, j = (c*KH + ky)*KW + kx, zeros beyond C*KH*KW
  int64_t kc_pad_ = 0;            // a multiple of 8 (GEMM path) or 16 (direct path)
  const void* stem_w_ = nullptr;  // [K, stem_.kpad] 16-bit (conv_small_c_kernels.h: SmallCStemLayout)
  kilnrt::cuda::kernels::SmallCStemLayout stem_;
  int stem_max_blocks_ = 0;       // KILNRT_CUDA_SMALL_C_STEM_BLOCKS (tests: several tiles per block), 0: no cap
  const void* pack_w_ = nullptr;  // [K, KH, KW, cp] 16-bit, zeros beyond C
  int pack_cp_ = 0;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::unique_ptr<CudnnSet>> sets_;
};

}  // namespace kilnrt::backends::cuda
