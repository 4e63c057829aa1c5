// Stream and Event: created, used and destroyed under the primary-context guard, through the one driver table.
#include "kilnrt/cuda/stream.h"

#include <utility>

#include "core/check.h"
#include "cuda/context_guard.h"

namespace kilnrt::cuda {

// ---- Stream ------------------------------------------------------------------------------------------------

Stream::Stream(int device, bool non_blocking, int priority) : device_(device) {
  ContextGuard guard(device);
  const DriverApi& api = guard.api();
  unsigned flags = non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
  CUstream s = nullptr;
  if (priority == 0) {
    KILNRT_CU_CHECK(api, api.StreamCreate(&s, flags), "Stream(device " + std::to_string(device) + ")");
  } else {
    KILNRT_CU_CHECK(api, api.StreamCreateWithPriority(&s, flags, priority),
                    "Stream(device " + std::to_string(device) + ")");
  }
  stream_ = s;
}

Stream::~Stream() { reset(); }

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), device_(std::exchange(other.device_, -1)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    reset();
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void Stream::reset() noexcept {
  if (!stream_) return;
  CUstream s = std::exchange(stream_, nullptr);
  release_quietly(device_, "a CUDA stream", [s](const DriverApi& api) { return api.StreamDestroy(s); });
}

void Stream::synchronize() const {
  KILNRT_CHECK(stream_ != nullptr, kInvalidArgument, "Stream", "synchronize() on an empty Stream");
  ContextGuard guard(device_);
  KILNRT_CU_CHECK(guard.api(), guard.api().StreamSynchronize(stream_), "Stream::synchronize");
}

bool Stream::query() const {
  KILNRT_CHECK(stream_ != nullptr, kInvalidArgument, "Stream", "query() on an empty Stream");
  ContextGuard guard(device_);
  CUresult r = guard.api().StreamQuery(stream_);
  if (r == CUDA_ERROR_NOT_READY) return false;
  KILNRT_CU_CHECK(guard.api(), r, "Stream::query");
  return true;
}

void Stream::wait(EventHandle event) const {
  KILNRT_CHECK(stream_ != nullptr && event != nullptr, kInvalidArgument, "Stream",
               "wait() needs a stream and an event");
  ContextGuard guard(device_);
  KILNRT_CU_CHECK(guard.api(), guard.api().StreamWaitEvent(stream_, event, 0), "Stream::wait");
}

// ---- Event -------------------------------------------------------------------------------------------------

Event::Event(int device, bool timing, bool blocking_sync) : device_(device) {
  ContextGuard guard(device);
  const DriverApi& api = guard.api();
  unsigned flags = (timing ? 0u : static_cast<unsigned>(CU_EVENT_DISABLE_TIMING)) |
                   (blocking_sync ? static_cast<unsigned>(CU_EVENT_BLOCKING_SYNC) : 0u);
  CUevent e = nullptr;
  KILNRT_CU_CHECK(api, api.EventCreate(&e, flags), "Event(device " + std::to_string(device) + ")");
  event_ = e;
}

Event::~Event() { reset(); }

Event::Event(Event&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)), device_(std::exchange(other.device_, -1)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    event_ = std::exchange(other.event_, nullptr);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void Event::reset() noexcept {
  if (!event_) return;
  CUevent e = std::exchange(event_, nullptr);
  release_quietly(device_, "a CUDA event", [e](const DriverApi& api) { return api.EventDestroy(e); });
}

void Event::record(StreamHandle stream) const {
  KILNRT_CHECK(event_ != nullptr, kInvalidArgument, "Event", "record() on an empty Event");
  ContextGuard guard(device_);
  KILNRT_CU_CHECK(guard.api(), guard.api().EventRecord(event_, stream), "Event::record");
}

void Event::synchronize() const {
  KILNRT_CHECK(event_ != nullptr, kInvalidArgument, "Event", "synchronize() on an empty Event");
  ContextGuard guard(device_);
  KILNRT_CU_CHECK(guard.api(), guard.api().EventSynchronize(event_), "Event::synchronize");
}

bool Event::query() const {
  KILNRT_CHECK(event_ != nullptr, kInvalidArgument, "Event", "query() on an empty Event");
  ContextGuard guard(device_);
  CUresult r = guard.api().EventQuery(event_);
  if (r == CUDA_ERROR_NOT_READY) return false;
  KILNRT_CU_CHECK(guard.api(), r, "Event::query");
  return true;
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  KILNRT_CHECK(start.event_ && end.event_, kInvalidArgument, "Event", "elapsed_ms() on an empty Event");
  KILNRT_CHECK(start.device_ == end.device_, kInvalidArgument, "Event",
               "elapsed_ms() between events of devices " << start.device_ << " and " << end.device_);
  ContextGuard guard(start.device_);
  float ms = 0.f;
  KILNRT_CU_CHECK(guard.api(), guard.api().EventElapsedTime(&ms, start.event_, end.event_),
                  "Event::elapsed_ms (were both events created with timing=true and recorded?)");
  return ms;
}

}  // namespace kilnrt::cuda
