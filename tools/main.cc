// kvengine: the command-line entry point. Each subcommand lives in its own file.
#include <CLI/CLI.hpp>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "kvengine: an LLM inference engine built around KV-cache memory.\n"
      "Without -m, commands use a built-in model preset."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kvengine 0.1");
  int exit_code = 0;
  kvengine::cli::RegisterPlanCommand(app, &exit_code);
  kvengine::cli::RegisterBenchCommand(app, &exit_code);
  kvengine::cli::RegisterGenModelCommand(app, &exit_code);
  kvengine::cli::RegisterRunCommand(app, &exit_code);
  kvengine::cli::RegisterServeCommand(app, &exit_code);
  kvengine::cli::RegisterBenchServeCommand(app, &exit_code);
  kvengine::cli::RegisterDemoCommand(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
