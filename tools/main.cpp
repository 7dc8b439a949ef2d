// The one `slimkv` binary: parses the subcommand and its flags (CLI11), runs it, and turns any slimkv::Error
// into one clear line on stderr and exit code 1.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/check.h"
#include "dist/mpi_world.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"slimkv: LLM inference with a compressed KV cache"};
  app.require_subcommand(1);
  slimkv::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // one clear line, as for every other error
    std::fprintf(stderr, "error: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    return slimkv::run_selected_command(app);
  } catch (const slimkv::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    slimkv::mpi_abort_if_running(1);  // the other ranks of a tensor-parallel job must not wait for this one
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    slimkv::mpi_abort_if_running(1);
    return 1;
  }
}
