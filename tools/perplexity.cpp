#include "tools/commands.h"
namespace slimkv {
void add_perplexity_command(CLI::App& app, std::vector<Command>& out) {
  auto* sub = app.add_subcommand("perplexity", "TODO");
  out.push_back({sub, [] { return 0; }});
}
}  // namespace slimkv
