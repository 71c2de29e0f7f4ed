# fuzz.cmake: libFuzzer targets (tests/fuzz/fuzz_<target>.c) for every parser
# of user bytes, built in their own tree with clang:
#   CC=clang cmake -S . -B build-fuzz -DFRAMED_FUZZ=ON && cmake --build build-fuzz --target fuzz
# framed_core gets -fsanitize=fuzzer-no-link,address,undefined (coverage
# without libFuzzer's main); each target links -fsanitize=fuzzer,... Each
# target becomes two CTest tests labelled `fuzz`:
#   fuzz_<target>          a few seconds of fuzzing from tests/fuzz/corpus/<target>
#                          (FRAMED_FUZZ_SECONDS, default 5); a crash, a leak,
#                          a timeout or an OOM fails it
#   fuzz_regress_<target>  replays every file in tests/fuzz/regress/<target>
# tests/fuzz/dict/<target>.dict, when present, is the target's dictionary.
# scripts/fuzz.sh runs long runs on the same binaries.
option(FRAMED_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only)" OFF)
if(NOT FRAMED_FUZZ)
  return()
endif()
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "FRAMED_FUZZ needs clang (configure with CC=clang)")
endif()
if(FRAMED_SANITIZE)
  message(FATAL_ERROR "FRAMED_FUZZ sets its own sanitizers: leave FRAMED_SANITIZE empty")
endif()

set(FRAMED_FUZZ_SECONDS 5 CACHE STRING "Seconds each fuzz_<target> CTest test fuzzes")
set(fuzz_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all
  -fno-omit-frame-pointer)
target_compile_options(framed_core PRIVATE -fsanitize=fuzzer-no-link ${fuzz_sanitizers})

# Per target: the longest input worth mutating (bytes) and the RSS limit (MB).
# The readers get room for several records; the HTTP target one request line.
set(fuzz_max_len_config 4096)
set(fuzz_max_len_plan 8192)
set(fuzz_max_len_expr 1024)
set(fuzz_max_len_csv 4096)
set(fuzz_max_len_ndjson 4096)
set(fuzz_max_len_serde 16384)
set(fuzz_max_len_parquet_footer 65536)
set(fuzz_max_len_task 8192)
set(fuzz_max_len_http 4096)
set(fuzz_max_len_params 256)
set(fuzz_max_len_json_text 4096)
set(fuzz_max_len_window 1024)
set(fuzz_max_len_sql_parse 4096)

add_custom_target(fuzz)
file(GLOB FRAMED_FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
foreach(src ${FRAMED_FUZZ_TARGETS})
  get_filename_component(exe ${src} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" name ${exe})
  add_executable(${exe} ${src})
  target_compile_options(${exe} PRIVATE -fsanitize=fuzzer ${fuzz_sanitizers})
  target_link_options(${exe} PRIVATE -fsanitize=fuzzer ${fuzz_sanitizers})
  target_link_libraries(${exe} PRIVATE framed_core)
  add_dependencies(fuzz ${exe})
  set(max_len ${fuzz_max_len_${name}})
  if(NOT max_len)
    set(max_len 4096)
  endif()
  # The committed corpus is only read: new inputs go to the build tree's copy.
  set(work ${CMAKE_BINARY_DIR}/fuzz-corpus/${name})
  set(art ${CMAKE_BINARY_DIR}/fuzz-artifacts/${name})
  file(MAKE_DIRECTORY ${work} ${art})
  set(opts -timeout=10 -rss_limit_mb=2048 -max_len=${max_len} -print_final_stats=1
    -artifact_prefix=${art}/)
  if(EXISTS ${CMAKE_SOURCE_DIR}/tests/fuzz/dict/${name}.dict)
    list(APPEND opts -dict=${CMAKE_SOURCE_DIR}/tests/fuzz/dict/${name}.dict)
  endif()
  add_test(NAME fuzz_${name}
    COMMAND ${exe} ${opts} -max_total_time=${FRAMED_FUZZ_SECONDS} ${work}
      ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${name})
  set(regress ${CMAKE_SOURCE_DIR}/tests/fuzz/regress/${name})
  add_test(NAME fuzz_regress_${name}
    COMMAND ${CMAKE_SOURCE_DIR}/tests/fuzz/replay.sh $<TARGET_FILE:${exe}> ${regress})
  set_tests_properties(fuzz_${name} fuzz_regress_${name} PROPERTIES
    ENVIRONMENT "FRAMED_TEST_DATA=${CMAKE_SOURCE_DIR}/tests/data;FRAMED_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
    LABELS fuzz TIMEOUT 300)
endforeach()
