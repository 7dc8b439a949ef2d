// Loads the low-rank K/V bases a compression config asks for (from its calibration file), checking that the file
// was made for this model; and the model fingerprint that binds calibration files to models.
// Must not know: requests or scheduling.
#pragma once
#include <string>
#include <vector>

#include "compress/calibration.h"
#include "compress/compression_config.h"
#include "model/model.h"

namespace slimkv {

std::string model_fingerprint(const Model& m);  // hyper-parameters + a hash of some weights
// Empty when the config has no low-rank part.
std::vector<LayerProjection> load_kv_projection(const CompressionConfig& cc, const Model& m, const KvLayout& layout);

}  // namespace slimkv
