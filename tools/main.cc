// kvengine: the command-line entry point. Each subcommand lives in its own file.
//
// Exit statuses, one line "kvengine: ..." on stderr for each failure and never a signal:
//   0  success (and --help, --version)
//   1  an unusable input (a file that is missing, not a regular file, too large or invalid) or
//      a runtime failure (including threads or memory that cannot be had)
//   2  a malformed command line: an unknown command or flag, a missing or out-of-range value
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <system_error>

#include "commands.h"

namespace {

constexpr int kUsageExit = 2;

std::string SubcommandNames(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return names;
}

// The command path the arguments name ("kvengine bench kv"), and the app it ends at. Stops at
// the first flag; when an app that needs a subcommand is followed by a word that names none,
// `unknown` receives that word.
const CLI::App* CommandOf(const CLI::App& root, int argc, char** argv, std::string* path,
                          std::string* unknown) {
  const CLI::App* app = &root;
  *path = "kvengine";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') break;
    const CLI::App* sub = nullptr;
    for (const CLI::App* s : app->get_subcommands({})) {
      if (s->check_name(word)) sub = s;
    }
    if (sub == nullptr) {
      if (app->get_require_subcommand_min() > 0) *unknown = word;
      break;
    }
    app = sub;
    *path += " " + word;
  }
  return app;
}

// A malformed command line: one line naming the problem and where the usage is, exit 2.
int UsageError(const CLI::App& root, const CLI::ParseError& e, int argc, char** argv) {
  std::string path, unknown;
  const CLI::App* app = CommandOf(root, argc, argv, &path, &unknown);
  std::string message = e.what();
  if (!unknown.empty()) {
    message = "unknown command '" + unknown + "' (" + path + " commands: " +
              SubcommandNames(*app) + ")";
  } else if (message.find("subcommand is required") != std::string::npos) {
    message = "a command is required (" + path + " commands: " + SubcommandNames(*app) + ")";
  }
  for (char& c : message) {
    if (c == '\n') c = ' ';
  }
  std::fprintf(stderr, "kvengine: %s (see '%s --help')\n", message.c_str(), path.c_str());
  return kUsageExit;
}

}  // namespace

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
  // The commands run inside parse (as callbacks), so this also catches what they throw.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version.
    return UsageError(app, e, argc, argv);
  } catch (const std::system_error& e) {
    // Threads that cannot be started (std::thread), or another resource the system refuses.
    std::fprintf(stderr, "kvengine: system error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "kvengine: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvengine: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
