# `smbfleetctl policy ...`: included by cli/CMakeLists.txt.
smbfleet_cc_library(NAME smbfleet_policy_cli
  SRCS ${CMAKE_CURRENT_LIST_DIR}/policy_command.cc
  DEPS smbfleet_policy smbfleet_common absl::time)

smbfleet_cc_test(NAME policy_command_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/policy_command_test.cc
  DEPS smbfleet_cli_commands)
