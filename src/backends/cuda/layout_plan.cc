#include "backends/cuda/layout_plan.h"

namespace kilnrt::backends::cuda {

LayoutDecision decide_layouts(const LayoutProblem& p) {
  const size_t nslots = p.rank4.size();
  LayoutDecision d;
  d.nhwc_slot.assign(nslots, 0);
  d.step_nhwc.assign(p.steps.size(), 0);
  d.view.assign(p.steps.size(), 0);
  d.reformat.resize(p.steps.size());
  auto valid = [&](int s) { return s >= 0 && static_cast<size_t>(s) < nslots; };
  auto is_free = [&](int s) { return !p.layout_free.empty() && p.layout_free[s] != 0; };
  // A 4-D value whose two storages differ: the only kind that is ever NHWC or reformatted.
  auto layouted = [&](int s) { return valid(s) && p.rank4[s] && !is_free(s); };
  // Values that must stay NCHW: graph I/O, constants, host values, and what a view or a float32 island reads (a view
  // cannot change layout; an island's float32 staging copies plain NCHW).
  std::vector<uint8_t> must_nchw(nslots, 0);
  for (size_t s = 0; s < nslots; ++s) must_nchw[s] = p.pinned_nchw[s];
  for (const LayoutStep& st : p.steps) {
    if (!st.device || !(st.alias || st.island)) continue;
    for (int s : st.inputs)
      if (valid(s)) must_nchw[s] = 1;
  }
  auto kind_of = [](const LayoutStep& st) {
    if (st.island || st.alias) return LayoutKind::kFixed;
    if (st.nhwc_capable) return LayoutKind::kProducer;
    return st.kind;
  };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const LayoutStep& st = p.steps[i];
    d.reformat[i].assign(st.inputs.size(), 0);
    if (!st.device || st.alias) continue;
    const int out = st.outputs.empty() ? -1 : st.outputs[0];
    const bool out_ok = layouted(out) && !must_nchw[out];
    const int in0 = st.inputs.empty() ? -1 : st.inputs[0];
    // want[k]: 1 NHWC, 0 NCHW, -1 either (no reformat)
    std::vector<int> want(st.inputs.size(), 0);
    bool run = false;
    switch (kind_of(st)) {
      case LayoutKind::kProducer:
        // A layout-free output ([N,K,1,1]) is written NHWC when the input already is (same memory either way, so
        // whoever reads it, graph outputs and views included).
        run = out_ok || (valid(out) && p.rank4[out] && is_free(out) && layouted(in0) && d.nhwc_slot[in0]);
        for (size_t k = 0; k < want.size(); ++k) want[k] = run && (k == 0 || k == 3) ? 1 : 0;
        break;
      case LayoutKind::kElementwise: {
        bool operands_ok = out_ok, any_nhwc = false;
        for (int s : st.inputs) {
          if (!valid(s)) continue;
          operands_ok &= p.rank4[s] || is_free(s);
          any_nhwc |= d.nhwc_slot[s] != 0;
        }
        run = operands_ok && any_nhwc;
        for (size_t k = 0; k < want.size(); ++k) want[k] = run ? 1 : 0;
        break;
      }
      case LayoutKind::kReader:
        if (!want.empty()) want[0] = -1;
        run = valid(in0) && d.nhwc_slot[in0];
        break;
      case LayoutKind::kToNhwcView:
        if (out_ok && layouted(in0) && !p.pinned_nchw[in0] && !d.nhwc_slot[in0]) {
          d.view[i] = 1;
          run = true;
        }
        break;
      case LayoutKind::kFromNhwcView:
        if (valid(in0) && d.nhwc_slot[in0] && valid(out) && !p.pinned_nchw[out]) {
          d.view[i] = 1;
          want[0] = 1;
        }
        break;
      case LayoutKind::kFixed: break;
    }
    d.step_nhwc[i] = run || d.view[i] ? 1 : 0;
    d.nhwc_steps += d.step_nhwc[i];
    if (run && st.depthwise) ++d.nhwc_depthwise;
    if (run && st.depthwise && !st.depthwise_fast) ++d.nhwc_depthwise_slow;
    if (run && layouted(out) && kind_of(st) != LayoutKind::kReader) d.nhwc_slot[out] = 1;
    for (size_t k = 0; k < st.inputs.size(); ++k) {
      const int s = st.inputs[k];
      if (!layouted(s) || want[k] < 0) continue;
      const bool have = d.nhwc_slot[s] != 0;
      if ((want[k] == 1) == have) continue;
      d.reformat[i][k] = want[k] == 1 ? 1 : -1;
      ++d.reformats;
    }
  }
  return d;
}

bool predict_nhwc_win(const LayoutDecision& d) {
  return d.nhwc_steps > 0 && d.nhwc_depthwise_slow == 0 && d.reformats <= 2 + d.nhwc_steps / 16;
}

Shape nhwc_logical_shape(const Shape& s) {
  Shape p(4, 1);
  const size_t r = s.size() < 4 ? s.size() : 4;
  for (size_t k = 0; k < r; ++k) p[4 - r + k] = s[s.size() - r + k];
  return {p[0], p[2], p[3], p[1]};
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
