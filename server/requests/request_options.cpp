#include "server/requests/request_options.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "server/http/status_error.h"

namespace vkllm::requests {

namespace {

[[noreturn]] void wrong_type(const std::string& key, const char* type) {
  throw http::StatusError(400, "option \"" + key + "\" must be of type " + type);
}

int64_t as_int(const std::string& key, const nlohmann::ordered_json& v) {
  if (!v.is_number()) wrong_type(key, "integer");
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) wrong_type(key, "integer");
    return static_cast<int64_t>(d);  // Go truncates the fraction
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) wrong_type(key, "integer");
  return v.get<int64_t>();
}

int32_t as_int32(const std::string& key, const nlohmann::ordered_json& v) {
  const int64_t x = as_int(key, v);
  return static_cast<int32_t>(std::clamp<int64_t>(x, INT32_MIN, INT32_MAX));
}

float as_float(const std::string& key, const nlohmann::ordered_json& v) {
  if (!v.is_number()) wrong_type(key, "float32");
  return v.get<float>();
}

}  // namespace

RequestOptions resolve_options(const std::vector<const nlohmann::ordered_json*>& layers) {
  RequestOptions o;
  o.sampling.repeat_penalty = 1.0f;  // Ollama's default since v0.17.5
  for (const auto* layer : layers) {
    if (!layer || !layer->is_object()) continue;
    for (const auto& [key, v] : layer->items()) {
      if (v.is_null()) continue;
      auto& s = o.sampling;
      if (key == "num_ctx") {
        o.num_ctx = as_int(key, v);
      } else if (key == "num_predict") {
        o.num_predict = as_int32(key, v);
      } else if (key == "num_keep") {
        o.num_keep = as_int32(key, v);
      } else if (key == "seed") {
        s.seed = as_int(key, v);
      } else if (key == "top_k") {
        s.top_k = as_int32(key, v);
      } else if (key == "top_p") {
        s.top_p = as_float(key, v);
      } else if (key == "min_p") {
        s.min_p = as_float(key, v);
      } else if (key == "typical_p") {
        s.typical_p = as_float(key, v);
      } else if (key == "repeat_last_n") {
        s.repeat_last_n = as_int32(key, v);
      } else if (key == "temperature") {
        s.temperature = as_float(key, v);
      } else if (key == "repeat_penalty") {
        s.repeat_penalty = as_float(key, v);
      } else if (key == "presence_penalty") {
        s.presence_penalty = as_float(key, v);
      } else if (key == "frequency_penalty") {
        s.frequency_penalty = as_float(key, v);
      } else if (key == "mirostat") {  // removed from Ollama; kept here as an extension
        s.mirostat = as_int32(key, v);
      } else if (key == "mirostat_tau") {
        s.mirostat_tau = as_float(key, v);
      } else if (key == "mirostat_eta") {
        s.mirostat_eta = as_float(key, v);
      } else if (key == "stop") {
        if (v.is_string()) {
          o.stop = {v.get<std::string>()};
          continue;
        }
        if (!v.is_array()) wrong_type(key, "array");
        o.stop.clear();
        for (const auto& e : v) {
          if (!e.is_string()) wrong_type(key, "an array of strings");
          if (!e.get<std::string>().empty()) o.stop.push_back(e.get<std::string>());
        }
      } else if (key == "draft_num_predict") {
        o.draft_num_predict = std::max(as_int32(key, v), 0);
      } else if (key == "num_batch" || key == "num_gpu" || key == "main_gpu" ||
                 key == "num_thread") {
        as_int(key, v);  // load-time options: typed, otherwise unused here
      } else if (key == "use_mmap") {
        if (!v.is_boolean()) wrong_type(key, "boolean");
      }
      // Anything else is ignored, as Ollama ignores unknown options.
    }
  }
  return o;
}

}  // namespace vkllm::requests
