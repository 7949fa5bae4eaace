// Built-in model shapes from their published config.json files, for `kvengine plan` and for
// synthetic models. Names are exact ("llama-2-7b", "deepseek-v3", ...).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "model/model_config.h"

namespace kvengine {

Result<ModelConfig> FindPreset(std::string_view name);
std::vector<std::string> PresetNames();

}  // namespace kvengine
