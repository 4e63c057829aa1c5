// kilnrt._kilnrt: the pybind11 extension behind the `kilnrt` Python package (python/kilnrt/__init__.py holds the
// user-facing API). Uses the public C++ API only.
//   - numpy inputs are borrowed zero-copy (the array is kept alive by the tensor), outputs are numpy arrays that
//     keep their kilnrt::Tensor alive through a capsule (no copy);
//   - kilnrt::Error becomes kilnrt.Error (python/kilnrt/_errors.py) with code / where / message / expression /
//     detail; str() is what() (the summary line; KILNRT_LOG_LEVEL=debug appends the detail);
//   - inference runs with the GIL released;
//   - device tensors (torch / cupy / __cuda_array_interface__ / DLPack, read in python/kilnrt/_interop.py) reach
//     ExecutionContext::enqueue as raw (pointer, shape, dtype, device) tuples: one context per caller stream.
// kilnrt.cuda's objects (Stream, Event, DeviceBuffer, PinnedBuffer, Kernel) live in cuda_objects.cc.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "kilnrt/doctor.h"
#include "kilnrt/kilnrt.h"
#include "kilnrt_py.h"

namespace py = pybind11;

namespace {

// numpy dtype string for a kilnrt dtype. bfloat16 has no numpy dtype: its raw bits travel as uint16.
std::string numpy_dtype_name(kilnrt::DType t) {
  using kilnrt::DType;
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "uint16";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kInt16: return "int16";
    case DType::kUInt16: return "uint16";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    default: break;
  }
  throw kilnrt::Error(kilnrt::ErrorCode::kUnsupported,
                      std::string("dtype ") + kilnrt::dtype_name(t) + " has no numpy equivalent");
}

// Python objects whose last borrowed tensor went away on a thread that did not hold the GIL: released by the next
// thread that holds it (release_deferred_objects). A deleter never takes the GIL itself: it can run while a daemon
// thread is being unwound by the interpreter's exit (PyEval_RestoreThread ends such threads with a forced unwind), and
// taking the GIL there would end the thread again inside a noexcept destructor: "terminate called without an active
// exception" (coexistence scenario interpreter_exit_live_engines, daemon-thread variant).
std::mutex g_deferred_mutex;
std::vector<py::object*> g_deferred_objects;

void release_deferred_objects() {  // GIL held
  std::vector<py::object*> objects;
  {
    std::lock_guard<std::mutex> lock(g_deferred_mutex);
    objects.swap(g_deferred_objects);
  }
  for (py::object* o : objects) delete o;
}

// Holds a Python object for as long as a borrowed tensor lives; drops the reference with the GIL held (now when this
// thread holds it, else deferred).
std::shared_ptr<void> keep_python_object_alive(py::object obj) {
  release_deferred_objects();
  auto* held = new py::object(std::move(obj));
  return std::shared_ptr<void>(held, [](void* p) {
    auto* o = static_cast<py::object*>(p);
    if (Py_IsInitialized() && PyGILState_Check()) {
      delete o;
      return;
    }
    std::lock_guard<std::mutex> lock(g_deferred_mutex);
    g_deferred_objects.push_back(o);  // leaked if the interpreter is gone: nothing can release it then
  });
}

// Wraps a C-contiguous numpy array of the engine input's dtype as a tensor, without copying.
kilnrt::Tensor borrow_array(const std::string& name, const py::array& array, kilnrt::DType expected) {
  const py::dtype want = py::dtype(numpy_dtype_name(expected));
  const py::dtype have = array.dtype();
  const bool big_endian = have.attr("byteorder").cast<std::string>() == ">" && have.itemsize() > 1;
  if (have.kind() != want.kind() || have.itemsize() != want.itemsize() || big_endian)
    throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                        "input has numpy dtype " + py::str(array.dtype()).cast<std::string>() +
                            ", the engine expects " + kilnrt::dtype_name(expected),
                        name);
  if (!(array.flags() & py::array::c_style))
    throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, "input array must be C-contiguous", name);
  kilnrt::Shape shape(array.shape(), array.shape() + array.ndim());
  return kilnrt::Tensor::borrow(const_cast<void*>(array.data()), expected, shape, keep_python_object_alive(array));
}

// A numpy array viewing the tensor's buffer; the array owns a reference to the tensor's storage.
py::array tensor_to_array(const kilnrt::Tensor& tensor) {
  auto* owner = new kilnrt::Tensor(tensor);
  py::capsule capsule(owner, [](void* p) { delete static_cast<kilnrt::Tensor*>(p); });
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(kilnrt::dtype_size(tensor.dtype()));
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<py::ssize_t>(shape[i], 1);
  }
  return py::array(py::dtype(numpy_dtype_name(tensor.dtype())), shape, strides, owner->raw(), capsule);
}

py::dict tensor_info_dict(const kilnrt::TensorInfo& info) {
  py::dict d;
  d["name"] = info.name;
  d["dtype"] = std::string(kilnrt::dtype_name(info.dtype));
  d["numpy_dtype"] = numpy_dtype_name(info.dtype);
  d["shape"] = py::tuple(py::cast(info.shape));
  d["dim_names"] = info.dim_names;
  return d;
}

kilnrt::DType dtype_from_python(const std::string& name, const std::string& where) {
  const kilnrt::DType t = kilnrt::dtype_from_name(name);
  if (t == kilnrt::DType::kUndefined)
    throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, "unknown dtype '" + name + "'", where);
  return t;
}

kilnrt::Shape shape_from_python(const py::handle& obj, const std::string& where) {
  kilnrt::Shape shape;
  try {
    for (auto d : py::reinterpret_borrow<py::sequence>(obj)) shape.push_back(d.cast<int64_t>());
  } catch (const py::cast_error&) {
    throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, "a shape must be a sequence of integers", where);
  }
  return shape;
}

// {name: (ptr, shape, dtype[, device])} -> DeviceTensors. `default_device`: the engine's device.
std::map<std::string, kilnrt::DeviceTensor> device_tensors(const py::dict& d, int default_device, const char* kind) {
  std::map<std::string, kilnrt::DeviceTensor> out;
  for (auto item : d) {
    const std::string name = py::str(item.first).cast<std::string>();
    const std::string where = std::string(kind) + " '" + name + "'";
    const char* expected = "expected a tuple (pointer, shape, dtype) or (pointer, shape, dtype, device)";
    if (!py::isinstance<py::tuple>(item.second) && !py::isinstance<py::list>(item.second))
      throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, expected, where);
    py::tuple t(py::reinterpret_borrow<py::object>(item.second));
    if (t.size() < 3 || t.size() > 4) throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, expected, where);
    kilnrt::DeviceTensor dt;
    try {
      dt.data = reinterpret_cast<void*>(static_cast<uintptr_t>(t[0].cast<uint64_t>()));
      dt.device = t.size() == 4 ? t[3].cast<int>() : default_device;
    } catch (const py::cast_error&) {
      throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                          "the pointer must be a non-negative int and the device an int", where);
    }
    dt.shape = shape_from_python(t[1], where);
    dt.dtype = dtype_from_python(py::str(t[2]).cast<std::string>(), where);
    out[name] = dt;
  }
  return out;
}

std::map<std::string, kilnrt::Shape> shapes_from_python(const py::dict& d) {
  std::map<std::string, kilnrt::Shape> out;
  for (auto item : d) {
    const std::string name = py::str(item.first).cast<std::string>();
    out[name] = shape_from_python(item.second, "input '" + name + "'");
  }
  return out;
}

py::dict shapes_to_python(const std::map<std::string, kilnrt::Shape>& shapes) {
  py::dict d;
  for (const auto& [name, shape] : shapes) d[py::str(name)] = py::tuple(py::cast(shape));
  return d;
}

void* stream_from_python(uint64_t stream) { return reinterpret_cast<void*>(static_cast<uintptr_t>(stream)); }

// enqueue()'s inputs and outputs in C++ form.
struct BoundTensors {
  std::map<std::string, kilnrt::DeviceTensor> inputs, outputs;
};

// An ExecutionContext for one caller at a time (the mutex serialises enqueue / output_shapes from several threads).
struct ContextSlot {
  std::mutex mutex;
  std::unique_ptr<kilnrt::ExecutionContext> context;
  std::atomic<bool> pinned{false};  // used inside a caller's graph capture: kept for the engine's life
};

// `engine.create_context()`: an execution context the caller drives (one stream at a time).
class ContextHandle {
 public:
  explicit ContextHandle(std::shared_ptr<kilnrt::Engine> engine, bool allocate_activations = true)
      : engine_(std::move(engine)) {
    kilnrt_python::GilRelease no_gil;
    kilnrt::ContextOptions options;
    options.allocate_activations = allocate_activations;
    slot_.context = engine_->create_context(options);
  }

  void set_activation_memory(uint64_t device_ptr, size_t bytes) {
    kilnrt_python::GilRelease no_gil;
    std::lock_guard<std::mutex> lock(slot_.mutex);
    slot_.context->set_activation_memory(reinterpret_cast<void*>(static_cast<uintptr_t>(device_ptr)), bytes);
  }

  void enqueue(const py::dict& inputs, const py::dict& outputs, uint64_t stream) {
    auto in = device_tensors(inputs, engine_->device(), "input");
    auto out = device_tensors(outputs, engine_->device(), "output");
    // ExecutionContext::enqueue checks every pointer (memory type, device, owning context) before launching.
    kilnrt_python::GilRelease no_gil;
    std::lock_guard<std::mutex> lock(slot_.mutex);
    slot_.context->enqueue(in, out, stream_from_python(stream));
  }

  py::dict output_shapes(const py::dict& input_shapes) {
    auto shapes = shapes_from_python(input_shapes);
    std::map<std::string, kilnrt::Shape> result;
    {
      kilnrt_python::GilRelease no_gil;
      std::lock_guard<std::mutex> lock(slot_.mutex);
      result = slot_.context->output_shapes(shapes);
    }
    return shapes_to_python(result);
  }

  void set_input_shape(const std::string& name, const py::handle& shape) {
    auto s = shape_from_python(shape, "input '" + name + "'");
    std::lock_guard<std::mutex> lock(slot_.mutex);
    slot_.context->set_input_shape(name, s);
  }

  int device() const { return engine_->device(); }

 private:
  std::shared_ptr<kilnrt::Engine> engine_;
  ContextSlot slot_;
};

// One loaded engine plus a pool of contexts for host runs (overlapping runs use different ones), and
// one context per caller stream for device tensors (an ExecutionContext is enqueued on one stream at a time: its
// activation memory is ordered by that stream).
class EngineHandle {
 public:
  explicit EngineHandle(std::shared_ptr<kilnrt::Engine> engine) : engine_(std::move(engine)) {}

  const kilnrt::Engine& engine() const { return *engine_; }
  const std::shared_ptr<kilnrt::Engine>& shared() const { return engine_; }

  py::dict run(const py::dict& feeds) {
    std::map<std::string, kilnrt::Tensor> inputs;
    for (auto item : feeds) {
      const std::string name = py::str(item.first).cast<std::string>();
      const kilnrt::TensorInfo* info = nullptr;
      for (const auto& candidate : engine_->inputs())
        if (candidate.name == name) info = &candidate;
      if (!info) {
        std::string names;
        for (const auto& candidate : engine_->inputs()) names += (names.empty() ? "" : ", ") + candidate.name;
        throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                            "the engine has no input named '" + name + "' (inputs: " + names + ")", name);
      }
      inputs[name] = borrow_array(name, py::reinterpret_borrow<py::array>(item.second), info->dtype);
    }
    std::map<std::string, kilnrt::Tensor> outputs;
    {
      kilnrt_python::GilRelease no_gil;
      // An idle context from the pool (a new one when all are busy): host runs that overlap in time run on
      // separate contexts, and no context is created and destroyed per call (that costs allocations, library
      // handles and graph captures every time).
      std::unique_ptr<kilnrt::ExecutionContext> context;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!idle_.empty()) {
          context = std::move(idle_.back());
          idle_.pop_back();
        }
      }
      if (!context) context = engine_->create_context();
      for (const auto& [name, tensor] : inputs) context->set_input_shape(name, tensor.shape());
      outputs = context->run(inputs);
      std::lock_guard<std::mutex> lock(mutex_);
      if (idle_.size() < kMaxIdleHostContexts) idle_.push_back(std::move(context));
    }
    py::dict result;
    for (const auto& info : engine_->outputs()) {
      auto it = outputs.find(info.name);
      if (it == outputs.end())
        throw kilnrt::Error(kilnrt::ErrorCode::kInternal, "the engine did not produce this output", info.name);
      result[py::str(info.name)] = tensor_to_array(it->second);
    }
    return result;
  }

  // Output shapes for these input shapes, computed on the context of `stream` (the one the enqueue will use).
  py::dict output_shapes(const py::dict& input_shapes, uint64_t stream) {
    auto shapes = shapes_from_python(input_shapes);
    std::map<std::string, kilnrt::Shape> result;
    {
      kilnrt_python::GilRelease no_gil;
      std::shared_ptr<ContextSlot> slot = slot_for(stream);
      std::lock_guard<std::mutex> lock(slot->mutex);
      result = slot->context->output_shapes(shapes);
    }
    return shapes_to_python(result);
  }

  void enqueue(const py::dict& inputs, const py::dict& outputs, uint64_t stream) {
    BoundTensors bound = bind(inputs, outputs);
    enqueue_bound(bound, stream);
  }

  // The (pointer, shape, dtype, device) dicts of enqueue() converted once: Engine.run's fast path keeps them for a
  // caller that binds the same tensors again.
  BoundTensors bind(const py::dict& inputs, const py::dict& outputs) const {
    return BoundTensors{device_tensors(inputs, engine_->device(), "input"),
                        device_tensors(outputs, engine_->device(), "output")};
  }

  void enqueue_bound(const BoundTensors& bound, uint64_t stream) {
    // ExecutionContext::enqueue checks every pointer (memory type, device, owning context) before launching.
    kilnrt_python::GilRelease no_gil;
    std::shared_ptr<ContextSlot> slot = slot_for(stream);
    std::lock_guard<std::mutex> lock(slot->mutex);
    slot->context->enqueue(bound.inputs, bound.outputs, stream_from_python(stream));
    // Recorded into the caller's CUDA graph (torch.cuda.graph): that graph addresses the context's memory for as
    // long as it may be replayed, so the context is never evicted.
    if (slot->context->last_execution_mode() == "caller-capture") slot->pinned = true;
  }

 private:
  static constexpr size_t kMaxStreamContexts = 8;

  // The context of a caller stream (created on first use; the least recently used beyond kMaxStreamContexts is
  // dropped — its destructor frees its memory, which waits for work still queued on it). Called without the GIL.
  std::shared_ptr<ContextSlot> slot_for(uint64_t stream) {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    for (auto it = streams_.begin(); it != streams_.end(); ++it) {
      if (it->first == stream) {
        streams_.splice(streams_.begin(), streams_, it);
        return streams_.front().second;
      }
    }
    // A new stream (torch's capture stream included) gets a new context: reusing another stream's context would
    // race with work still queued there. Creating one inside a capture is safe (it allocates in relaxed mode).
    auto slot = std::make_shared<ContextSlot>();
    slot->context = engine_->create_context();
    streams_.emplace_front(stream, slot);
    size_t unpinned = 0;
    for (const auto& entry : streams_) unpinned += entry.second->pinned ? 0 : 1;
    if (unpinned > kMaxStreamContexts) {
      for (auto it = std::prev(streams_.end());; --it) {  // the least recently used context not in a caller graph
        if (!it->second->pinned) {
          streams_.erase(it);
          break;
        }
        if (it == streams_.begin()) break;
      }
    }
    return slot;
  }

  std::shared_ptr<kilnrt::Engine> engine_;
  static constexpr size_t kMaxIdleHostContexts = 8;
  std::mutex mutex_;
  std::vector<std::unique_ptr<kilnrt::ExecutionContext>> idle_;  // contexts for host runs, not in use
  std::mutex streams_mutex_;
  std::list<std::pair<uint64_t, std::shared_ptr<ContextSlot>>> streams_;
};

void build_engine_file(const std::string& onnx_path, const std::string& engine_path, const std::string& device,
                       bool fp16, bool bf16, bool tf32, const std::vector<std::string>& shape_specs,
                       const std::vector<std::pair<std::string, std::string>>& layer_precisions, bool mark_all_outputs,
                       bool io16) {
  kilnrt::BuildOptions options;
  options.io16 = io16;
  options.layer_precisions = layer_precisions;
  options.mark_all_outputs = mark_all_outputs;
  options.device = device;
  options.fp16 = fp16;
  options.bf16 = bf16;
  options.tf32 = tf32;
  if (!shape_specs.empty()) {
    std::vector<kilnrt::InputProfile> profile;
    for (const auto& spec : shape_specs) profile.push_back(kilnrt::parse_shape_spec(spec));
    options.profiles.push_back(profile);
  }
  kilnrt_python::GilRelease no_gil;
  kilnrt::build_engine_file(onnx_path, engine_path, options);
}

// Stable, Python-friendly identifiers of the error codes (kilnrt.Error.code).
const char* error_code_id(kilnrt::ErrorCode code) {
  using kilnrt::ErrorCode;
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kInvalidModel: return "invalid_model";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInvalidEngine: return "invalid_engine";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kCuda: return "cuda";
    case ErrorCode::kOutOfMemory: return "out_of_memory";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

void translate_kilnrt_error(const kilnrt::Error& e) {
  try {
    py::object cls = py::module_::import("kilnrt._errors").attr("Error");
    py::object exc = cls(py::str(e.what()), py::str(error_code_id(e.code())), py::str(e.where()), py::str(e.message()),
                         py::str(e.expression()), py::str(e.detail()));
    PyErr_SetObject(cls.ptr(), exc.ptr());
  } catch (py::error_already_set&) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

}  // namespace

PYBIND11_MODULE(_kilnrt, m) {
  m.doc() = "kilnrt native extension (use the `kilnrt` package API)";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kilnrt::Error& e) {
      translate_kilnrt_error(e);
    }
  });

  m.def("version", []() { return std::string(kilnrt::version()); });
  m.def("doctor_report", []() {
    kilnrt_python::GilRelease no_gil;
    return kilnrt::doctor_report();
  });
  m.def("cuda_available", []() {
    std::string why;
    bool ok;
    {
      kilnrt_python::GilRelease no_gil;
      ok = kilnrt::cuda_available(&why);
    }
    return py::make_tuple(ok, why);
  });
  m.def("build_engine_file", &build_engine_file, py::arg("onnx_path"), py::arg("engine_path"), py::arg("device"),
        py::arg("fp16"), py::arg("bf16"), py::arg("tf32"), py::arg("shape_specs"),
        py::arg("layer_precisions") = std::vector<std::pair<std::string, std::string>>{},
        py::arg("mark_all_outputs") = false, py::arg("io16") = false);
  m.def("parse_shape_spec", [](const std::string& spec) {
    kilnrt::InputProfile p = kilnrt::parse_shape_spec(spec);
    return py::make_tuple(p.name, py::tuple(py::cast(p.min)), py::tuple(py::cast(p.opt)), py::tuple(py::cast(p.max)));
  });
  m.def("describe_onnx_model", &kilnrt::describe_onnx_model, py::arg("onnx_path"));
  m.def("numpy_dtype_for",
        [](const std::string& kilnrt_dtype) { return numpy_dtype_name(kilnrt::dtype_from_name(kilnrt_dtype)); });

  py::class_<EngineHandle, std::shared_ptr<EngineHandle>>(m, "EngineHandle")
      .def_static(
          "load",
          [](const std::string& path, int device) {
            std::shared_ptr<kilnrt::Engine> engine;
            {
              kilnrt_python::GilRelease no_gil;
              engine = kilnrt::Engine::load(path, device);
            }
            return std::make_shared<EngineHandle>(engine);
          },
          py::arg("path"), py::arg("device") = 0)
      .def_static(
          "from_bytes",
          [](const py::bytes& data, const std::string& label, int device) {
            std::string_view view = data;
            return std::make_shared<EngineHandle>(kilnrt::Engine::from_bytes(view.data(), view.size(), label, device));
          },
          py::arg("data"), py::arg("label"), py::arg("device") = 0)
      .def_property_readonly("device", [](const EngineHandle& h) { return h.engine().device(); })
      .def_property_readonly("inputs",
                             [](const EngineHandle& h) {
                               py::list l;
                               for (const auto& i : h.engine().inputs()) l.append(tensor_info_dict(i));
                               return l;
                             })
      .def_property_readonly("outputs",
                             [](const EngineHandle& h) {
                               py::list l;
                               for (const auto& i : h.engine().outputs()) l.append(tensor_info_dict(i));
                               return l;
                             })
      .def_property_readonly("layers",
                             [](const EngineHandle& h) {
                               py::list l;
                               for (const auto& layer : h.engine().layers()) {
                                 py::dict d;
                                 d["name"] = layer.name;
                                 d["op_type"] = layer.op_type;
                                 d["placement"] = layer.placement;
                                 d["tactic"] = layer.tactic;
                                 d["inputs"] = layer.inputs;
                                 d["outputs"] = layer.outputs;
                                 d["precision"] = layer.precision;
                                 l.append(d);
                               }
                               return l;
                             })
      .def_property_readonly("header",
                             [](const EngineHandle& h) {
                               const auto& hd = h.engine().header();
                               py::dict d;
                               d["format_version"] = hd.format_version;
                               d["kilnrt_version"] = hd.kilnrt_version;
                               d["target"] = hd.target;
                               d["build_options"] = hd.build_options;
                               d["model_hash"] = hd.model_hash;
                               d["file_size"] = hd.file_size;
                               d["weights_bytes"] = hd.weights_bytes;
                               return d;
                             })
      .def_property_readonly(
          "profiles",
          [](const EngineHandle& h) {
            py::list profiles;
            for (const auto& profile : h.engine().profiles()) {
              py::list ranges;
              for (const auto& r : profile)
                ranges.append(py::make_tuple(r.name, py::tuple(py::cast(r.min)), py::tuple(py::cast(r.opt)),
                                             py::tuple(py::cast(r.max))));
              profiles.append(ranges);
            }
            return profiles;
          })
      .def("describe", [](const EngineHandle& h) { return h.engine().describe(); })
      .def("run", &EngineHandle::run, py::arg("inputs"))
      .def("output_shapes", &EngineHandle::output_shapes, py::arg("input_shapes"), py::arg("stream"))
      .def("enqueue", &EngineHandle::enqueue, py::arg("inputs"), py::arg("outputs"), py::arg("stream"))
      .def("bind", &EngineHandle::bind, py::arg("inputs"), py::arg("outputs"))
      .def("enqueue_bound", &EngineHandle::enqueue_bound, py::arg("bound"), py::arg("stream"))
      .def_property_readonly("activation_memory_size",
                             [](const EngineHandle& h) { return h.engine().activation_memory_size(); })
      .def_property_readonly("activation_memory_sizes",
                             [](const EngineHandle& h) { return h.engine().activation_memory_sizes(); })
      .def(
          "create_context",
          [](const EngineHandle& h, bool allocate_activations) {
            return std::make_shared<ContextHandle>(h.shared(), allocate_activations);
          },
          py::arg("allocate_activations") = true);

  py::class_<BoundTensors>(m, "BoundTensors");

  py::class_<ContextHandle, std::shared_ptr<ContextHandle>>(m, "ContextHandle")
      .def_property_readonly("device", &ContextHandle::device)
      .def("enqueue", &ContextHandle::enqueue, py::arg("inputs"), py::arg("outputs"), py::arg("stream"))
      .def("output_shapes", &ContextHandle::output_shapes, py::arg("input_shapes"))
      .def("set_input_shape", &ContextHandle::set_input_shape, py::arg("name"), py::arg("shape"))
      .def("set_activation_memory", &ContextHandle::set_activation_memory, py::arg("device_ptr"), py::arg("bytes"));

  kilnrt_python::register_dlpack(m);
  kilnrt_python::register_cuda_objects(m);
  kilnrt_python::register_custom_ops(m);
  kilnrt_python::register_testing_hooks(m);
}
