#include "model/model_config.h"

namespace kvengine {

int WindowPatternOf(std::string_view architecture) {
  if (architecture == "gemma2") return 2;
  if (architecture == "gemma3") return 6;
  return 1;
}

Status ModelConfig::Validate() const {
  const std::string where = "model '" + name + "': ";
  if (n_layers < 1 || n_layers > 4096) return InvalidArgument(where + "bad layer count");
  if (n_embd < 1) return InvalidArgument(where + "bad hidden size");
  if (is_mla()) {
    if (rope_dim < 0 || kv_lora_rank + rope_dim > (1 << 20)) {
      return InvalidArgument(where + "bad MLA dimensions");
    }
    return Status::Ok();
  }
  if (n_heads < 1 || n_kv_heads < 1 || n_kv_heads > n_heads) {
    return InvalidArgument(where + "bad head counts (" + std::to_string(n_heads) + " query, " +
                           std::to_string(n_kv_heads) + " KV)");
  }
  if (head_dim_k < 1 || head_dim_v < 1 || head_dim_k > 65536 || head_dim_v > 65536) {
    return InvalidArgument(where + "bad head dimensions");
  }
  if (sliding_window < 0 || window_pattern < 1) return InvalidArgument(where + "bad window");
  return Status::Ok();
}

}  // namespace kvengine
