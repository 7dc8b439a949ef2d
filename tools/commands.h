// Subcommand registry of the `slimkv` binary: each tools/<name>.cpp adds one subcommand and its runner.
// Must not know: how subcommands work inside.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace slimkv {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

void add_generate_command(CLI::App& app, std::vector<Command>& out);
void add_logits_command(CLI::App& app, std::vector<Command>& out);
void add_perplexity_command(CLI::App& app, std::vector<Command>& out);
void add_tokenize_command(CLI::App& app, std::vector<Command>& out);
void add_eval_command(CLI::App& app, std::vector<Command>& out);
void add_calibrate_command(CLI::App& app, std::vector<Command>& out);
void add_bench_command(CLI::App& app, std::vector<Command>& out);
void add_serve_command(CLI::App& app, std::vector<Command>& out);
void add_plan_command(CLI::App& app, std::vector<Command>& out);
void add_tune_command(CLI::App& app, std::vector<Command>& out);
void add_doctor_command(CLI::App& app, std::vector<Command>& out);
void add_profile_command(CLI::App& app, std::vector<Command>& out);
void add_convert_command(CLI::App& app, std::vector<Command>& out);
void add_chat_render_command(CLI::App& app, std::vector<Command>& out);
void add_embed_command(CLI::App& app, std::vector<Command>& out);
void add_bench_offline_command(CLI::App& bench, std::vector<Command>& out);
void add_bench_serve_command(CLI::App& bench, std::vector<Command>& out);
void add_bench_make_gguf_command(CLI::App& bench, std::vector<Command>& out);
void add_bench_bandwidth_command(CLI::App& bench, std::vector<Command>& out);
void add_bench_attention_command(CLI::App& bench, std::vector<Command>& out);
void add_bench_all_reduce_command(CLI::App& bench, std::vector<Command>& out);

void register_commands(CLI::App& app);
int run_selected_command(CLI::App& app);

}  // namespace slimkv
