// kilnrt command-line tool: `kilnrt build|run|inspect|doctor|ops|bench|profile`. Each command lives in its own file
// (cmd_*.cc). The conventions every command follows (exit status, the error line, --verbose / --quiet, --device,
// --json) are in docs/cli.md.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "cli_common.h"

namespace kilnrt_cli {
void add_ops_command(CLI::App& app);
}  // namespace kilnrt_cli

namespace {

constexpr int kExitFailure = 1;  // the command failed (a file missing or damaged, a model unsupported, ...)
constexpr int kExitUsage = 2;    // the command line is wrong (unknown flag, missing argument, invalid value)

// --verbose / --quiet reach the library through KILNRT_LOG_LEVEL (read at its first log call, after this).
void apply_logging() {
  const kilnrt_cli::GlobalOptions& g = kilnrt_cli::global_options();
  if (g.verbose)
    ::setenv("KILNRT_LOG_LEVEL", "debug", 1);
  else if (g.quiet)
    ::setenv("KILNRT_LOG_LEVEL", "error", 1);
}

// The failing check and source location of errors: with --verbose, or KILNRT_LOG_LEVEL=debug / verbose.
bool show_detail() {
  if (kilnrt_cli::global_options().verbose) return true;
  const char* level = std::getenv("KILNRT_LOG_LEVEL");
  return level && (std::strcmp(level, "debug") == 0 || std::strcmp(level, "verbose") == 0);
}

// What to do about common failures (one line, or "").
std::string hint_for(const kilnrt::Error& e) {
  using kilnrt::ErrorCode;
  switch (e.code()) {
    case ErrorCode::kInvalidEngine:
      return "engine files are written by `kilnrt build`: rebuild this one from its ONNX model with this kilnrt (" +
             std::string(kilnrt::version()) + ")";
    case ErrorCode::kUnsupported: return "`kilnrt ops` lists the operators, opsets and dtypes kilnrt implements";
    case ErrorCode::kCuda: return "`kilnrt doctor` reports the GPU, driver and CUDA libraries kilnrt finds";
    case ErrorCode::kOutOfMemory: return "try smaller input shapes (--shapes) or a smaller batch";
    default: return "";
  }
}

void report_error(const kilnrt::Error& e) {
  std::fprintf(stderr, "error: %s\n", e.summary().c_str());
  const std::string hint = hint_for(e);
  if (!hint.empty()) std::fprintf(stderr, "hint: %s\n", hint.c_str());
  const std::string detail = e.detail();
  if (!detail.empty()) {
    if (show_detail())
      std::fprintf(stderr, "detail: %s\n", detail.c_str());
    else
      std::fprintf(stderr, "(--verbose shows where in kilnrt this was detected)\n");
  }
}

// Standard output must have been written: `kilnrt inspect m.onnx > /dev/full` fails instead of exiting 0.
int check_stdout(int rc) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && std::cout.good() && !std::ferror(stdout)) return rc;
  if (rc == 0) {
    std::fprintf(stderr, "error: cannot write to standard output: %s\n", err ? std::strerror(err) : "write error");
    rc = kExitFailure;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      std::string("kilnrt ") + kilnrt::version() + ": build optimized inference engines from ONNX models and run them",
      "kilnrt"};  // the program name in "Usage:" lines, whatever path it was started from
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kilnrt ") + kilnrt::version());
  kilnrt_cli::GlobalOptions& global = kilnrt_cli::global_options();
  CLI::Option* verbose = app.add_flag("-v,--verbose", global.verbose,
                                      "Debug logging, and where in kilnrt an error was detected (any command)");
  CLI::Option* quiet =
      app.add_flag("-q,--quiet", global.quiet, "Errors only on stderr, no informational lines (any command)");
  verbose->excludes(quiet);
  app.fallthrough();  // the global flags also work after the command: `kilnrt run m.engine -v`
  app.parse_complete_callback(apply_logging);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("error: ") + e.what() + "\nrun 'kilnrt --help' or 'kilnrt COMMAND --help' for usage\n";
  });
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
    const int rc = app.exit(e);  // prints help / version (status 0) or the error line
    return check_stdout(rc == 0 ? 0 : kExitUsage);
  } catch (const kilnrt_cli::UsageError& e) {
    std::fprintf(stderr, "error: %s\nrun 'kilnrt COMMAND --help' for usage\n", e.what());
    return kExitUsage;
  } catch (const kilnrt::Error& e) {
    std::cout.flush();
    report_error(e);
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitFailure;
  }
  return check_stdout(0);
}
