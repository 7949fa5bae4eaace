// Each kvengine subcommand registers itself on the root app; its callback stores the process
// exit status in *exit_code (0 ok, 1 failed with a message on stderr).
#pragma once

#include <CLI/CLI.hpp>

namespace kvengine::cli {

void RegisterPlanCommand(CLI::App& app, int* exit_code);
void RegisterBenchCommand(CLI::App& app, int* exit_code);
void RegisterRunCommand(CLI::App& app, int* exit_code);
void RegisterGenModelCommand(CLI::App& app, int* exit_code);
void RegisterServeCommand(CLI::App& app, int* exit_code);
void RegisterBenchServeCommand(CLI::App& app, int* exit_code);
void RegisterDemoCommand(CLI::App& app, int* exit_code);

// Subcommands of `kvengine bench` (RegisterBenchCommand adds them).
void RegisterBenchAttention(CLI::App* bench, int* exit_code);  // bench_attention_command.cc
void RegisterBenchDecode(CLI::App* bench, int* exit_code);     // bench_decode_command.cc

}  // namespace kvengine::cli
