// `kilnrt ops [--markdown]`: the operators kilnrt implements, from the op registry (src/ops): opset range, dtypes
// of the CPU kernel, a one-line description. `--markdown` prints docs/operators.md (regenerate it with
// scripts/gen_operators_md.sh). The CUDA column needs the CUDA layer registry (src/backends/cuda), which this tool
// cannot query: it is left as "see note". Custom ops (include/kilnrt/custom_op.h) registered by a process show up
// in its registry too (domain::Name); none are registered in the CLI.
#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli_common.h"
#include "ops/op_registry.h"

namespace kilnrt_cli {
namespace {

std::string range_text(const kilnrt::ops::OpSchema& s) {
  return std::to_string(s.since_version) + (s.until_version >= 1000 ? "+" : "-" + std::to_string(s.until_version));
}

std::string dtypes_text(const kilnrt::ops::OpSchema& s) {
  std::string out;
  for (kilnrt::DType t : s.dtypes) out += (out.empty() ? "" : ", ") + std::string(kilnrt::dtype_name(t));
  return out.empty() ? "-" : out;
}

void print_ops(bool markdown) {
  std::vector<const kilnrt::ops::OpSchema*> all = kilnrt::ops::OpRegistry::instance().all();
  std::sort(all.begin(), all.end(), [](const auto* a, const auto* b) {
    return std::tie(a->domain, a->op_type, a->since_version) < std::tie(b->domain, b->op_type, b->since_version);
  });
  if (!markdown) {
    for (const auto* s : all)
      std::cout << (s->domain.empty() ? "" : s->domain + "::") << s->op_type << "  opset " << range_text(*s) << "  ["
                << dtypes_text(*s) << "]  " << s->doc << "\n";
    return;
  }
  std::map<std::string, int> domains;
  for (const auto* s : all) ++domains[s->domain.empty() ? "ai.onnx" : s->domain];
  std::cout << "# kilnrt operators\n\n"
            << "Generated from the op registry by `kilnrt ops --markdown` (scripts/gen_operators_md.sh); do not edit "
               "by hand.\n\n"
            << "- **Opsets**: the ONNX opset versions each schema implements (`13+`: 13 and newer). Models with a "
               "default-domain opset from 1 to 12 import with a warning; each node needs a schema covering its "
               "opset, and before opset 7 the legacy `broadcast=1` with an `axis` is rejected (see "
               "`src/ir/onnx_import.h`).\n"
            << "- **Cast to bfloat16**: truncation (the low 16 bits of the float32 value dropped) up to opset 18, as "
               "ONNX's reference and its 1.12 test data do (the spec leaves the rounding open there); round to "
               "nearest even from Cast-19 on.\n"
            << "- **CPU dtypes**: the dtypes of the main data input that the CPU reference kernel handles.\n"
            << "- **CUDA**: not filled in here: the CUDA layer registry (`src/backends/cuda/cuda_layer.h`, "
               "`supports()`) is only compiled into CUDA builds and is not queried by this generator. Ops without a "
               "CUDA layer run on the CPU inside CUDA engines (see the layer placement in `kilnrt inspect`).\n"
            << "- **Custom ops**: ops of your own domain registered at run time (C++ `kilnrt::register_custom_op` in "
               "`include/kilnrt/custom_op.h`, Python `kilnrt.register_op`) join the registry of that process only, "
               "so they are not listed here. They run on the CPU and, with a CUDA implementation, on CUDA; engine "
               "files record them by domain and name. See `docs/custom-ops.md`.\n"
            << "- **Unit tests**: every op below is exercised by a C++ unit test besides the conformance cases "
               "(`scripts/op_test_audit.py`, run by `tests/python/test_op_test_audit.py`).\n"
            << "- Conformance against ONNX's node tests: `tests/conformance/run_conformance.py`.\n\n";
  for (const auto& [domain, count] : domains) std::cout << "Domain `" << domain << "`: " << count << " schemas.\n";
  std::cout << "\n| Op | Domain | Opsets | CPU dtypes | CPU | CUDA | Description |\n"
            << "|---|---|---|---|---|---|---|\n";
  for (const auto* s : all) {
    std::string doc;
    for (char c : s->doc) doc += c == '|' ? std::string("\\|") : std::string(1, c);
    std::cout << "| " << s->op_type << " | " << (s->domain.empty() ? "ai.onnx" : s->domain) << " | " << range_text(*s)
              << " | " << dtypes_text(*s) << " | " << (s->cpu ? "yes" : "no") << " | see note | " << doc << " |\n";
  }
}

}  // namespace

void add_ops_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("ops", "List the operators kilnrt implements (opsets, CPU dtypes)");
  static bool markdown = false;
  cmd->add_flag("--markdown", markdown, "Print docs/operators.md (a Markdown table)");
  cmd->callback([]() {
    print_ops(markdown);
    std::cout.flush();
  });
}

}  // namespace kilnrt_cli
