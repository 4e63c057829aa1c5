// Shared helpers of the kilnrt command-line tool (tools/*.cc). Public API only.
#pragma once
#include <string>

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

}  // namespace kilnrt_cli
