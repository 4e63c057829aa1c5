// `kilnrt doctor`: what kilnrt found on this machine (GPU, driver, CUDA libraries) and what to do about gaps.
#include <iostream>

#include "cli_common.h"
#include "kilnrt/doctor.h"

namespace kilnrt_cli {

void add_doctor_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("doctor", "Report the GPU, driver and CUDA libraries kilnrt can use");
  cmd->callback([]() {
    std::cout << kilnrt::doctor_report();
    std::cout.flush();
  });
}

}  // namespace kilnrt_cli
