// The public API's exception boundary (api_boundary.h).
#include "engine/api_boundary.h"

#include <cxxabi.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <typeinfo>
#include <utility>

#include "core/check.h"

namespace kilnrt::engine {
namespace {

std::atomic<bool> g_translate{true};

// "std::out_of_range" rather than "St12out_of_range".
std::string type_name(const std::exception& e) {
  const char* mangled = typeid(e).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  return name;
}

class TranslatingContext final : public ExecutionContext {
 public:
  explicit TranslatingContext(std::unique_ptr<ExecutionContext> inner) : inner_(std::move(inner)) {}

  void set_input_shape(const std::string& name, const Shape& shape) override {
    translate_exceptions("ExecutionContext::set_input_shape", [&] { inner_->set_input_shape(name, shape); });
  }
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) override {
    return translate_exceptions("ExecutionContext::run", [&] { return inner_->run(inputs); });
  }
  void enqueue(const std::map<std::string, DeviceTensor>& inputs, const std::map<std::string, DeviceTensor>& outputs,
               void* stream) override {
    translate_exceptions("ExecutionContext::enqueue", [&] { inner_->enqueue(inputs, outputs, stream); });
  }
  std::map<std::string, Shape> output_shapes(const std::map<std::string, Shape>& input_shapes) override {
    return translate_exceptions("ExecutionContext::output_shapes", [&] { return inner_->output_shapes(input_shapes); });
  }
  void set_cuda_graphs(bool enabled) override {
    translate_exceptions("ExecutionContext::set_cuda_graphs", [&] { inner_->set_cuda_graphs(enabled); });
  }
  std::string last_execution_mode() const override { return inner_->last_execution_mode(); }
  void set_activation_memory(void* device_ptr, size_t bytes) override {
    translate_exceptions("ExecutionContext::set_activation_memory",
                         [&] { inner_->set_activation_memory(device_ptr, bytes); });
  }
  void set_profiling(bool enabled) override {
    translate_exceptions("ExecutionContext::set_profiling", [&] { inner_->set_profiling(enabled); });
  }
  bool profiling() const override { return inner_->profiling(); }
  std::vector<LayerTiming> layer_timings() const override {
    return translate_exceptions("ExecutionContext::layer_timings", [&] { return inner_->layer_timings(); });
  }
  size_t device_memory_bytes() const override { return inner_->device_memory_bytes(); }

 private:
  std::unique_ptr<ExecutionContext> inner_;
};

}  // namespace

void set_exception_translation(bool enabled) { g_translate.store(enabled, std::memory_order_relaxed); }
bool exception_translation() { return g_translate.load(std::memory_order_relaxed); }

void rethrow_translated(const char* where, std::exception_ptr caught) {
  if (!exception_translation()) std::rethrow_exception(caught);
  try {
    std::rethrow_exception(caught);
  } catch (const std::bad_alloc& e) {
    KILNRT_THROW(kOutOfMemory, where, "out of host memory (" << type_name(e) << ": " << e.what() << ")");
  } catch (const std::exception& e) {
    KILNRT_THROW(kInternal, where,
                 "internal error: " << type_name(e) << " escaped from kilnrt: " << e.what()
                                    << " (a bug: please report it with the model or engine file)");
  }
}

std::unique_ptr<ExecutionContext> with_exception_translation(std::unique_ptr<ExecutionContext> context) {
  return std::make_unique<TranslatingContext>(std::move(context));
}

bool translates_exceptions(const ExecutionContext& context) {
  return dynamic_cast<const TranslatingContext*>(&context) != nullptr;
}

}  // namespace kilnrt::engine
