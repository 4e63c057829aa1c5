// kilnrt.cuda's native half: the public C++ RAII types (include/kilnrt/cuda/*.h) as Python objects that expose
// their raw handles / pointers for interop (python/kilnrt/cuda.py adds context managers, __cuda_array_interface__
// and argument packing). Every call runs under kilnrt's context guard inside the C++ types, so a torch / cupy /
// pycuda context that is current stays current. Blocking calls release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kilnrt/error.h"
#include "kilnrt_py.h"

#ifdef KILNRT_PY_WITH_CUDA
#include "kilnrt/cuda/kernel.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#endif

namespace py = pybind11;

namespace kilnrt_python {

#ifndef KILNRT_PY_WITH_CUDA

void register_cuda_objects(py::module_& m) { m.attr("has_cuda_objects") = false; }

#else

namespace kc = kilnrt::cuda;

namespace {

uint64_t handle_value(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }
kc::StreamHandle stream_of(uint64_t v) { return reinterpret_cast<kc::StreamHandle>(static_cast<uintptr_t>(v)); }

// A Python buffer's (pointer, bytes), checked C-contiguous. `writable` for destinations.
std::pair<void*, size_t> host_bytes(const py::object& obj, bool writable, const char* what) {
  py::buffer buf = py::reinterpret_borrow<py::buffer>(obj);
  py::buffer_info info;
  try {
    info = buf.request(writable);
  } catch (const py::error_already_set&) {
    throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, std::string(what) + " must be a " +
                                                                 (writable ? "writable " : "") +
                                                                 "C-contiguous numpy array (or another buffer)");
  }
  size_t stride = static_cast<size_t>(info.itemsize);
  for (py::ssize_t i = info.ndim; i-- > 0;) {
    if (info.shape[i] > 1 && static_cast<size_t>(info.strides[i]) != stride)
      throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                          std::string(what) + " must be C-contiguous (use numpy.ascontiguousarray)");
    stride *= static_cast<size_t>(info.shape[i]);
  }
  return {info.ptr, static_cast<size_t>(info.size * info.itemsize)};
}

void check_range(size_t offset, size_t bytes, size_t size, const char* what) {
  if (offset > size || bytes > size - offset)
    throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                        std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(offset) + " do not fit the buffer of " + std::to_string(size) + " bytes");
}

// Waits for all work queued so far on `stream` (a stream of `device`, 0 = legacy default) through an event.
void wait_stream(int device, kc::StreamHandle stream) {
  kc::Event done(device);
  done.record(stream);
  done.synchronize();
}

// A PinnedBuffer shared by the Python object and every numpy view of it: close() drops the object's reference,
// the memory goes when the last view does.
struct PinnedHolder {
  std::shared_ptr<kc::PinnedBuffer> buffer;
  const kc::PinnedBuffer& get() const {
    if (!buffer) throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, "the PinnedBuffer is closed");
    return *buffer;
  }
};

}  // namespace

void register_cuda_objects(py::module_& m) {
  m.attr("has_cuda_objects") = true;

  py::class_<kc::Stream, std::shared_ptr<kc::Stream> >(m, "_Stream", py::dynamic_attr())
      .def(py::init([](int device, bool non_blocking, int priority) {
             GilRelease no_gil;
             return std::make_shared<kc::Stream>(device, non_blocking, priority);
           }),
           py::arg("device") = 0, py::arg("non_blocking") = true, py::arg("priority") = 0)
      .def_property_readonly("ptr", [](const kc::Stream& s) { return handle_value(s.get()); })
      .def_property_readonly("device", &kc::Stream::device)
      .def("synchronize", &kc::Stream::synchronize, py::call_guard<GilRelease>())
      .def("query", &kc::Stream::query)
      .def("_wait_event", [](const kc::Stream& s, const kc::Event& e) { s.wait(e.get()); })
      .def("close", &kc::Stream::reset);

  py::class_<kc::Event, std::shared_ptr<kc::Event> >(m, "_Event", py::dynamic_attr())
      .def(py::init([](int device, bool timing, bool blocking_sync) {
             GilRelease no_gil;
             return std::make_shared<kc::Event>(device, timing, blocking_sync);
           }),
           py::arg("device") = 0, py::arg("timing") = true, py::arg("blocking_sync") = false)
      .def_property_readonly("ptr", [](const kc::Event& e) { return handle_value(e.get()); })
      .def_property_readonly("device", &kc::Event::device)
      .def("_record", [](const kc::Event& e, uint64_t stream) { e.record(stream_of(stream)); })
      .def("synchronize", &kc::Event::synchronize, py::call_guard<GilRelease>())
      .def("query", &kc::Event::query)
      .def(
          "elapsed_time",
          [](const kc::Event& start, const kc::Event& end) { return kc::Event::elapsed_ms(start, end); },
          py::arg("end"))
      .def("close", &kc::Event::reset);

  py::class_<kc::DeviceBuffer, std::shared_ptr<kc::DeviceBuffer> >(m, "_DeviceBuffer", py::dynamic_attr())
      .def(py::init([](size_t nbytes, int device) {
             GilRelease no_gil;
             return std::make_shared<kc::DeviceBuffer>(device, nbytes);
           }),
           py::arg("nbytes"), py::arg("device") = 0)
      .def_property_readonly("ptr", [](const kc::DeviceBuffer& b) { return handle_value(b.data()); })
      .def_property_readonly("size", &kc::DeviceBuffer::size)
      .def_property_readonly("device", &kc::DeviceBuffer::device)
      .def("_copy_from_host",
           [](kc::DeviceBuffer& b, const py::object& src, uint64_t stream, bool sync, size_t offset) {
             auto [ptr, bytes] = host_bytes(src, false, "copy_from_host's source");
             check_range(offset, bytes, b.size(), "copy_from_host");
             GilRelease no_gil;
             if (bytes == 0) return;
             b.copy_from_host_async(ptr, bytes, stream_of(stream), offset);
             if (sync) wait_stream(b.device(), stream_of(stream));
           })
      .def("_copy_to_host",
           [](const kc::DeviceBuffer& b, const py::object& dst, uint64_t stream, bool sync, size_t offset) {
             auto [ptr, bytes] = host_bytes(dst, true, "copy_to_host's destination");
             check_range(offset, bytes, b.size(), "copy_to_host");
             GilRelease no_gil;
             if (bytes == 0) return;
             b.copy_to_host_async(ptr, bytes, stream_of(stream), offset);
             if (sync) wait_stream(b.device(), stream_of(stream));
           })
      .def("_copy_from_device",
           [](kc::DeviceBuffer& b, uint64_t src, size_t bytes, uint64_t stream, bool sync, size_t offset) {
             check_range(offset, bytes, b.size(), "copy_from_device");
             GilRelease no_gil;
             if (bytes == 0) return;
             b.copy_from_device_async(reinterpret_cast<const void*>(static_cast<uintptr_t>(src)), bytes,
                                      stream_of(stream), offset);
             if (sync) wait_stream(b.device(), stream_of(stream));
           })
      .def("_memset",
           [](kc::DeviceBuffer& b, int value, uint64_t stream, bool sync) {
             if (value < 0 || value > 255)
               throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, "memset value must be in 0..255");
             GilRelease no_gil;
             if (b.size() == 0) return;
             b.memset_async(static_cast<unsigned char>(value), stream_of(stream));
             if (sync) wait_stream(b.device(), stream_of(stream));
           })
      .def("close", &kc::DeviceBuffer::reset, py::call_guard<GilRelease>());

  py::class_<PinnedHolder, std::shared_ptr<PinnedHolder> >(m, "_PinnedBuffer", py::dynamic_attr())
      .def(py::init([](size_t nbytes, int device) {
             auto h = std::make_shared<PinnedHolder>();
             GilRelease no_gil;
             h->buffer = std::make_shared<kc::PinnedBuffer>(device, nbytes);
             return h;
           }),
           py::arg("nbytes"), py::arg("device") = 0)
      .def_property_readonly(
          "ptr", [](const PinnedHolder& h) { return h.buffer ? handle_value(h.buffer->data()) : uint64_t{0}; })
      .def_property_readonly("size", [](const PinnedHolder& h) { return h.buffer ? h.buffer->size() : size_t{0}; })
      .def_property_readonly("device", [](const PinnedHolder& h) { return h.get().device(); })
      .def_property_readonly("closed", [](const PinnedHolder& h) { return !h.buffer; })
      // A writable uint8 view of the whole buffer; it keeps the memory alive on its own.
      .def("_bytes_view",
           [](const PinnedHolder& h) {
             h.get();
             auto* keep = new std::shared_ptr<kc::PinnedBuffer>(h.buffer);
             py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<kc::PinnedBuffer>*>(p); });
             return py::array(py::dtype("uint8"), {static_cast<py::ssize_t>(h.buffer->size())}, {1}, h.buffer->data(),
                              owner);
           })
      .def("close", [](PinnedHolder& h) { h.buffer.reset(); });

  py::class_<kc::Kernel, std::shared_ptr<kc::Kernel> >(m, "_Kernel", py::dynamic_attr())
      .def(py::init([](const std::string& source, const std::string& name, const std::vector<std::string>& options,
                       int device, bool disk_cache) {
             kc::KernelCompileOptions opt;
             opt.nvrtc_options = options;
             opt.disk_cache = disk_cache;
             GilRelease no_gil;
             return std::make_shared<kc::Kernel>(kc::Kernel::compile(device, source, name, opt));
           }),
           py::arg("source"), py::arg("name"), py::arg("options") = std::vector<std::string>{}, py::arg("device") = 0,
           py::arg("disk_cache") = true)
      .def_property_readonly("name", &kc::Kernel::name)
      .def_property_readonly("device", &kc::Kernel::device)
      .def_property_readonly("target", [](const kc::Kernel& k) { return k.code() ? k.code()->target_name() : ""; })
      // Arguments as the raw bytes of each kernel parameter (packed by kilnrt/cuda.py).
      .def("_launch", [](const kc::Kernel& k, std::vector<unsigned> grid, std::vector<unsigned> block,
                         unsigned shared_mem, uint64_t stream, const std::vector<py::bytes>& args) {
        if (grid.size() != 3 || block.size() != 3)
          throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, "grid and block need 3 dimensions", k.name());
        std::vector<std::string> storage;
        storage.reserve(args.size());
        for (const auto& a : args) storage.emplace_back(a);
        std::vector<void*> params;
        for (auto& s : storage) params.push_back(s.data());
        params.push_back(nullptr);
        GilRelease no_gil;
        k.launch_raw(kc::Dim3(grid[0], grid[1], grid[2]), kc::Dim3(block[0], block[1], block[2]), shared_mem,
                     stream_of(stream), params.data());
      });
}

#endif  // KILNRT_PY_WITH_CUDA

}  // namespace kilnrt_python
