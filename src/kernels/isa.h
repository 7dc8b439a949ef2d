// Which CPU instruction set the kernels use: detected once, overridable (tests run every level they can).
// Must not know: what the kernels compute.
#pragma once
#include <string_view>

namespace slimkv {

enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2 };

Isa detected_isa();               // best level this CPU supports
Isa active_isa();                 // level in use (detected unless overridden)
void set_isa_override(Isa isa);   // clamps to what the CPU supports
std::string_view isa_name(Isa isa);

}  // namespace slimkv
