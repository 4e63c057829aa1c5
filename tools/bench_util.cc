// Shared parts of `kilnrt bench` / `kilnrt profile`: inputs, BenchRunner, statistics, progress, JSON text.
#include "bench_util.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "cli_common.h"

#ifdef KILNRT_CLI_WITH_CUDA
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#endif

namespace kilnrt_cli {

using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

kilnrt::Shape default_shape(const kilnrt::Engine& engine, const kilnrt::TensorInfo& info) {
  if (!engine.profiles().empty()) {
    for (const auto& range : engine.profiles().front())
      if (range.name == info.name && range.opt.size() == info.shape.size()) return range.opt;
  }
  kilnrt::Shape shape = info.shape;
  for (int64_t& d : shape)
    if (d < 0) d = 1;
  return shape;
}

}  // namespace

std::map<std::string, kilnrt::Tensor> make_bench_inputs(const kilnrt::Engine& engine, int batch,
                                                        const std::vector<std::string>& shape_specs, unsigned seed) {
  using kilnrt::Error;
  using kilnrt::ErrorCode;
  if (batch < 0) throw Error(ErrorCode::kInvalidArgument, "--batch must be positive", "--batch");
  std::map<std::string, kilnrt::Shape> shapes;
  for (const auto& info : engine.inputs()) {
    kilnrt::Shape shape = default_shape(engine, info);
    if (batch > 0 && !shape.empty()) {
      if (info.shape[0] >= 0 && info.shape[0] != batch)
        throw Error(ErrorCode::kInvalidArgument,
                    "dimension 0 is fixed to " + std::to_string(info.shape[0]) + " in this engine, so --batch " +
                        std::to_string(batch) + " cannot apply (rebuild with a dynamic batch)",
                    "input '" + info.name + "'");
      shape[0] = batch;
    }
    shapes[info.name] = shape;
  }
  for (const std::string& spec : shape_specs) {
    const kilnrt::InputProfile p = kilnrt::parse_shape_spec(spec);
    if (!shapes.count(p.name)) {
      std::string names;
      for (const auto& info : engine.inputs()) names += (names.empty() ? "" : ", ") + info.name;
      throw Error(ErrorCode::kInvalidArgument, "the engine has no input named '" + p.name + "' (inputs: " + names + ")",
                  "--shapes " + spec);
    }
    shapes[p.name] = p.opt;
  }
  std::map<std::string, kilnrt::Tensor> inputs;
  for (const auto& info : engine.inputs()) inputs[info.name] = random_tensor(info.dtype, shapes[info.name], seed++);
  return inputs;
}

int64_t batch_of(const kilnrt::Engine& engine, const std::map<std::string, kilnrt::Tensor>& inputs) {
  for (const auto& info : engine.inputs()) {
    auto it = inputs.find(info.name);
    if (it != inputs.end() && !it->second.shape().empty()) return it->second.shape()[0];
  }
  return 1;
}

LatencyStats compute_stats(std::vector<double> v) {
  LatencyStats s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto pct = [&](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  double sum = 0;
  for (double x : v) sum += x;
  s.min = v.front();
  s.max = v.back();
  s.mean = sum / static_cast<double>(v.size());
  s.median = pct(0.5);
  s.p90 = pct(0.9);
  s.p95 = pct(0.95);
  s.p99 = pct(0.99);
  return s;
}

std::string stats_json(const LatencyStats& s) {
  std::ostringstream os;
  os << "{\"count\": " << s.count << ", \"min\": " << json_number(s.min) << ", \"mean\": " << json_number(s.mean)
     << ", \"median\": " << json_number(s.median) << ", \"p90\": " << json_number(s.p90)
     << ", \"p95\": " << json_number(s.p95) << ", \"p99\": " << json_number(s.p99)
     << ", \"max\": " << json_number(s.max) << "}";
  return os.str();
}

// ---- BenchRunner ------------------------------------------------------------------------------------------------

#ifdef KILNRT_CLI_WITH_CUDA
struct BenchRunner::CudaState {
  kilnrt::cuda::Stream stream;
  kilnrt::cuda::Event h2d_start, compute_start, compute_end, d2h_end;
  std::vector<kilnrt::cuda::PinnedBuffer> in_host, out_host;
  std::vector<kilnrt::cuda::DeviceBuffer> in_dev, out_dev;
  std::vector<size_t> in_bytes, out_bytes;
  std::map<std::string, kilnrt::DeviceTensor> in_bind, out_bind;
};
#else
struct BenchRunner::CudaState {};
#endif

BenchRunner::BenchRunner(const kilnrt::Engine& engine, kilnrt::ExecutionContext& context,
                         const std::map<std::string, kilnrt::Tensor>& inputs, bool transfers)
    : context_(context), inputs_(inputs), cuda_(engine.device() >= 0), transfers_(transfers && cuda_) {
  for (const auto& [name, t] : inputs_) {
    context_.set_input_shape(name, t.shape());
    input_bytes_ += t.nbytes();
  }
  if (!cuda_) return;
#ifndef KILNRT_CLI_WITH_CUDA
  throw kilnrt::Error(kilnrt::ErrorCode::kUnsupported, "this kilnrt CLI was built without CUDA", "bench");
#else
  namespace kc = kilnrt::cuda;
  const int device = engine.device();
  auto st = std::make_unique<CudaState>();
  st->stream = kc::Stream(device);
  st->h2d_start = kc::Event(device, true);
  st->compute_start = kc::Event(device, true);
  st->compute_end = kc::Event(device, true);
  st->d2h_end = kc::Event(device, true);
  std::map<std::string, kilnrt::Shape> in_shapes;
  for (const auto& info : engine.inputs()) {
    const kilnrt::Tensor& t = inputs_.at(info.name);
    in_shapes[info.name] = t.shape();
    st->in_bytes.push_back(t.nbytes());
    st->in_host.emplace_back(device, std::max<size_t>(t.nbytes(), 1));
    if (t.nbytes()) std::memcpy(st->in_host.back().data(), t.raw(), t.nbytes());
    st->in_dev.emplace_back(device, t.nbytes());
    st->in_bind[info.name] = kilnrt::DeviceTensor{st->in_dev.back().data(), info.dtype, t.shape(), device};
    if (t.nbytes()) st->in_dev.back().copy_from_host_async(st->in_host.back().data(), t.nbytes(), st->stream.get());
  }
  const auto out_shapes = context_.output_shapes(in_shapes);
  for (const auto& info : engine.outputs()) {
    const kilnrt::Shape& shape = out_shapes.at(info.name);
    const size_t bytes = static_cast<size_t>(kilnrt::shape_numel(shape)) * kilnrt::dtype_size(info.dtype);
    output_bytes_ += bytes;
    st->out_bytes.push_back(bytes);
    st->out_host.emplace_back(device, std::max<size_t>(bytes, 1));
    st->out_dev.emplace_back(device, bytes);
    st->out_bind[info.name] = kilnrt::DeviceTensor{st->out_dev.back().data(), info.dtype, shape, device};
  }
  st->stream.synchronize();  // the first upload: every later iteration starts from device-resident inputs
  cuda_state_ = std::move(st);
#endif
}

BenchRunner::~BenchRunner() {
#ifdef KILNRT_CLI_WITH_CUDA
  if (cuda_state_) {
    try {
      cuda_state_->stream.synchronize();  // nothing of ours in flight when the buffers go
    } catch (...) {
    }
  }
#endif
}

BenchRunner::Sample BenchRunner::run_once() {
  Sample s;
  const Clock::time_point start = Clock::now();
  if (!cuda_) {
    const auto outputs = context_.run(inputs_);
    s.wall_ms = s.compute_ms = s.total_ms = ms_since(start);
    if (output_bytes_ == 0)
      for (const auto& [name, t] : outputs) output_bytes_ += t.nbytes();
    return s;
  }
#ifdef KILNRT_CLI_WITH_CUDA
  namespace kc = kilnrt::cuda;
  CudaState& st = *cuda_state_;
  const kc::StreamHandle stream = st.stream.get();
  if (transfers_) {
    st.h2d_start.record(stream);
    for (size_t i = 0; i < st.in_dev.size(); ++i)
      if (st.in_bytes[i]) st.in_dev[i].copy_from_host_async(st.in_host[i].data(), st.in_bytes[i], stream);
  }
  st.compute_start.record(stream);
  context_.enqueue(st.in_bind, st.out_bind, stream);
  st.compute_end.record(stream);
  if (transfers_) {
    for (size_t i = 0; i < st.out_dev.size(); ++i)
      if (st.out_bytes[i]) st.out_dev[i].copy_to_host_async(st.out_host[i].data(), st.out_bytes[i], stream);
    st.d2h_end.record(stream);
    st.d2h_end.synchronize();
    s.h2d_ms = kc::Event::elapsed_ms(st.h2d_start, st.compute_start);
    s.d2h_ms = kc::Event::elapsed_ms(st.compute_end, st.d2h_end);
  } else {
    st.compute_end.synchronize();
  }
  s.wall_ms = ms_since(start);
  s.compute_ms = kc::Event::elapsed_ms(st.compute_start, st.compute_end);
  s.total_ms = s.h2d_ms + s.compute_ms + s.d2h_ms;
#endif
  return s;
}

// ---- Progress ---------------------------------------------------------------------------------------------------

Progress::Progress(const std::string& label, int iterations, double seconds)
    : label_(label),
      iterations_(std::max(iterations, 0)),
      seconds_(std::max(seconds, 0.0)),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(Clock::now()),
      last_draw_(start_) {}

double Progress::elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

bool Progress::update(int done) {
  const double t = elapsed_s();
  double frac = iterations_ > 0 ? std::min(1.0, static_cast<double>(done) / iterations_) : 1.0;
  if (seconds_ > 0) frac = std::min(frac, std::min(1.0, t / seconds_));
  const bool more = done < iterations_ || t < seconds_;
  const std::string count = plural(done, "iteration");
  if (global_options().quiet) {
    // --quiet: no progress display
  } else if (tty_) {
    if (!more || std::chrono::duration<double>(Clock::now() - last_draw_).count() >= 0.1 || !drawn_) {
      const int width = 30, filled = static_cast<int>(frac * width);
      std::fprintf(stderr, "\r%s [%s%s] %3d%% %s %.1f s", label_.c_str(), std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), static_cast<int>(frac * 100), count.c_str(), t);
      std::fflush(stderr);
      last_draw_ = Clock::now();
      drawn_ = true;
    }
  } else {
    const int decile = static_cast<int>(frac * 10);
    if (decile > last_decile_ && decile > 0) {
      std::fprintf(stderr, "%s: %d%% (%s, %.1f s)\n", label_.c_str(), decile * 10, count.c_str(), t);
      last_decile_ = decile;
    }
  }
  return more;
}

void Progress::finish() {
  if (tty_ && drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

// ---- JSON text --------------------------------------------------------------------------------------------------

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string json_shape(const kilnrt::Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace kilnrt_cli
