#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_SYSFS_NICS_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_SYSFS_NICS_H_

// The network interfaces of a Linux host from sysfs (/sys/class/net), for posture.nics[]: what
// decides whether SMB multichannel is possible and whether signing and encryption can spread over
// several cores (receive queues) or run on one.

#include <string>
#include <vector>

#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::samba {

struct SysfsNics {
  std::vector<smbfleet::v1::Nic> nics;  // in name order, without lo
  // One line per attribute that could not be read and per interface that vanished while it was
  // being read (it is left out): "eth1: /sys/class/net/eth1/mtu: Permission denied".
  std::vector<std::string> problems;
};

// Reads ROOT/class/net/*: ifindex, operstate, mtu, address, speed (Mb/s; -1 or a read refused
// with EINVAL is unknown), queues/rx-* (rss_queues; rss_enabled when more than one), device
// (physical) and the driver's name (description); RDMA from ROOT/class/infiniband/*/device/net/*
// (listed = capable, else unknown). `root` is "/sys" on a host; tests pass a fake tree.
SysfsNics ReadSysfsNics(const std::string& root);

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_SYSFS_NICS_H_
