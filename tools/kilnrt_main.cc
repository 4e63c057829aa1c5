// kilnrt command-line tool: `kilnrt build|run|inspect|doctor|ops|bench|profile`. Each command lives in its own file
// (cmd_*.cc).
#include <cstdio>
#include <exception>
#include <string>

#include "cli_common.h"

namespace kilnrt_cli {
void add_ops_command(CLI::App& app);
}  // namespace kilnrt_cli

int main(int argc, char** argv) {
  CLI::App app{std::string("kilnrt ") + kilnrt::version() +
               ": build optimized inference engines from ONNX models and run them"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kilnrt ") + kilnrt::version());
  kilnrt_cli::add_build_command(app);
  kilnrt_cli::add_run_command(app);
  kilnrt_cli::add_inspect_command(app);
  kilnrt_cli::add_doctor_command(app);
  kilnrt_cli::add_ops_command(app);
  kilnrt_cli::add_bench_command(app);
  kilnrt_cli::add_profile_command(app);
  try {
    app.parse(argc, argv);  // the chosen command runs in its callback
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const kilnrt::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());  // what() reads "kilnrt <kind> [where]: message (...)"
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kilnrt: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
