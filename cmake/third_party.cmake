# Header-only and source dependencies from a folder instead of the system,
# for machines without Debian's -dev packages (the GPU machines of
# scripts/gpu-check.sh: CUDA, CMake, ninja and g++ only, no network).
# scripts/bundle-third-party.sh fills the folder from a Debian machine:
#   DIR/nlohmann_json/include/nlohmann/   (nlohmann-json3-dev)
#   DIR/cli11/include/CLI/                (libcli11-dev)
#   DIR/googletest/                       (googletest: the sources, built here)
#   DIR/zlib/include/                     (zlib1g-dev's two headers; the
#                                          library is libz.so.1, on every system)
#   DIR/openblas/include/                 (libopenblas-dev's cblas.h and
#                                          openblas_config.h: runtime/blas.h
#                                          declares the GEMMs with them; the
#                                          library is opened at run time)
# The rest of the build keeps its plain find_package calls: each finds the
# small config file written below, which names the bundled headers, and
# GTest's targets come from building the bundled sources.
set(KFUSE_THIRD_PARTY_DIR "" CACHE PATH "Take nlohmann-json, CLI11 and GoogleTest from this folder (scripts/bundle-third-party.sh)")

function(kfuse_bundled_headers package target include_dir)
  if(NOT EXISTS "${include_dir}")
    message(FATAL_ERROR "KFUSE_THIRD_PARTY_DIR: ${include_dir} is missing (run scripts/bundle-third-party.sh)")
  endif()
  set(dir "${CMAKE_BINARY_DIR}/third_party/${package}")
  file(WRITE "${dir}/${package}Config.cmake"
       "if(NOT TARGET ${target})\n"
       "  add_library(${target} INTERFACE IMPORTED)\n"
       "  target_include_directories(${target} SYSTEM INTERFACE \"${include_dir}\")\n"
       "endif()\n")
  set(${package}_DIR "${dir}" CACHE PATH "bundled ${package}" FORCE)
endfunction()

if(KFUSE_THIRD_PARTY_DIR)
  get_filename_component(_tp "${KFUSE_THIRD_PARTY_DIR}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
  message(STATUS "Third-party headers and sources from ${_tp}")
  kfuse_bundled_headers(nlohmann_json nlohmann_json::nlohmann_json "${_tp}/nlohmann_json/include")
  kfuse_bundled_headers(CLI11 CLI11::CLI11 "${_tp}/cli11/include")
  # FindZLIB takes these cache entries as they are.
  set(ZLIB_INCLUDE_DIR "${_tp}/zlib/include" CACHE PATH "bundled zlib headers" FORCE)
  find_library(ZLIB_LIBRARY NAMES z libz.so.1)
  # runtime/blas.h's <cblas.h>: no find_package names it, so an include path.
  if(NOT EXISTS "${_tp}/openblas/include/cblas.h")
    message(FATAL_ERROR "KFUSE_THIRD_PARTY_DIR: ${_tp}/openblas/include/cblas.h is missing (run scripts/bundle-third-party.sh)")
  endif()
  include_directories(SYSTEM "${_tp}/openblas/include")
  if(KFUSE_BUILD_TESTS)
    if(NOT EXISTS "${_tp}/googletest/CMakeLists.txt")
      message(FATAL_ERROR "KFUSE_THIRD_PARTY_DIR: ${_tp}/googletest is missing (run scripts/bundle-third-party.sh)")
    endif()
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory("${_tp}/googletest" "${CMAKE_BINARY_DIR}/third_party/googletest-build" EXCLUDE_FROM_ALL)
    if(NOT TARGET GTest::gtest)  # googletest before 1.11 names no GTest:: targets itself
      add_library(GTest::gtest ALIAS gtest)
      add_library(GTest::gtest_main ALIAS gtest_main)
    endif()
    # FindGTest then takes the targets just defined.
    file(WRITE "${CMAKE_BINARY_DIR}/third_party/GTest/GTestConfig.cmake" "# GTest's targets: built from ${_tp}/googletest\n")
    set(GTest_DIR "${CMAKE_BINARY_DIR}/third_party/GTest" CACHE PATH "bundled GTest" FORCE)
  endif()
endif()
