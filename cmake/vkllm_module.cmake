# vkllm_module(NAME <target> DIRS <dirs...> [DEPS <targets...>] [EXCLUDE <regex...>])
# One static library per module folder: every .cpp directly in DIRS is a source, so adding a
# file needs no CMake edit. Headers are included as "engine/gguf/gguf_file.h" from the repo root.
# A folder with no sources yet becomes an interface library, so the tree always configures.
function(vkllm_module)
  cmake_parse_arguments(M "" "NAME" "DIRS;DEPS;EXCLUDE" ${ARGN})
  set(srcs "")
  foreach(d IN LISTS M_DIRS)
    file(GLOB s CONFIGURE_DEPENDS ${d}/*.cpp)
    list(APPEND srcs ${s})
  endforeach()
  foreach(x IN LISTS M_EXCLUDE)
    list(FILTER srcs EXCLUDE REGEX "${x}")
  endforeach()
  if(srcs)
    add_library(${M_NAME} STATIC ${srcs})
    target_include_directories(${M_NAME} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${M_NAME} PUBLIC ${M_DEPS})
    vkllm_record_library(${M_NAME} "${M_DEPS}")
  else()
    add_library(${M_NAME} INTERFACE)
    target_include_directories(${M_NAME} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${M_NAME} INTERFACE ${M_DEPS})
  endif()
endfunction()

# Each static library and the vkllm libraries it declares it needs, one line each in the build's
# library_deps.txt ("name archive dep,dep"): scripts/check_library_deps.py checks that every
# vkllm symbol a library uses is defined by itself or what it declares (transitively). A missing
# DEPS entry links today only where no other object pulls the calling file in, which unity
# batches and -O0 (no inlining) change: the ASan stage once failed to link that way.
function(vkllm_record_library name deps)
  set(own "")
  foreach(d IN LISTS deps)
    if(d MATCHES "^vkllm_")
      list(APPEND own ${d})
    endif()
  endforeach()
  string(REPLACE ";" "," own "${own}")
  set_property(GLOBAL APPEND PROPERTY VKLLM_LIBRARIES "${name} $<TARGET_FILE:${name}> ${own}")
endfunction()

# vkllm_gtest(NAME <exe> DIR <dir> DEPS <targets...> [LABELS <label>] [UNITY])
# VKLLM_TEST_LABELS (a list) limits which test executables a build defines, e.g. "unit" for ASan.
# One gtest executable per test folder; each TEST becomes its own ctest entry.
function(vkllm_gtest)
  cmake_parse_arguments(T "UNITY" "NAME;DIR" "DEPS;LABELS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${T_DIR}/*.cpp)
  if(NOT srcs)
    return()
  endif()
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  if(VKLLM_TEST_LABELS AND NOT T_LABELS IN_LIST VKLLM_TEST_LABELS)
    return()
  endif()
  add_executable(${T_NAME} ${srcs})
  # CI builds the libraries in unity batches (scripts/test). Test files keep their own helper
  # names in anonymous namespaces, so each compiles alone, except in the folders marked UNITY,
  # whose files each parse Boost.Beast/Asio and the JSON headers (a registry or server test file
  # took 30-60 s alone): there too a name in an anonymous namespace is unique in the folder.
  if(NOT T_UNITY)
    set_target_properties(${T_NAME} PROPERTIES UNITY_BUILD OFF)
  endif()
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${T_NAME} PRIVATE
    VKLLM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    VKLLM_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared"
    VKLLM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${T_LABELS}")
  set_property(GLOBAL APPEND PROPERTY VKLLM_TEST_TARGETS_${T_LABELS} ${T_NAME})
endfunction()
