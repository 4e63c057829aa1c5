// Data-movement kernels of the small-input-channel convolution paths (conv_small_c.cu; conv_small_c.h).
// 16-bit storage only (float16 or bfloat16: the kernels move bits, so one code path serves both). Plain C++.
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Element strides of a 16-bit input x of geometry p (NCHW, or NHWC when nhwc): image, channel, row, column.
struct InputStrides {
  int64_t sn, sc, sh, sw;
};
inline InputStrides input_strides(const Conv2d& p, bool nhwc) {
  if (nhwc) return {p.h * p.w * p.c, 1, p.w * p.c, p.c};
  return {p.c * p.h * p.w, p.h * p.w, p.w, 1};
}
// Sets the launch parameters that the stem and direct kernels share (their Geo structs: sn, sc, sh, sw from
// input_strides; c, h, w, oh, ow as int; kh, kw; strh, strw; ph) from p and the input layout.
template <class Geo>
void set_shared_conv_fields(Geo& g, const Conv2d& p, bool x_nhwc) {
  const InputStrides xs = input_strides(p, x_nhwc);
  g.sn = xs.sn;
  g.sc = xs.sc;
  g.sh = xs.sh;
  g.sw = xs.sw;
  g.c = int(p.c);
  g.h = int(p.h);
  g.w = int(p.w);
  g.oh = int(p.oh);
  g.ow = int(p.ow);
  g.kh = p.kh;
  g.kw = p.kw;
  g.strh = p.sh;
  g.strw = p.sw;
  g.ph = p.ph;
}

// im2col of a group-1 convolution (any stride / padding / dilation; a pure rearrangement when the kernel equals
// the stride without padding: ViT / ConvNeXt patchify): for images [n0, n0 + count) of x (NCHW, or NHWC when
// x_nhwc), writes col[(b - n0) * OH*OW + oy*OW + ox][j], row length kc_pad (a multiple of 8, >= C*KH*KW),
// j = (c*KH + ky)*KW + kx (the order of a [K, C, KH, KW] weight), zeros for padding and for j >= C*KH*KW. col must
// be 16-byte aligned. Returns the launch status.
int im2col16(const void* x, bool x_nhwc, void* col, const Conv2d& p, int64_t n0, int64_t count, int64_t kc_pad,
             StreamT stream);

// Packs images [n0, n0 + count) of x (C channels, NCHW or NHWC storage) into NHWC with cp channels (4 or 8, > C),
// the extra channels zero: out[((b - n0)*H + y)*W + x][0..cp). out must be cp*2-byte aligned.
int pack_channels16(const void* x, bool x_nhwc, void* out, const Conv2d& p, int64_t n0, int64_t count, int cp,
                    StreamT stream);

// Direct tensor-core convolution (small_c_direct.cu) of x (16-bit, NCHW or NHWC) with weights w [K][kc16] (16-bit,
// j = (c*KH + ky)*KW + kx, zeros for j >= C*KH*KW; 16-byte aligned) into y (NCHW or NHWC), then y = act(y + bias)
// (bias: K 16-bit values or null; act: ops::nn::FusedActivation's code with parameters a, b). Group 1, no dilation.
bool small_c_direct_applies(const Conv2d& p, int64_t kc16);
int small_c_direct16(bool bf16, const void* x, bool x_nhwc, const void* w, int64_t kc16, const void* bias, void* y,
                     bool y_nhwc, const Conv2d& p, int act, float a, float b, StreamT stream);

// The stem kernel (small_c_stem.cu) for even horizontal strides: weights [K][kpad] (16-bit, 16-byte aligned) with
// j = ((c * KH + ky) * kxp + lead + kx), zeros elsewhere; kxp = 4 or 8 taps per filter row, lead = pw % 2.
struct SmallCStemLayout {
  int kxp = 0, lead = 0;
  int64_t kpad = 0;  // round_up(C * KH * kxp, 16)
};
// The layout for C x KH x KW filters at horizontal stride sw and left pad pw; false when the kernel does not take the
// geometry (C > 4, odd stride, KW + lead > 8, kpad > 512).
bool small_c_stem_layout(int64_t c, int kh, int kw, int sw, int pw, SmallCStemLayout* out);
// Whether the kernel runs launch geometry p with weights laid out as l (K = 16, 32, 48 or 64, group 1, no dilation).
bool small_c_stem_applies(const Conv2d& p, const SmallCStemLayout& l);
// y = act(conv(x, w) + bias) (bias: K 16-bit values or null; act, a, b as small_c_direct16); x NCHW or NHWC, y NCHW
// or NHWC (16-byte aligned). max_blocks > 0 caps the grid (blocks then loop over more tiles). Returns the launch
// status (cudaErrorInvalidValue when it does not apply).
int small_c_stem16(bool bf16, const void* x, bool x_nhwc, const void* w, const SmallCStemLayout& l, const void* bias,
                   void* y, bool y_nhwc, const Conv2d& p, int act, float a, float b, int max_blocks, StreamT stream);

}  // namespace kilnrt::cuda::kernels
