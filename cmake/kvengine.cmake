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

# kvengine_static_library(NAME LIST SOURCES... DEPS ...): a static library recorded in the global
# property LIST (KVENGINE_ENGINE_LIBRARIES or KVENGINE_APP_LIBRARIES).
function(kvengine_static_library name list)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  kvengine_highway_sources_apart(${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${name} PRIVATE ${KVENGINE_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  set_property(GLOBAL APPEND PROPERTY ${list} ${name})
endfunction()

# kvengine_library(NAME SOURCES... DEPS ...): one static library per src/ folder (the engine).
# Its include path is src/ and include/ only, so an engine file that includes an application
# header (apps/) fails to compile; kvengine_check_layers() fails the configure if one links an
# application library.
function(kvengine_library name)
  kvengine_static_library(${name} KVENGINE_ENGINE_LIBRARIES ${ARGN})
endfunction()

# kvengine_app_library(NAME SOURCES... DEPS ...): one static library per apps/ folder (the
# applications built on the engine: planner, benchmarks, demo, reports); apps/ joins its
# include path.
function(kvengine_app_library name)
  kvengine_static_library(${name} KVENGINE_APP_LIBRARIES ${ARGN})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/apps)
endfunction()

# kvengine_check_layers(): fails the configure when an engine library (kvengine_library) links an
# application library (kvengine_app_library), directly or through other targets. Runs at the end
# of the top-level CMakeLists.txt, so every CI configure checks it.
function(kvengine_check_layers)
  get_property(engine GLOBAL PROPERTY KVENGINE_ENGINE_LIBRARIES)
  get_property(apps GLOBAL PROPERTY KVENGINE_APP_LIBRARIES)
  foreach(lib IN LISTS engine)
    set(seen "")
    set(todo ${lib})
    while(todo)
      list(POP_FRONT todo current)
      if(current IN_LIST seen OR NOT TARGET ${current})
        continue()
      endif()
      list(APPEND seen ${current})
      if(current IN_LIST apps)
        message(FATAL_ERROR "Layering: engine library ${lib} links application library ${current} "
                            "(the engine in src/ must not depend on apps/)")
      endif()
      get_target_property(links ${current} LINK_LIBRARIES)
      get_target_property(ilinks ${current} INTERFACE_LINK_LIBRARIES)
      foreach(l IN LISTS links ilinks)
        if(l AND NOT l MATCHES "NOTFOUND$" AND NOT l MATCHES "^\\$<")
          list(APPEND todo ${l})
        endif()
      endforeach()
    endwhile()
  endforeach()
  list(LENGTH engine n_engine)
  list(LENGTH apps n_apps)
  message(STATUS "Layering: ${n_engine} engine libraries link no application library (${n_apps})")
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
