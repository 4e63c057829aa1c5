// _kilnrt.register_custom_op: custom ops whose shape and CPU functions are Python callables (numpy in, numpy out)
// and whose CUDA implementation is CUDA C source compiled with NVRTC (kilnrt::nvrtc_custom_kernel). The public
// Python API is kilnrt.register_op (python/kilnrt/_custom_op.py).
//
// Threads and the GIL: kilnrt runs engines with the GIL released; a Python callback takes the GIL only while it
// runs (shape function, CPU function, CUDA launch function) and releases it again, so callbacks of engines run from
// several threads are serialised by the GIL while the rest of each engine runs in parallel. The callables stay
// referenced for the life of the process (custom ops are never unregistered); references are dropped without
// touching Python once the interpreter has finalised.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "kilnrt/custom_op.h"
#include "kilnrt/error.h"
#include "kilnrt_py.h"

namespace py = pybind11;

namespace kilnrt_python {
namespace {

// A Python callable kept alive by C++ callbacks; safe to destroy at any time (see the file comment).
struct PyCallable {
  py::object fn;
  explicit PyCallable(py::object f) : fn(std::move(f)) {}
  PyCallable(const PyCallable&) = delete;
  PyCallable& operator=(const PyCallable&) = delete;
  ~PyCallable() {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      fn = py::object();
    } else {
      fn.release();  // the interpreter is gone: leak the reference
    }
  }
};
using PyFn = std::shared_ptr<PyCallable>;

// Runs `body` with the GIL held; a Python exception becomes a kilnrt::Error (the caller adds the node's name).
template <class F>
auto with_gil(const char* what, F&& body) -> decltype(body()) {
  py::gil_scoped_acquire gil;
  try {
    return body();
  } catch (py::error_already_set& e) {
    const std::string msg = std::string("Python ") + what + " raised " + e.what();
    throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, msg);
  } catch (const py::cast_error& e) {
    throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                        std::string("Python ") + what + " returned a value of the wrong type: " + e.what());
  }
}

std::string numpy_name(kilnrt::DType t) {
  if (t == kilnrt::DType::kBFloat16) return "uint16";  // raw bits, as elsewhere in the module
  return kilnrt::dtype_name(t);
}

kilnrt::DType dtype_of(const py::handle& numpy_dtype) {
  const std::string name = py::str(py::dtype::from_args(py::reinterpret_borrow<py::object>(numpy_dtype)));
  return kilnrt::dtype_from_name(name);
}

py::dict attributes(const kilnrt::CustomOpNode& node) {
  py::dict d;
  for (const std::string& k : node.attr_names()) {
    const std::string kind = node.attr_kind(k);
    if (kind == "int")
      d[k.c_str()] = node.attr_int(k);
    else if (kind == "float")
      d[k.c_str()] = node.attr_float(k);
    else if (kind == "string")
      d[k.c_str()] = node.attr_string(k);
    else if (kind == "ints")
      d[k.c_str()] = node.attr_ints(k);
    else if (kind == "floats")
      d[k.c_str()] = node.attr_floats(k);
    else if (kind == "strings")
      d[k.c_str()] = node.attr_strings(k);
  }
  return d;
}

// A read-only numpy view of a host tensor (the view keeps the tensor's storage alive).
py::object tensor_view(const kilnrt::Tensor* t) {
  if (!t) return py::none();
  auto* owner = new kilnrt::Tensor(*t);
  py::capsule capsule(owner, [](void* p) { delete static_cast<kilnrt::Tensor*>(p); });
  std::vector<py::ssize_t> shape(t->shape().begin(), t->shape().end());
  py::array a(py::dtype(numpy_name(t->dtype())), shape, {}, owner->raw(), capsule);
  a.attr("flags").attr("writeable") = false;
  return std::move(a);
}

kilnrt::Tensor tensor_from(const py::handle& obj, size_t index) {
  py::module_ np = py::module_::import("numpy");
  // np.require keeps 0-d results 0-d (ascontiguousarray would make them 1-d).
  py::array a = np.attr("require")(np.attr("asarray")(obj), py::arg("requirements") = "C");
  const kilnrt::DType t = dtype_of(a.dtype());
  kilnrt::Shape shape(a.shape(), a.shape() + a.ndim());
  (void)index;
  return kilnrt::Tensor::from_data(a.data(), t, shape);
}

kilnrt::CustomShapeFn shape_fn(PyFn fn) {
  return [fn](kilnrt::CustomShapeContext& c) {
    with_gil("shape function", [&] {
      py::list ins;
      for (const kilnrt::CustomTensorType& t : c.inputs) {
        if (!t.present) {
          ins.append(py::none());
          continue;
        }
        py::object shape = py::none();
        if (t.has_shape) {
          py::list dims;
          for (int64_t d : t.shape) dims.append(d < 0 ? py::object(py::none()) : py::object(py::int_(d)));
          shape = py::tuple(dims);
        }
        ins.append(py::make_tuple(shape, numpy_name(t.dtype)));
      }
      py::object out = fn->fn(ins, attributes(c.node));
      py::list outs = py::list(out);
      if (outs.size() != c.outputs.size())
        throw kilnrt::Error(kilnrt::ErrorCode::kInvalidModel,
                            "Python shape function returned " + std::to_string(outs.size()) +
                                " outputs, the node has " + std::to_string(c.outputs.size()));
      for (size_t i = 0; i < outs.size(); ++i) {
        py::tuple pair = outs[i].cast<py::tuple>();
        if (pair.size() != 2)
          throw kilnrt::Error(kilnrt::ErrorCode::kInvalidModel,
                              "Python shape function: output " + std::to_string(i) + " must be (shape, dtype)");
        kilnrt::CustomTensorType& o = c.outputs[i];
        o.dtype = dtype_of(pair[1]);
        o.has_shape = !pair[0].is_none();
        o.shape.clear();
        if (o.has_shape)
          for (py::handle d : pair[0]) o.shape.push_back(d.is_none() ? -1 : d.cast<int64_t>());
      }
    });
  };
}

kilnrt::CustomCpuFn cpu_fn(PyFn fn) {
  return [fn](kilnrt::CustomCpuContext& c) {
    with_gil("CPU function", [&] {
      py::list ins;
      for (const kilnrt::Tensor* t : c.inputs) ins.append(tensor_view(t));
      py::object out = fn->fn(ins, attributes(c.node));
      if (py::isinstance<py::tuple>(out) || py::isinstance<py::list>(out)) {
        py::sequence seq = out.cast<py::sequence>();
        if (seq.size() != c.outputs.size())
          throw kilnrt::Error(kilnrt::ErrorCode::kInvalidModel,
                              "Python CPU function returned " + std::to_string(seq.size()) + " arrays, the node has " +
                                  std::to_string(c.outputs.size()) + " outputs");
        for (size_t i = 0; i < seq.size(); ++i)
          if (!seq[i].is_none()) c.outputs[i] = tensor_from(seq[i], i);
      } else {
        if (c.outputs.size() != 1)
          throw kilnrt::Error(kilnrt::ErrorCode::kInvalidModel,
                              "Python CPU function returned one array, the node has " +
                                  std::to_string(c.outputs.size()) + " outputs: return a tuple");
        c.outputs[0] = tensor_from(out, 0);
      }
    });
  };
}

kilnrt::CustomLaunchFn launch_fn(PyFn fn) {
  return [fn](const std::vector<kilnrt::Shape>& in, const std::vector<kilnrt::Shape>& out) {
    return with_gil("CUDA launch function", [&] {
      auto shapes = [](const std::vector<kilnrt::Shape>& v) {
        py::list l;
        for (const kilnrt::Shape& s : v) l.append(py::tuple(py::cast(s)));
        return l;
      };
      py::tuple r = fn->fn(shapes(in), shapes(out)).cast<py::tuple>();
      if (r.size() < 2 || r.size() > 4)
        throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                            "CUDA launch function must return (grid, block[, shared_bytes[, int_args]])");
      kilnrt::CustomLaunchDims d;
      d.grid = r[0].cast<unsigned>();
      d.block = r[1].cast<unsigned>();
      if (r.size() > 2) d.shared_bytes = r[2].cast<unsigned>();
      if (r.size() > 3) d.args = r[3].cast<std::vector<long long>>();
      return d;
    });
  };
}

void register_op(const std::string& domain, const std::string& name, py::object cpu, py::object shape,
                 const std::string& cuda_source, const std::string& cuda_kernel, py::object launch,
                 const std::vector<std::pair<std::string, float>>& float_attrs,
                 const std::vector<std::string>& nvrtc_options, int since_version, int until_version,
                 const std::string& doc) {
  kilnrt::CustomOp op;
  op.domain = domain;
  op.name = name;
  op.since_version = since_version;
  op.until_version = until_version;
  op.doc = doc;
  if (!cpu.is_none()) op.cpu = cpu_fn(std::make_shared<PyCallable>(cpu));
  if (!shape.is_none()) op.shape = shape_fn(std::make_shared<PyCallable>(shape));
  if (!cuda_source.empty()) {
    if (cuda_kernel.empty())
      throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, "cuda_source needs cuda_kernel (the kernel's name)",
                          "custom op " + domain + ":" + name);
    kilnrt::NvrtcCustomKernel k = kilnrt::nvrtc_custom_kernel(
        cuda_source, cuda_kernel, launch.is_none() ? nullptr : launch_fn(std::make_shared<PyCallable>(launch)),
        float_attrs, nvrtc_options);
    op.cuda = k.cuda;
    op.cuda_prepare = k.prepare;
  }
  kilnrt::register_custom_op(std::move(op));
}

}  // namespace

void register_custom_ops(py::module_& m) {
  m.def("register_custom_op", &register_op, py::arg("domain"), py::arg("name"), py::arg("cpu"), py::arg("shape"),
        py::arg("cuda_source"), py::arg("cuda_kernel"), py::arg("launch"), py::arg("float_attrs"),
        py::arg("nvrtc_options"), py::arg("since_version"), py::arg("until_version"), py::arg("doc"));
  m.def("registered_custom_ops", &kilnrt::registered_custom_ops);
  m.def("is_custom_op_registered", &kilnrt::is_custom_op_registered);
}

}  // namespace kilnrt_python
