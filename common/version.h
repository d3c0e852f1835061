#ifndef SMBFLEET_COMMON_VERSION_H_
#define SMBFLEET_COMMON_VERSION_H_

namespace smbfleet {
inline constexpr char kVersion[] = "0.1.0";
}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_VERSION_H_
