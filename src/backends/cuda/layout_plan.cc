#include "backends/cuda/layout_plan.h"

namespace kilnrt::backends::cuda {

LayoutDecision decide_layouts(const LayoutProblem& p) {
  const size_t nslots = p.rank4.size();
  LayoutDecision d;
  d.nhwc_slot.assign(nslots, 0);
  d.step_nhwc.assign(p.steps.size(), 0);
  d.reformat.resize(p.steps.size());
  auto valid = [&](int s) { return s >= 0 && static_cast<size_t>(s) < nslots; };
  // Candidates: output 0 of NHWC-capable device steps.
  for (const LayoutStep& st : p.steps) {
    if (!st.device || !st.nhwc_capable || st.island || st.alias || st.outputs.empty()) continue;
    const int s = st.outputs[0];
    if (valid(s) && p.rank4[s] && !p.pinned_nchw[s]) d.nhwc_slot[s] = 1;
  }
  // Readers that cannot take a reformatted copy: views and float32 islands.
  for (const LayoutStep& st : p.steps) {
    if (!st.device || !(st.alias || st.island)) continue;
    for (int s : st.inputs)
      if (valid(s)) d.nhwc_slot[s] = 0;
  }
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const LayoutStep& st = p.steps[i];
    d.reformat[i].assign(st.inputs.size(), 0);
    if (!st.device || st.alias) continue;
    const bool nhwc = st.nhwc_capable && !st.outputs.empty() && valid(st.outputs[0]) && d.nhwc_slot[st.outputs[0]];
    d.step_nhwc[i] = nhwc ? 1 : 0;
    for (size_t k = 0; k < st.inputs.size(); ++k) {
      const int s = st.inputs[k];
      if (!valid(s) || !p.rank4[s]) continue;
      const bool want = nhwc && (k == 0 || k == 3);
      const bool have = d.nhwc_slot[s] != 0;
      if (want == have) continue;
      d.reformat[i][k] = want ? 1 : -1;
      ++d.reformats;
    }
  }
  return d;
}

kilnrt::cuda::kernels::Strided reformat_strides(const Shape& nchw, bool to_nhwc) {
  kilnrt::cuda::kernels::Strided s;
  s.rank = 4;
  const int64_t n = nchw[0], c = nchw[1], h = nchw[2], w = nchw[3];
  const int64_t planar[4] = {c * h * w, h * w, w, 1};  // NCHW strides of index (n, c, h, w)
  const int64_t packed[4] = {h * w * c, 1, w * c, c};  // NHWC strides of the same index
  const int64_t dims[4] = {n, c, h, w};
  for (int d = 0; d < 4; ++d) {
    s.dims[d] = dims[d];
    s.in_strides[d] = to_nhwc ? planar[d] : packed[d];
    s.out_strides[d] = to_nhwc ? packed[d] : planar[d];
  }
  return s;
}

int reformat_4d(const void* src, void* dst, const Shape& nchw, size_t elem_size, bool to_nhwc,
                kilnrt::cuda::kernels::StreamT stream) {
  return kilnrt::cuda::kernels::strided_copy(dst, src, reformat_strides(nchw, to_nhwc), elem_size, stream);
}

}  // namespace kilnrt::backends::cuda
