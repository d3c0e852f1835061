# Toolchain for cross-building the Windows agent's dependencies (deploy/windows/build-deps-mingw.sh)
# and code that links them: cmake/mingw-w64.cmake plus the dependency prefix, given in the
# environment as SMBFLEET_MINGW_DEPS_PREFIX (the environment, because CMake re-reads this file in
# every try_compile, where cache variables of the outer project are not set).
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/mingw-w64.cmake)
if(DEFINED ENV{SMBFLEET_MINGW_DEPS_PREFIX})
  list(PREPEND CMAKE_FIND_ROOT_PATH "$ENV{SMBFLEET_MINGW_DEPS_PREFIX}")
endif()
# Never the Linux packages' CMake configs (/usr/lib/x86_64-linux-gnu/cmake/absl, ...).
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The prefix's OpenSSL is static: FindOpenSSL then adds ws2_32 and crypt32 (the CryptoAPI engine and
# the socket BIO need them). gRPC's installed config calls find_package(OpenSSL) in every consumer.
set(OPENSSL_USE_STATIC_LIBS TRUE)
