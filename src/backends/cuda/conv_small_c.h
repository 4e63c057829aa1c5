// Convolutions with few input channels (C <= 4: the RGB stems of CNNs and ViTs) in 16-bit CUDA engines. cuDNN's
// 16-bit kernels are slow there (H100 fp16 b32: resnet50's 7x7/2 stem 0.47 ms, vit_b_16's 16x16/16 patch conv
// 0.32 ms), so ConvLayer (layers_gemm_conv.cc) hands such a node to SmallCConv first. Two paths:
//  - kPatchGemm (kernel == stride, no padding, no dilation: ViT / ConvNeXt patchify): an im2col that is a pure
//    rearrangement (kernels/conv_small_c.cu) into [N*P, C*KH*KW] in the workspace, then one cuBLASLt GEMM against
//    the [K, C*KH*KW] weights: NHWC output as one [N*P, K] GEMM with the bias epilogue, NCHW output as a strided
//    batched GEMM (K x P per image);
//  - kPackCudnn (any other geometry, NHWC output): the input packed into NHWC with 4 or 8 channels (zeros beyond C)
//    in the workspace, and cuDNN's NHWC tensor-core convolution on weights zero-padded the same way at load.
// Both work on images in chunks when the batch does not fit the workspace. Numerics: 16-bit operands, float32
// accumulation, like the cuDNN path. Which path: fixed_rule() (KILNRT_CUDA_SMALL_C overrides, read at layer
// creation: 0 off, patch, pack4, pack8; KILNRT_CUDA_CONV=direct turns it off too); a tactic timer can compare
// applicable_paths() on a layer via set_path().
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

enum class SmallCPath { kPatchGemm, kPack4Cudnn, kPack8Cudnn };
const char* small_c_path_name(SmallCPath p);  // "patch-gemm", "pack4-cudnn", "pack8-cudnn"

class SmallCConv {
 public:
  // Null when no small-C path applies: not an fp16 / bf16 node, not a 2-D convolution with constant float32
  // weights [K, C, KH, KW] with C <= 4 and group 1, or disabled (KILNRT_CUDA_SMALL_C=0). `cudnn`: cuDNN usable.
  static std::unique_ptr<SmallCConv> create(const LayerCreateArgs& a, bool cudnn);
  ~SmallCConv();

  // The paths this node can take (patch only for kernel == stride, pad 0, dilation 1; pack ones with cuDNN).
  static std::vector<SmallCPath> applicable_paths(const ir::Node& node, bool cudnn);
  // Without timing: patchify where it applies, else pack to 8 channels for cuDNN.
  static SmallCPath fixed_rule(const std::vector<SmallCPath>& applicable);
  SmallCPath path() const { return path_; }
  // Switches to another applicable path (uploading its weights if `a` allows); false when it cannot.
  bool set_path(SmallCPath p, const LayerCreateArgs& a);

  std::string tactic() const;
  // Runs the convolution of launch `l` (geometry p, symmetric padding or not) and returns true, or returns false
  // without enqueuing anything when this launch is not for it (float32 storage, asymmetric pads, an NCHW output
  // for the pack paths, a workspace too small for one image): the caller then takes its usual path. The output
  // has no bias / residual / activation unless *bias was consumed (set to null: the NHWC patch GEMM adds it).
  bool run(LayerLaunch& l, const kilnrt::cuda::kernels::Conv2d& p, bool symmetric, const void** bias);

 private:
  struct CudnnSet;  // descriptors + algorithm for one chunk shape
  SmallCConv(const ir::Node& node, bool bf16, bool cudnn);
  bool upload_weights(SmallCPath p, const LayerCreateArgs& a);
  bool run_patch(LayerLaunch& l, const kilnrt::cuda::kernels::Conv2d& p, const void** bias);
  bool run_pack(LayerLaunch& l, const kilnrt::cuda::kernels::Conv2d& p);
  CudnnSet* cudnn_set(LayerLaunch& l, const kilnrt::cuda::kernels::Conv2d& p, int64_t count, size_t ws_bytes);

  const ir::Node& node_;
  std::string name_;
  bool bf16_ = false;
  bool cudnn_ = false;
  SmallCPath path_ = SmallCPath::kPatchGemm;
  const void* patch_w_ = nullptr;  // [K, kc_pad] 16-bit, j = (c*KH + ky)*KW + kx, zeros beyond C*KH*KW
  int64_t kc_pad_ = 0;
  const void* pack_w_ = nullptr;   // [K, KH, KW, cp] 16-bit, zeros beyond C
  int pack_cp_ = 0;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::unique_ptr<CudnnSet>> sets_;
};

}  // namespace kilnrt::backends::cuda
