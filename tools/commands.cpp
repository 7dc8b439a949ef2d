#include "tools/commands.h"

namespace slimkv {
namespace {
std::vector<Command>& registry() {
  static std::vector<Command> cmds;
  return cmds;
}
}  // namespace

void register_commands(CLI::App& app) {
  add_generate_command(app, registry());
  add_logits_command(app, registry());
  add_perplexity_command(app, registry());
  add_tokenize_command(app, registry());
  add_eval_command(app, registry());
  add_calibrate_command(app, registry());
  add_bench_command(app, registry());
  add_serve_command(app, registry());
  add_plan_command(app, registry());
  add_tune_command(app, registry());
  add_doctor_command(app, registry());
  add_profile_command(app, registry());
  add_convert_command(app, registry());
  add_chat_render_command(app, registry());
  add_embed_command(app, registry());
}

int run_selected_command(CLI::App& app) {
  // Nested subcommands (e.g. `bench offline`) are registered after their parent: the deepest parsed one runs.
  for (auto it = registry().rbegin(); it != registry().rend(); ++it) {
    if (it->app->parsed()) return it->run();
  }
  return 1;
}

}  // namespace slimkv
