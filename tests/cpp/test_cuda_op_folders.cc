// The source layout the registries record (docs/architecture.md): every CPU op lives in its op folder
// src/ops/<family>/<unit>/, and every CUDA layer in the cuda/ folder of its op's schema folder, except the layers the
// CUDA executor owns (control flow and sequences, under src/backends/cuda/control_flow/). Needs a CUDA build, not a
// GPU: only the registries are read.
#include <gtest/gtest.h>

#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "ops/op_registry.h"

namespace kb = kilnrt::backends::cuda;
namespace ko = kilnrt::ops;

namespace {

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

constexpr const char* kExecutorFolder = "backends/cuda/control_flow/";

}  // namespace

TEST(CudaOpFolders, RegistryHasNoDuplicateKeys) { EXPECT_EQ(kb::LayerRegistry::instance().conflicts(), ""); }

TEST(CudaOpFolders, CpuSchemasLiveInOpFolders) {
  std::ostringstream bad;
  for (const ko::OpSchema* s : ko::OpRegistry::instance().all()) {
    if (s->source.empty()) continue;  // custom ops registered at run time
    // ops/<family>/<unit>/<file>.cc
    int slashes = 0;
    for (char c : s->source) slashes += c == '/';
    if (!starts_with(s->source, "ops/") || slashes != 3)
      bad << "  " << (s->domain.empty() ? "" : s->domain + ":") << s->op_type << " in " << s->source << "\n";
  }
  EXPECT_EQ(bad.str(), "") << "CPU schemas outside src/ops/<family>/<unit>/:\n" << bad.str();
}

TEST(CudaOpFolders, CudaLayersLiveInTheirSchemaFolder) {
  std::ostringstream bad;
  const std::vector<const ko::OpSchema*> schemas = ko::OpRegistry::instance().all();
  int checked = 0;
  for (const kb::LayerEntry* e : kb::LayerRegistry::instance().all()) {
    const std::string key = (e->domain.empty() ? "" : e->domain + ":") + e->op_type;
    if (starts_with(e->source, kExecutorFolder)) continue;  // executor-owned: control flow, sequences
    ++checked;
    const std::string folder = folder_of(e->source);
    if (e->domain == kb::kCustomLayerDomain) {
      if (folder != "ops/custom/cuda") bad << "  " << key << ": " << e->source << " (expected ops/custom/cuda/)\n";
      continue;
    }
    std::set<std::string> expected;
    for (const ko::OpSchema* s : schemas)
      if (s->op_type == e->op_type && s->domain == e->domain && !s->source.empty())
        expected.insert(folder_of(s->source) + "/cuda");
    if (expected.empty()) {
      bad << "  " << key << ": " << e->source << " has no CPU schema of that domain and op type\n";
    } else if (!expected.count(folder)) {
      bad << "  " << key << ": " << e->source << " (expected " << *expected.begin() << "/)\n";
    }
  }
  EXPECT_EQ(bad.str(), "") << "CUDA layers outside their op's folder:\n" << bad.str();
  EXPECT_GT(checked, 150) << "the CUDA layer registry looks empty";
  std::cout << checked << " CUDA layers checked in their op folders\n";
}
