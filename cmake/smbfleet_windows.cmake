# What the Windows agent needs, found for a WIN32 build (the top-level CMakeLists.txt includes
# this instead of the Linux packages). Only the agent is built: no collector, CLI, tests,
# PostgreSQL client or Prometheus.
include_guard(GLOBAL)

find_package(Protobuf CONFIG REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)

# protoc and grpc_cpp_plugin run on the build host: the prefix's would be Windows programs.
find_program(SMBFLEET_HOST_PROTOC protoc REQUIRED NO_CMAKE_FIND_ROOT_PATH)
find_program(SMBFLEET_HOST_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED NO_CMAKE_FIND_ROOT_PATH)

# nlohmann/json is header-only and not in the prefix: the build host's headers, through a folder
# that holds only them, so that no other host header can shadow a Windows one.
find_path(SMBFLEET_HOST_NLOHMANN_DIR nlohmann/json.hpp REQUIRED NO_CMAKE_FIND_ROOT_PATH)
set(SMBFLEET_NLOHMANN_INCLUDE ${CMAKE_BINARY_DIR}/host-headers)
file(MAKE_DIRECTORY ${SMBFLEET_NLOHMANN_INCLUDE})
if(NOT EXISTS ${SMBFLEET_NLOHMANN_INCLUDE}/nlohmann)
  file(CREATE_LINK ${SMBFLEET_HOST_NLOHMANN_DIR}/nlohmann ${SMBFLEET_NLOHMANN_INCLUDE}/nlohmann
       SYMBOLIC)
endif()
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
set_target_properties(nlohmann_json::nlohmann_json PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES ${SMBFLEET_NLOHMANN_INCLUDE})

# Win32 headers as the shim uses them: wide-character API, no min/max macros, Windows 10 APIs.
add_compile_definitions(UNICODE _UNICODE WIN32_LEAN_AND_MEAN NOMINMAX _WIN32_WINNT=0x0A00)

# The programs in the build folder's root: BUILD_DIR/smbfleet-agent.exe is what the Wine tests run.
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
