// Parts of the kilnrt._kilnrt extension that live in their own files.
#pragma once
#include <pybind11/pybind11.h>

namespace kilnrt_python {

// _kilnrt.dlpack_info(capsule): reads an (unversioned) DLPack capsule without consuming it (dlpack.cc).
void register_dlpack(pybind11::module_& m);
// _kilnrt._Stream, _Event, _DeviceBuffer, _PinnedBuffer, _Kernel, stream_handle() (cuda_objects.cc); nothing in
// builds without CUDA (kilnrt/cuda.py then raises kilnrt.Error on use).
void register_cuda_objects(pybind11::module_& m);

}  // namespace kilnrt_python
