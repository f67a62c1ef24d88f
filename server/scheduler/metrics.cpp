#include "server/scheduler/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace vkllm::sched {

namespace {

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// `{a="x"}` plus one more label, for histogram buckets.
std::string with_label(const std::string& key, const std::string& extra) {
  if (key.empty()) return "{" + extra + "}";
  return key.substr(0, key.size() - 1) + "," + extra + "}";
}

const std::vector<double> kLatencyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                             0.5,   1,    2.5,   5,    10,  30};
const std::vector<double> kTokenBuckets = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};

}  // namespace

Metrics::Metrics() {
  declare("vkllm_http_requests_total", Kind::counter, "HTTP requests by route and status.");
  declare("vkllm_queued_requests", Kind::gauge, "Sequences waiting for admission.");
  declare("vkllm_running_sequences", Kind::gauge, "Sequences admitted and generating.");
  declare("vkllm_step_tokens", Kind::histogram, "Tokens computed per engine step.", kTokenBuckets);
  declare("vkllm_steps_total", Kind::counter, "Engine steps run.");
  declare("vkllm_kv_blocks", Kind::gauge, "Paged KV cache blocks by state (used, free, cached).");
  declare("vkllm_state_checkpoints", Kind::gauge,
          "Recurrent-state checkpoints held (hybrid models: the prefix cache resumes from them).");
  declare("vkllm_prefix_cache_hit_tokens_total", Kind::counter,
          "Prompt tokens served from the prefix cache instead of being computed.");
  declare("vkllm_prompt_tokens_total", Kind::counter, "Prompt tokens submitted.");
  declare("vkllm_prompt_eval_tokens_total", Kind::counter, "Prompt tokens computed (prefill).");
  declare("vkllm_generated_tokens_total", Kind::counter, "Tokens generated.");
  declare("vkllm_images_encoded_total", Kind::counter,
          "Images run through the vision encoder (not found among the recently encoded).");
  declare("vkllm_image_tokens_prefilled_total", Kind::counter,
          "Image embedding rows computed in prefill (not served from the prefix cache).");
  declare("vkllm_speculative_drafted_tokens_total", Kind::counter,
          "Drafted tokens the model verified (speculative decoding).");
  declare("vkllm_speculative_accepted_tokens_total", Kind::counter,
          "Drafted tokens the model accepted (each saves a decode step).");
  declare("vkllm_preemptions_total", Kind::counter,
          "Sequences preempted (blocks released, recomputed later) when the KV cache was full.");
  declare("vkllm_time_to_first_token_seconds", Kind::histogram,
          "Submission of a sequence to its first generated token.", kLatencyBuckets);
  declare("vkllm_inter_token_latency_seconds", Kind::histogram,
          "Time between consecutive tokens of a sequence.", kLatencyBuckets);
  declare("vkllm_model_loads_total", Kind::counter, "Model loads.");
  declare("vkllm_model_load_seconds", Kind::histogram, "Model load time.", kLatencyBuckets);
  declare("vkllm_loaded_models", Kind::gauge, "Models resident in memory.");
  declare("vkllm_model_device_bytes", Kind::gauge, "Device memory of a loaded model.");
  declare("vkllm_model_device_bytes_by_device", Kind::gauge,
          "Device memory of a model split across devices: each stage's, with its device.");
  declare("vkllm_sequences_finished_total", Kind::counter, "Sequences finished, by reason.");
}

void Metrics::declare(std::string name, Kind kind, std::string help, std::vector<double> buckets) {
  std::lock_guard lock(mutex_);
  auto& f = families_[std::move(name)];
  f.kind = kind;
  f.help = std::move(help);
  f.bounds = std::move(buckets);
}

Metrics::Family& Metrics::family(std::string_view name) {
  auto it = families_.find(name);
  if (it == families_.end()) throw std::logic_error("undeclared metric " + std::string(name));
  return it->second;
}

std::string Metrics::label_key(const MetricLabels& labels) {
  if (labels.empty()) return "";
  auto sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  std::string key = "{";
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i) key += ',';
    key += sorted[i].first + "=\"" + escape_label(sorted[i].second) + "\"";
  }
  return key + "}";
}

void Metrics::add(std::string_view name, const MetricLabels& labels, double value) {
  const std::string key = label_key(labels);
  std::lock_guard lock(mutex_);
  family(name).series[key].value += value;
}

void Metrics::set(std::string_view name, const MetricLabels& labels, double value) {
  const std::string key = label_key(labels);
  std::lock_guard lock(mutex_);
  family(name).series[key].value = value;
}

void Metrics::observe(std::string_view name, const MetricLabels& labels, double value) {
  const std::string key = label_key(labels);
  std::lock_guard lock(mutex_);
  auto& f = family(name);
  auto& s = f.series[key];
  if (s.buckets.empty()) s.buckets.assign(f.bounds.size(), 0);
  for (size_t i = 0; i < f.bounds.size(); ++i) {
    if (value <= f.bounds[i]) ++s.buckets[i];
  }
  s.value += value;
  ++s.count;
}

void Metrics::forget(std::string_view name, const std::pair<std::string, std::string>& label) {
  const std::string needle = label.first + "=\"" + escape_label(label.second) + "\"";
  std::lock_guard lock(mutex_);
  auto& series = family(name).series;
  std::erase_if(series, [&](const auto& kv) { return kv.first.find(needle) != std::string::npos; });
}

double Metrics::value(std::string_view name, const MetricLabels& labels) const {
  const std::string key = label_key(labels);
  std::lock_guard lock(mutex_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto s = it->second.series.find(key);
  return s == it->second.series.end() ? 0 : s->second.value;
}

std::string Metrics::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [name, f] : families_) {
    const char* type = f.kind == Kind::counter ? "counter"
                       : f.kind == Kind::gauge ? "gauge"
                                               : "histogram";
    out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& [key, s] : f.series) {
      if (f.kind != Kind::histogram) {
        out += name + key + " " + number(s.value) + "\n";
        continue;
      }
      for (size_t i = 0; i < f.bounds.size(); ++i) {
        out += name + "_bucket" + with_label(key, "le=\"" + number(f.bounds[i]) + "\"") + " " +
               std::to_string(s.buckets.empty() ? 0 : s.buckets[i]) + "\n";
      }
      out +=
          name + "_bucket" + with_label(key, "le=\"+Inf\"") + " " + std::to_string(s.count) + "\n";
      out += name + "_sum" + key + " " + number(s.value) + "\n";
      out += name + "_count" + key + " " + std::to_string(s.count) + "\n";
    }
  }
  return out;
}

Metrics& metrics() {
  static Metrics m;
  return m;
}

}  // namespace vkllm::sched
