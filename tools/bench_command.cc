// `kvengine bench`: benchmarks. (Wired to the workload library in the next step.)
#include "commands.h"

namespace kvengine::cli {

void RegisterBenchCommand(CLI::App& app, int* exit_code) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  (void)bench;
  (void)exit_code;
}

}  // namespace kvengine::cli
