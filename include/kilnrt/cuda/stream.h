// kilnrt::cuda::Stream and Event: RAII owners of a CUDA stream / event in a device's primary context. Created and
// destroyed under kilnrt's context guard, so they never change the caller's current context or context stack.
// Non-copyable, movable; destructors never throw (they leak instead of calling a driver that is gone at exit or in a
// forked child). Handles are the driver's: CUstream == cudaStream_t, CUevent == cudaEvent_t.
#pragma once
#include <cstdint>

struct CUstream_st;
struct CUevent_st;

namespace kilnrt::cuda {

using StreamHandle = CUstream_st*;
using EventHandle = CUevent_st*;

class Stream {
 public:
  Stream() noexcept = default;  // empty: get() == nullptr (which is also the legacy default stream's handle)
  // Creates a stream on `device`; non-blocking (does not synchronise with the legacy default stream) by default.
  explicit Stream(int device, bool non_blocking = true, int priority = 0);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;

  StreamHandle get() const noexcept { return stream_; }
  int device() const noexcept { return device_; }
  explicit operator bool() const noexcept { return stream_ != nullptr; }

  // Blocks the calling thread until all work on the stream finished (throws kilnrt::Error on a failed stream).
  void synchronize() const;
  // True when all work on the stream finished.
  bool query() const;
  // Makes future work on this stream wait for `event`.
  void wait(EventHandle event) const;
  // Destroys the stream now (no-op when empty).
  void reset() noexcept;

 private:
  StreamHandle stream_ = nullptr;
  int device_ = -1;
};

class Event {
 public:
  Event() noexcept = default;
  // Creates an event on `device`. Without timing the event is cheaper (CU_EVENT_DISABLE_TIMING).
  explicit Event(int device, bool timing = false, bool blocking_sync = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;

  EventHandle get() const noexcept { return event_; }
  int device() const noexcept { return device_; }
  explicit operator bool() const noexcept { return event_ != nullptr; }

  void record(StreamHandle stream) const;
  void record(const Stream& stream) const { record(stream.get()); }
  void synchronize() const;
  bool query() const;
  // Milliseconds between two recorded timing events (both completed).
  static float elapsed_ms(const Event& start, const Event& end);
  void reset() noexcept;

 private:
  EventHandle event_ = nullptr;
  int device_ = -1;
};

}  // namespace kilnrt::cuda
