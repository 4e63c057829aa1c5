// Shared helpers of the kilnrt command-line tool (tools/*.cc): the conventions every command follows (docs/cli.md)
// and value summaries. Public API only.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kilnrt/kilnrt.h"

namespace kilnrt_cli {

// Each command adds its subcommand (options + callback) to the app.
void add_build_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_doctor_command(CLI::App& app);
void add_bench_command(CLI::App& app);    // tools/cmd_bench.cc
void add_profile_command(CLI::App& app);  // tools/cmd_profile.cc

// One line about a tensor's values: "min -0.12 max 3.4 mean 0.5 first [0.1, 0.2, ...]".
std::string summarize_values(const kilnrt::Tensor& tensor, int first_count = 5);

// A tensor of `dtype`/`shape` filled with pseudo-random values (floats in [-1, 1), integers in [0, 10), bools).
kilnrt::Tensor random_tensor(kilnrt::DType dtype, const kilnrt::Shape& shape, unsigned seed);

// `name` with every character outside [A-Za-z0-9._-] replaced by '_' (for output file names).
std::string sanitize_file_name(const std::string& name);

// "12.3 MiB"-style size.
std::string human_bytes(unsigned long long bytes);

// ---- Conventions (docs/cli.md) ----------------------------------------------------------------------------------

// A command line that cannot work whatever the files say (flags that contradict each other): `kilnrt` prints
// "error: <message>" and exits with status 2, like the argument parser's own errors.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The global flags (--verbose / --quiet), set before any command runs.
struct GlobalOptions {
  bool verbose = false;  // debug logging, and the failing check + source location of an error
  bool quiet = false;    // errors only on stderr (no warnings, no progress), no informational lines on stdout
};
GlobalOptions& global_options();

// Throws kilnrt::Error(kIo) naming `path` with the system's reason ("No such file or directory") when `path` cannot
// be opened for reading or is a directory. `what`: "engine file", "ONNX model", ...
void require_readable_file(const std::string& path, const std::string& what);

// `dir` + "/" + `name` without doubling the separator ("out/" + "y.npy" -> "out/y.npy").
std::string join_path(const std::string& dir, const std::string& name);

// "1 iteration", "2 iterations".
std::string plural(int64_t count, const std::string& singular, const std::string& plural_form = "");

// A declared tensor shape with its symbolic names: "[batch, 3, 224, 224]" ("?" for an unnamed dynamic dim, "[]" for
// a scalar). `dim_names` may be empty or shorter than `shape`. Concrete shapes print as kilnrt::shape_to_string's
// "2x3x224x224".
std::string dims_text(const kilnrt::Shape& shape, const std::vector<std::string>& dim_names = {});

// Seconds rounded for people: "0.29 s", "12.3 s".
std::string seconds_text(double seconds);

// ---- Option validators (a refused value exits with status 2) ----------------------------------------------------

// An integer option that must be >= `min` ("--batch: must be at least 1, got 0").
CLI::Validator at_least(long long min);
// A number (floating point) option that must be >= 0.
CLI::Validator non_negative_number();
// A --shapes value: NAME:D0xD1x... or NAME:MIN/OPT/MAX with every dimension at least 1.
CLI::Validator shape_spec_check();
// A --device value: cpu, cuda or cuda:N.
CLI::Validator device_check();

// ---- Devices ----------------------------------------------------------------------------------------------------

// A parsed --device: empty `spec` = not given (the engine's own device type, CUDA device 0).
struct DeviceChoice {
  std::string spec;
  bool cuda = false;
  int ordinal = 0;
};
DeviceChoice parse_device_choice(const std::string& spec);

// Loads an engine for `device` (run / bench / profile): the file is checked first (missing: an I/O error naming it),
// a CUDA engine is placed on the chosen ordinal, and an engine of the other device type is refused, saying what to do.
std::shared_ptr<kilnrt::Engine> load_engine_for(const std::string& path, const std::string& device);

// ---- Output -----------------------------------------------------------------------------------------------------

// Writes a JSON document to `dest` ("-": standard output), ending it with a newline. Throws kilnrt::Error(kIo)
// naming the file when it cannot be written.
void write_json(const std::string& dest, std::string text);

}  // namespace kilnrt_cli
