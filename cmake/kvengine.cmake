# kvengine_highway_sources_apart(SOURCES...): a Highway per-target file (one that includes
# hwy/foreach_target.h: it re-includes itself once per SIMD target) must be its own translation
# unit, so unity builds leave it out of their batches.
function(kvengine_highway_sources_apart)
  foreach(src IN LISTS ARGN)
    file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/${src} per_target REGEX "hwy/foreach_target.h")
    if(per_target)
      set_source_files_properties(${src} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
endfunction()

# kvengine_library(NAME SOURCES... DEPS ...): one static library per src/ folder.
function(kvengine_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  kvengine_highway_sources_apart(${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${name} PRIVATE ${KVENGINE_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# kvengine_test(NAME SOURCES... DEPS ... [LABELS fast|slow|soak] [OPTIMIZED]): a GoogleTest
# binary under CTest. Its sources get KVENGINE_TEST_COMPILE_OPTIONS too (CMakeLists.txt), unless
# OPTIMIZED: a test whose own code does heavy work (attention_test fills large random KV caches)
# keeps the libraries' flags. With KVENGINE_TEST_LABELS set, a binary none of whose labels is
# listed there is left out of the default build and of CTest.
function(kvengine_test name)
  cmake_parse_arguments(ARG "OPTIMIZED" "" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS fast)
  endif()
  set(wanted TRUE)
  if(KVENGINE_TEST_LABELS)
    set(wanted FALSE)
    foreach(label IN LISTS ARG_LABELS)
      if(label IN_LIST KVENGINE_TEST_LABELS)
        set(wanted TRUE)
      endif()
    endforeach()
  endif()
  if(wanted)
    add_executable(${name} ${ARG_SOURCES})
  else()
    add_executable(${name} EXCLUDE_FROM_ALL ${ARG_SOURCES})
  endif()
  kvengine_highway_sources_apart(${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${KVENGINE_WARNINGS})
  if(NOT ARG_OPTIMIZED)
    target_compile_options(${name} PRIVATE ${KVENGINE_TEST_COMPILE_OPTIONS})
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  if(wanted)
    gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
  endif()
endfunction()

# kvengine_benchmark(NAME SOURCES... DEPS ...): a google-benchmark binary (not run by tests).
function(kvengine_benchmark name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  if(KVENGINE_BENCHMARKS)
    add_executable(${name} ${ARG_SOURCES})
    kvengine_highway_sources_apart(${ARG_SOURCES})
    target_compile_options(${name} PRIVATE ${KVENGINE_WARNINGS})
    target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark benchmark::benchmark_main)
  endif()
endfunction()

# kvengine_fuzzer(NAME SOURCES... DEPS ... [LINK ...]): with KVENGINE_FUZZ (clang), the libFuzzer
# target NAME built from NAME.cc. SOURCES, the code under test, are compiled again into
# NAME_instrumented with coverage instrumentation so that libFuzzer sees their branches (the
# normal libraries stay uninstrumented for the other binaries); DEPS are that copy's
# dependencies, LINK further libraries of the target. scripts/run_fuzzer.sh runs it.
function(kvengine_fuzzer name)
  if(NOT KVENGINE_FUZZ)
    return()
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "KVENGINE_FUZZ needs clang (libFuzzer)")
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LINK" ${ARGN})
  kvengine_library(${name}_instrumented SOURCES ${ARG_SOURCES} DEPS ${ARG_DEPS})
  target_compile_options(${name}_instrumented PRIVATE
    -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined)
  add_executable(${name} ${name}.cc)
  target_compile_options(${name} PRIVATE ${KVENGINE_WARNINGS}
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE ${name}_instrumented ${ARG_LINK})
endfunction()
