#include "agent/platform/samba/sysfs_nics.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace smbfleet::agent::samba {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::smbfleet::v1;

// One sysfs attribute read. kGone: the interface (or its device) went away (ENOENT, ENODEV);
// kUnknown: the kernel has no value to give (EINVAL, e.g. speed without a link).
struct Attr {
  enum Kind { kOk, kGone, kUnknown, kError } kind = kOk;
  std::string text;  // trimmed value, or the error for kError
};

Attr ReadAttr(const std::string& path) {
  Attr out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    char buf[256];
    ssize_t n = 0;
    do {
      n = ::read(fd, buf, sizeof(buf));
    } while (n < 0 && errno == EINTR);
    err = n < 0 ? errno : 0;
    if (n > 0) out.text.assign(buf, static_cast<size_t>(n));
    ::close(fd);
  }
  if (err == ENOENT || err == ENODEV || err == ENXIO) {
    out.kind = Attr::kGone;
  } else if (err == EINVAL || err == EOPNOTSUPP) {
    out.kind = Attr::kUnknown;
  } else if (err != 0) {
    out.kind = Attr::kError;
    out.text = absl::StrCat(path, ": ", std::error_code(err, std::generic_category()).message());
  } else {
    out.text = std::string(absl::StripAsciiWhitespace(out.text));
  }
  return out;
}

// The names in `dir` (sorted); nullopt when it cannot be listed.
std::optional<std::vector<std::string>> List(const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return std::nullopt;
  std::vector<std::string> names;
  for (fs::directory_iterator end; it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec) return std::nullopt;
  std::sort(names.begin(), names.end());
  return names;
}

// Interfaces an RDMA device is bound to: ROOT/class/infiniband/<dev>/device/net/<ifname>.
std::set<std::string> RdmaInterfaces(const std::string& root) {
  std::set<std::string> out;
  auto devices = List(root + "/class/infiniband");
  if (!devices.has_value()) return out;
  for (const std::string& dev : *devices) {
    auto nets = List(absl::StrCat(root, "/class/infiniband/", dev, "/device/net"));
    if (nets.has_value()) out.insert(nets->begin(), nets->end());
  }
  return out;
}

class NicReader {
 public:
  NicReader(std::string dir, std::string name, std::vector<std::string>* problems)
      : dir_(std::move(dir)), name_(std::move(name)), problems_(problems) {}

  // nullopt when the interface vanished while it was being read.
  std::optional<v1::Nic> Read(const std::set<std::string>& rdma) {
    v1::Nic nic;
    nic.set_name(name_);
    if (auto v = Number("ifindex"); v.has_value() && *v <= UINT32_MAX) {
      nic.set_interface_index(static_cast<uint32_t>(*v));
    }
    if (auto v = Text("operstate"); v.has_value()) {
      // "unknown" (many virtual devices) and "testing" say nothing about the link.
      if (*v == "up") nic.set_up(true);
      if (*v == "down" || *v == "lowerlayerdown" || *v == "dormant" || *v == "notpresent") {
        nic.set_up(false);
      }
    }
    if (auto v = Number("mtu"); v.has_value() && *v > 0 && *v <= UINT32_MAX) {
      nic.set_mtu(static_cast<uint32_t>(*v));
    }
    if (auto v = Text("address"); v.has_value()) nic.set_mac(*v);
    // Mb/s; -1 (SPEED_UNKNOWN) or EINVAL when there is no link or the driver does not know.
    if (auto v = Text("speed"); v.has_value()) {
      int64_t mbps = 0;
      if (absl::SimpleAtoi(*v, &mbps) && mbps > 0 && mbps < int64_t{1} << 40) {
        nic.set_link_speed_bps(static_cast<uint64_t>(mbps) * 1'000'000);
      }
    }
    if (auto queues = List(dir_ + "/queues"); queues.has_value()) {
      auto rx = static_cast<uint32_t>(
          std::count_if(queues->begin(), queues->end(),
                        [](const std::string& q) { return absl::StartsWith(q, "rx-"); }));
      if (rx > 0) {
        nic.set_rss_queues(rx);
        nic.set_rss_enabled(rx > 1);
        if (rx > 1) nic.set_rss_capable(true);
      }
    }
    std::error_code ec;
    bool has_device = fs::exists(dir_ + "/device", ec);
    if (!ec) nic.set_physical(has_device);
    fs::path driver = fs::read_symlink(dir_ + "/device/driver", ec);
    if (!ec) nic.set_description(driver.filename().string());
    if (rdma.count(name_) != 0) nic.set_rdma_capable(true);
    // Gone now: what was read may be half of it (device looked absent because it was removed).
    if (gone_ || !fs::exists(dir_ + "/ifindex", ec)) {
      problems_->push_back(absl::StrCat(name_, ": the interface went away while it was read"));
      return std::nullopt;
    }
    return nic;
  }

 private:
  std::optional<std::string> Text(const char* attr) {
    Attr a = ReadAttr(absl::StrCat(dir_, "/", attr));
    switch (a.kind) {
      case Attr::kOk:
        return a.text;
      case Attr::kGone:
        gone_ = gone_ || !fs::exists(dir_);
        return std::nullopt;
      case Attr::kUnknown:
        return std::nullopt;
      case Attr::kError:
        problems_->push_back(absl::StrCat(name_, ": ", a.text));
        return std::nullopt;
    }
    return std::nullopt;
  }

  std::optional<uint64_t> Number(const char* attr) {
    auto text = Text(attr);
    if (!text.has_value()) return std::nullopt;
    uint64_t n = 0;
    if (!absl::SimpleAtoi(*text, &n)) {
      problems_->push_back(absl::StrCat(name_, ": ", dir_, "/", attr, ": not a number: \"",
                                        text->substr(0, 40), "\""));
      return std::nullopt;
    }
    return n;
  }

  std::string dir_;
  std::string name_;
  std::vector<std::string>* problems_;
  bool gone_ = false;
};

}  // namespace

SysfsNics ReadSysfsNics(const std::string& root) {
  SysfsNics out;
  const std::string net = root + "/class/net";
  auto names = List(net);
  if (!names.has_value()) {
    out.problems.push_back(absl::StrCat(net, ": cannot be listed"));
    return out;
  }
  std::set<std::string> rdma = RdmaInterfaces(root);
  for (const std::string& name : *names) {
    if (name == "lo") continue;
    NicReader reader(absl::StrCat(net, "/", name), name, &out.problems);
    if (auto nic = reader.Read(rdma)) out.nics.push_back(*std::move(nic));
  }
  return out;
}

}  // namespace smbfleet::agent::samba
