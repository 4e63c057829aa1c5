// kilnrt_consumer [MODEL.onnx]: prints the kilnrt version; with a model, builds a CPU engine in memory, runs it on
// ones (dynamic dims = 1) and prints each output's name, shape and first value.
#include <iostream>

#include <kilnrt/kilnrt.h>

int main(int argc, char** argv) {
  std::cout << "kilnrt " << kilnrt::version() << "\n";
  if (argc < 2) return 0;
  try {
    std::vector<uint8_t> bytes = kilnrt::build_engine(argv[1]);
    auto engine = kilnrt::Engine::from_bytes(bytes.data(), bytes.size());
    std::map<std::string, kilnrt::Tensor> inputs;
    for (const auto& info : engine->inputs()) {
      kilnrt::Shape shape = info.shape;
      for (auto& d : shape) d = d < 0 ? 1 : d;
      kilnrt::Tensor t = kilnrt::Tensor::empty(kilnrt::DType::kFloat32, shape);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 1.0f;
      inputs[info.name] = t;
    }
    for (const auto& [name, tensor] : engine->run(inputs))
      std::cout << "output " << name << " " << kilnrt::shape_to_string(tensor.shape()) << " first "
                << (tensor.numel() ? tensor.data<float>()[0] : 0.0f) << "\n";
  } catch (const kilnrt::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
