# vkllm_embed(TARGET <lib> NAMESPACE <ns> HEADER <include> BASE <dir> FILES <abs paths...> [DEPENDS ...])
# Turns files into a table of <ns>::EmbeddedFile {name, data, size} (declared in HEADER, which also
# declares <ns>::embedded_files()) compiled into <lib>; names are relative to BASE.
set(VKLLM_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_files.cmake)
function(vkllm_embed)
  cmake_parse_arguments(E "" "TARGET;NAMESPACE;BASE;HEADER" "FILES;DEPENDS" ${ARGN})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${E_TARGET}_embedded.cpp)
  string(REPLACE ";" "|" files_arg "${E_FILES}")
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNS=${E_NAMESPACE} -DBASE=${E_BASE} -DHEADER=${E_HEADER}
            "-DFILES=${files_arg}" -P ${VKLLM_EMBED_SCRIPT}
    DEPENDS ${E_FILES} ${E_DEPENDS} ${VKLLM_EMBED_SCRIPT}
    COMMENT "Embedding ${E_TARGET}" VERBATIM)
  add_library(${E_TARGET} STATIC ${out})
  target_include_directories(${E_TARGET} PUBLIC ${PROJECT_SOURCE_DIR})
  vkllm_record_library(${E_TARGET} "")
endfunction()
