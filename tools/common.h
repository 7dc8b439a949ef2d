// Flags and helpers shared by subcommands: model/tokenizer/threads flags, default model resolution.
// Must not know: what each subcommand does with the model.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "engine/engine_config.h"
#include "model/model.h"

namespace slimkv {

struct ModelFlags {
  std::string model;      // -m: empty = the default model in ../shared/models
  std::string tokenizer;  // -t
  int32_t threads = 0;    // 0 = number of cores
  int32_t tensor_parallel_size = 1;  // --tensor-parallel-size: ranks of the MPI job splitting each layer
  int32_t expert_parallel_size = 0;  // --expert-parallel-size: expert groups, dividing T (0 = T: experts whole)
  std::string expert_combine = "all-reduce";  // --expert-combine: all-reduce | all-to-all
  bool mpi_serialized = false;       // not a flag: serve's engine thread makes the MPI calls (mpi_world.h)
};

void add_model_flags(CLI::App* app, ModelFlags& f);
// --tensor-parallel-size, --expert-parallel-size, --expert-combine (commands that run under mpirun: every rank runs the command on its slice; rank 0 writes).
void add_parallel_flags(CLI::App* app, ModelFlags& f);
bool is_output_rank(const Model& m);  // rank 0 of a tensor-parallel job, or a single process
void silence_stdout_unless_output_rank(const Model& m);  // the other ranks compute the same text: rank 0 prints it
// KV cache and scheduler flags, 1:1 with EngineConfig fields (validated by the Engine).
void add_engine_flags(CLI::App* app, EngineConfig& cfg);
std::string default_model_path();  // resolved relative to the repository (the binary's location), not the cwd
std::unique_ptr<Model> load_model_from_flags(const ModelFlags& f);
int32_t resolve_threads(int32_t flag);  // 0: the cores / the MPI ranks on this host
int64_t proc_status_kb(const char* key);  // "VmRSS:" / "VmHWM:" from /proc/self/status, in KiB (0 if absent)
DType parse_dtype(const std::string& s);  // --dtype of synthetic shapes: f32 | f16 | q8_0 | q4_0
// Token ids written as "1,5,9" (commas, spaces, newlines or brackets between them), each checked against vocab.
std::vector<int32_t> parse_token_ids(const std::string& text, int32_t vocab_size, const std::string& what);

}  // namespace slimkv
