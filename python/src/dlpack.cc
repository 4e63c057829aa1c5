// DLPack reading for kilnrt's interop (python/kilnrt/_interop.py): producers that offer neither torch's tensor API
// nor __cuda_array_interface__ hand their buffer over as a "dltensor" capsule. kilnrt only needs the pointer, shape,
// strides, dtype and device while it enqueues; the caller keeps the producer's array alive (as for every zero-copy
// input), so the capsule is read, never consumed (not renamed to "used_dltensor"): its own destructor releases the
// managed tensor when Python drops it.
#include <cstdint>
#include <string>

#include "kilnrt/error.h"
#include "kilnrt_py.h"

namespace py = pybind11;

namespace {

// The stable, unversioned DLPack ABI (dlpack.h v0.x), declared here to avoid a header dependency.
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};

std::string dlpack_dtype_name(const DLDataType& t) {
  if (t.lanes == 1) {
    switch (t.code) {
      case 0:  // kDLInt
        if (t.bits == 8) return "int8";
        if (t.bits == 32) return "int32";
        if (t.bits == 64) return "int64";
        break;
      case 1:  // kDLUInt
        if (t.bits == 8) return "uint8";
        break;
      case 2:  // kDLFloat
        if (t.bits == 16) return "float16";
        if (t.bits == 32) return "float32";
        if (t.bits == 64) return "float64";
        break;
      case 4:  // kDLBfloat
        if (t.bits == 16) return "bfloat16";
        break;
      case 6:  // kDLBool
        if (t.bits == 8) return "bool";
        break;
      default: break;
    }
  }
  return "dlpack(code=" + std::to_string(t.code) + ",bits=" + std::to_string(t.bits) +
         ",lanes=" + std::to_string(t.lanes) + ")";
}

}  // namespace

namespace kilnrt_python {

void register_dlpack(py::module_& m) {
  // -> (pointer, shape, strides in elements or None, dtype name, device_type, device_id)
  m.def("dlpack_info", [](const py::capsule& capsule) {
    const char* name = capsule.name();
    if (name == nullptr || std::string(name) != "dltensor")
      throw kilnrt::Error(
          kilnrt::ErrorCode::kInvalidArgument,
          std::string("expected an unconsumed DLPack capsule named 'dltensor', got '") + (name ? name : "") + "'");
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), name));
    if (managed == nullptr) throw py::error_already_set();
    const DLTensor& t = managed->dl_tensor;
    if (t.ndim < 0 || (t.ndim > 0 && t.shape == nullptr))
      throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, "malformed DLPack tensor (no shape)");
    py::tuple shape(t.ndim);
    for (int i = 0; i < t.ndim; ++i) shape[i] = t.shape[i];
    py::object strides = py::none();
    if (t.strides != nullptr) {
      py::tuple s(t.ndim);
      for (int i = 0; i < t.ndim; ++i) s[i] = t.strides[i];
      strides = s;
    }
    const uint64_t ptr = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t.data)) + t.byte_offset;
    return py::make_tuple(ptr, shape, strides, dlpack_dtype_name(t.dtype), t.device.device_type, t.device.device_id);
  });
}

}  // namespace kilnrt_python
