// `slimkv bench make-gguf`: writes a synthetic shape as a llama / qwen3moe / deepseek4 GGUF (model/synthetic_gguf.h), the input of
// scripts/bench-vs-llamacpp (llama-quantize makes the quantized copies from it).
#include <cstdio>

#include "model/synthetic_gguf.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {

void add_bench_make_gguf_command(CLI::App& bench, std::vector<Command>& out) {
  struct Flags {
    std::string shape = "llama-15m", dtype = "f32", output;
    uint64_t seed = 1;
  };
  auto f = std::make_shared<Flags>();
  auto* sub = bench.add_subcommand("make-gguf", "Write a synthetic shape as a GGUF llama.cpp runs too (random weights)");
  sub->add_option("--shape", f->shape, "llama-260k | llama-15m | llama-110m | llama-1b | llama3.2-1b | llama3.1-8b | llama3-8b-4l | "
                  "qwen3moe-a3b-4l (MoE) | deepseek-v4-flash-4l | deepseek-v4-tiny (deepseek4)");
  sub->add_option("--dtype", f->dtype, "Matrix type (any weight type: f32, f16, q8_0, q4_k, ...)");
  sub->add_option("-o,--output", f->output, "Output .gguf path")->required();
  sub->add_option("--seed", f->seed, "Weight seed");
  out.push_back({sub, [f] {
                   const int64_t bytes = write_synthetic_gguf(f->shape, parse_dtype(f->dtype), f->output, f->seed);
                   std::printf("wrote %s (%s, %s, %.1f MiB)\n", f->output.c_str(), f->shape.c_str(),
                               f->dtype.c_str(), static_cast<double>(bytes) / (1 << 20));
                   return 0;
                 }});
}

}  // namespace slimkv
