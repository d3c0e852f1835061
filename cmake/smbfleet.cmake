# Build helpers: every target in the tree is made through these two functions so that
# warnings, sanitizers and test labels are set in one place.
include_guard(GLOBAL)

set(SMBFLEET_WARNINGS -Wall -Wextra -Wno-unused-parameter)
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # Checks ABSL_GUARDED_BY and friends; GCC ignores the annotations (clang-tidy checks them too).
  list(APPEND SMBFLEET_WARNINGS -Wthread-safety)
endif()
if(SMBFLEET_WERROR)
  list(APPEND SMBFLEET_WARNINGS -Werror)
endif()
if(SMBFLEET_SANITIZE)
  # UBSan findings abort the test (no recover), so a finding cannot scroll by in a passing run.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined -fno-sanitize-recover=all)
endif()

option(SMBFLEET_FUZZ "Build the fuzz targets as libFuzzer binaries (clang only)" OFF)
if(SMBFLEET_FUZZ)
  # libFuzzer builds (deploy/fuzz.sh, clang only): coverage instrumentation and ASan+UBSan
  # everywhere; tests/fuzz links its targets with -fsanitize=fuzzer (libFuzzer's main).
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined -fno-sanitize-recover=all)
endif()

# smbfleet_cc_library(NAME foo SRCS a.cc b.cc [HDRS ...] DEPS lib1 lib2 [PRIVATE_DEPS ...])
function(smbfleet_cc_library)
  cmake_parse_arguments(L "" "NAME" "SRCS;HDRS;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${L_NAME} STATIC ${L_SRCS} ${L_HDRS})
  target_include_directories(${L_NAME} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_compile_options(${L_NAME} PRIVATE ${SMBFLEET_WARNINGS})
  target_link_libraries(${L_NAME} PUBLIC ${L_DEPS} PRIVATE ${L_PRIVATE_DEPS})
endfunction()

# smbfleet_cc_binary(NAME foo SRCS main.cc DEPS lib1)
function(smbfleet_cc_binary)
  cmake_parse_arguments(B "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${B_NAME} ${B_SRCS})
  target_compile_options(${B_NAME} PRIVATE ${SMBFLEET_WARNINGS})
  target_link_libraries(${B_NAME} PRIVATE ${B_DEPS})
endfunction()

# smbfleet_cc_test(NAME foo_test SRCS foo_test.cc DEPS lib LABELS unit [TIMEOUT 60])
# Labels: unit, postgres, samba, e2e, fuzz.
# A no-op in WIN32 builds: the tests run on Linux (no GTest in the Windows dependency prefix).
function(smbfleet_cc_test)
  if(WIN32)
    return()
  endif()
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${T_NAME} ${T_SRCS})
  foreach(label IN LISTS T_LABELS)
    set_property(GLOBAL APPEND PROPERTY SMBFLEET_TESTS_${label} ${T_NAME})
  endforeach()
  target_compile_options(${T_NAME} PRIVATE ${SMBFLEET_WARNINGS})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gmock GTest::gtest_main)
  target_compile_definitions(${T_NAME} PRIVATE
    SMBFLEET_SOURCE_DIR="${PROJECT_SOURCE_DIR}" SMBFLEET_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${T_NAME}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
endfunction()

# One target per test label (tests_unit, tests_postgres, ...) that builds just the executables of
# that label, e.g. for the sanitizer pass. Called once, after every folder is added.
function(smbfleet_label_targets)
  foreach(label unit postgres samba e2e bench fuzz)
    get_property(tests GLOBAL PROPERTY SMBFLEET_TESTS_${label})
    add_custom_target(tests_${label})
    if(tests)
      add_dependencies(tests_${label} ${tests})
    endif()
  endforeach()
endfunction()
