// A multi-token-prediction head (Model::mtp, DeepSeek-V3's nextn layout) as a model of its own: one decoder layer
// (the trunk's last layer's shape) whose input rows are eh_proj([enorm(embed(token)) | hnorm(hidden)]) — the hidden
// state from ForwardBatch::input_hidden — and whose final norm and head are the MTP's shared_head (the trunk's
// embedding and head where the file shares them). Its views point into the trunk, which must outlive it.
// Must not know: requests, caches or drafting (engine/mtp_proposer.h).
#pragma once
#include <memory>

#include "model/model.h"

namespace slimkv {

// Head i (< trunk.config.num_mtp_layers) of a one-process model; throws Error otherwise.
std::unique_ptr<Model> mtp_head_model(const Model& trunk, int32_t i);

}  // namespace slimkv
