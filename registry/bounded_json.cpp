#include "registry/bounded_json.h"

#include "registry/errors.h"

namespace vkllm::registry {
namespace {

template <class Json>
Json parse_bounded(std::string_view text) {
  // The callback sees the depth of every value as it is built; refusing there stops the parse
  // before anything deep exists.
  auto limit = [](int depth, typename Json::parse_event_t, Json&) {
    if (depth > kMaxJsonDepth) {
      throw RegistryError(ErrorKind::invalid_input, "JSON nested too deeply (more than " +
                                                        std::to_string(kMaxJsonDepth) + " levels)");
    }
    return true;
  };
  return Json::parse(text.begin(), text.end(), limit);
}

template <class Json>
Json parse_bounded_or_discarded(std::string_view text) {
  try {
    return parse_bounded<Json>(text);
  } catch (const std::exception&) {
    return Json(Json::value_t::discarded);
  }
}

}  // namespace

nlohmann::json parse_bounded_json(std::string_view text) {
  return parse_bounded<nlohmann::json>(text);
}
nlohmann::ordered_json parse_bounded_ordered_json(std::string_view text) {
  return parse_bounded<nlohmann::ordered_json>(text);
}
nlohmann::json parse_bounded_json_or_discarded(std::string_view text) {
  return parse_bounded_or_discarded<nlohmann::json>(text);
}
nlohmann::ordered_json parse_bounded_ordered_json_or_discarded(std::string_view text) {
  return parse_bounded_or_discarded<nlohmann::ordered_json>(text);
}

}  // namespace vkllm::registry
