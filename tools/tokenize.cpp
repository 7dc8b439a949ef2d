#include "tools/commands.h"
namespace slimkv {
void add_tokenize_command(CLI::App& app, std::vector<Command>& out) {
  auto* sub = app.add_subcommand("tokenize", "TODO");
  out.push_back({sub, [] { return 0; }});
}
}  // namespace slimkv
