# vkllm_prompt: the Go template engine, prompt building and Ollama's named templates (embedded).
# Included by server/CMakeLists.txt and by the fuzz-only build of the top CMakeLists.txt.
set(P ${CMAKE_CURRENT_LIST_DIR})
file(GLOB named_templates CONFIGURE_DEPENDS ${P}/templates/*)
vkllm_embed(TARGET vkllm_prompt_templates NAMESPACE vkllm::prompt::templates
  HEADER server/prompt/embedded_templates.h BASE ${P}/templates FILES ${named_templates})
vkllm_module(NAME vkllm_prompt DIRS ${P}
  DEPS vkllm_prompt_templates nlohmann_json::nlohmann_json)
