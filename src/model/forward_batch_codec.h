// A ForwardBatch as bytes and back: what rank 0 of a tensor-parallel server broadcasts each step so every rank runs
// the same forward on its slice (docs/scale-out.md). Little-endian, length-prefixed vectors; decode checks every
// length against the bytes it has. Must not know: MPI, requests or the scheduler.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/forward_batch.h"

namespace slimkv {

// Into `out` (cleared; its capacity is kept, so a server reusing it allocates nothing per step once warm).
void encode_forward_batch(const ForwardBatch& b, std::vector<uint8_t>& out);
// Throws Error on bytes that are not an encoded batch (short, or lengths past the end).
ForwardBatch decode_forward_batch(std::span<const uint8_t> bytes);

}  // namespace slimkv
