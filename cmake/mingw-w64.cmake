# Toolchain for cross-compiling the Windows shim on Linux with mingw-w64 (Debian package
# g++-mingw-w64-x86-64). The -posix compilers are required: the win32 thread model of GCC 12 has
# no std::thread / std::mutex. Used by deploy/windows/build-mingw.sh.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# One self-contained .exe: no libstdc++/libwinpthread DLLs to ship next to it.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
find_program(SMBFLEET_WINE64 NAMES wine64 PATHS /usr/lib/wine NO_DEFAULT_PATH)
if(SMBFLEET_WINE64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${SMBFLEET_WINE64})
endif()
