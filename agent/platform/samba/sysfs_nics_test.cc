#include "agent/platform/samba/sysfs_nics.h"

#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/platform/samba/fake_runner_for_test.h"
#include "agent/platform/samba/samba_source.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::samba {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// A fake /sys with the shapes the kernel gives: class/net/<if> are symlinks into devices/.
class SysfsNicsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/sysfs_nics_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    fs::create_directories(root_ + "/class/net");
  }
  void TearDown() override { fs::remove_all(root_); }

  // Creates devices/<dev>/net/<name> with `attrs` and links class/net/<name> to it.
  std::string Nic(const std::string& name, const std::map<std::string, std::string>& attrs,
                  int rx_queues, bool physical) {
    std::string dir = root_ + "/devices/" + name + "/net/" + name;
    fs::create_directories(dir);
    for (const auto& [attr, value] : attrs) Write(absl::StrCat(dir, "/", attr), value + "\n");
    if (rx_queues >= 0) fs::create_directories(dir + "/queues");
    for (int i = 0; i < rx_queues; ++i) {
      fs::create_directories(dir + "/queues/rx-" + std::to_string(i));
      fs::create_directories(dir + "/queues/tx-" + std::to_string(i));
    }
    if (physical) {
      fs::create_directories(root_ + "/bus/pci/drivers/mlx5_core");
      fs::create_directories(root_ + "/devices/" + name + "/pci");
      fs::create_symlink("../../../" + name + "/pci", dir + "/device");
      fs::create_symlink(root_ + "/bus/pci/drivers/mlx5_core",
                         root_ + "/devices/" + name + "/pci/driver");
    }
    fs::create_symlink("../../devices/" + name + "/net/" + name, root_ + "/class/net/" + name);
    return dir;
  }

  static void Write(const std::string& path, const std::string& text) {
    ASSERT_TRUE(WriteFileAtomic(path, text).ok()) << path;
  }

  static std::map<std::string, std::string> Attrs(const std::string& ifindex,
                                                  const std::string& operstate,
                                                  const std::string& speed) {
    return {{"ifindex", ifindex},
            {"operstate", operstate},
            {"mtu", "1500"},
            {"address", "52:54:00:12:34:56"},
            {"speed", speed}};
  }

  std::string root_;
};

TEST_F(SysfsNicsTest, PhysicalMultiQueueNicAndSingleQueueVirtualNic) {
  Nic("lo", Attrs("1", "unknown", "-1"), 1, false);
  Nic("ens1f0", Attrs("3", "up", "25000"), 8, true);
  Nic("eth0", Attrs("2", "up", "-1"), 1, false);
  SysfsNics got = ReadSysfsNics(root_);
  EXPECT_THAT(got.problems, IsEmpty());
  ASSERT_THAT(got.nics, SizeIs(2));  // lo skipped, name order

  const auto& phys = got.nics[0];
  EXPECT_EQ(phys.name(), "ens1f0");
  EXPECT_EQ(phys.interface_index(), 3u);
  EXPECT_TRUE(phys.up());
  EXPECT_EQ(phys.link_speed_bps(), 25'000'000'000u);
  EXPECT_EQ(phys.mtu(), 1500u);
  EXPECT_EQ(phys.mac(), "52:54:00:12:34:56");
  EXPECT_EQ(phys.rss_queues(), 8u);
  EXPECT_TRUE(phys.rss_enabled());
  EXPECT_TRUE(phys.rss_capable());
  EXPECT_TRUE(phys.physical());
  EXPECT_EQ(phys.description(), "mlx5_core");
  EXPECT_FALSE(phys.has_rdma_capable()) << "no RDMA device lists it: unknown, not false";

  // One queue, speed -1 (virtio): one core for receive work, speed unknown.
  const auto& virt = got.nics[1];
  EXPECT_EQ(virt.name(), "eth0");
  EXPECT_FALSE(virt.has_link_speed_bps());
  EXPECT_EQ(virt.rss_queues(), 1u);
  EXPECT_FALSE(virt.rss_enabled());
  EXPECT_FALSE(virt.has_rss_capable());
  EXPECT_TRUE(virt.has_physical());
  EXPECT_FALSE(virt.physical());
  EXPECT_TRUE(virt.description().empty());
}

TEST_F(SysfsNicsTest, UnknownValuesStayUnset) {
  // Link down, no speed file, no queues folder, operstate "unknown", no address.
  Nic("tun0", {{"ifindex", "9"}, {"operstate", "unknown"}, {"mtu", "1400"}}, -1, false);
  Nic("eth1", Attrs("4", "down", "-1"), 2, false);
  SysfsNics got = ReadSysfsNics(root_);
  EXPECT_THAT(got.problems, IsEmpty());
  ASSERT_THAT(got.nics, SizeIs(2));
  EXPECT_EQ(got.nics[0].name(), "eth1");
  EXPECT_TRUE(got.nics[0].has_up());
  EXPECT_FALSE(got.nics[0].up());
  const auto& tun = got.nics[1];
  EXPECT_FALSE(tun.has_up());
  EXPECT_FALSE(tun.has_link_speed_bps());
  EXPECT_FALSE(tun.has_rss_queues());
  EXPECT_FALSE(tun.has_rss_enabled());
  EXPECT_TRUE(tun.mac().empty());
  EXPECT_EQ(tun.mtu(), 1400u);
}

TEST_F(SysfsNicsTest, AVanishedNicIsLeftOutWithAProblem) {
  Nic("eth0", Attrs("2", "up", "10000"), 4, false);
  // Listed, then removed: the class entry points at a device that is gone.
  fs::create_symlink("../../devices/veth9/net/veth9", root_ + "/class/net/veth9");
  SysfsNics got = ReadSysfsNics(root_);
  ASSERT_THAT(got.nics, SizeIs(1));
  EXPECT_EQ(got.nics[0].name(), "eth0");
  EXPECT_THAT(got.problems, ElementsAre(HasSubstr("veth9: the interface went away")));
}

TEST_F(SysfsNicsTest, AnUnreadableOrGarbledAttributeIsAProblemNamingIt) {
  std::string dir = Nic("eth0", Attrs("2", "up", "10000"), 1, false);
  fs::remove(dir + "/mtu");
  fs::create_directories(dir + "/mtu");  // read() fails with EISDIR
  Write(dir + "/ifindex", "two\n");
  SysfsNics got = ReadSysfsNics(root_);
  ASSERT_THAT(got.nics, SizeIs(1));
  EXPECT_FALSE(got.nics[0].has_mtu());
  EXPECT_FALSE(got.nics[0].has_interface_index());
  EXPECT_EQ(got.nics[0].link_speed_bps(), 10'000'000'000u);
  EXPECT_THAT(got.problems, ElementsAre(HasSubstr("eth0/ifindex: not a number: \"two\""),
                                        HasSubstr("eth0/mtu: ")));
}

TEST_F(SysfsNicsTest, RdmaFromTheInfinibandClass) {
  Nic("ens2", Attrs("5", "up", "100000"), 16, true);
  Nic("eth0", Attrs("2", "up", "1000"), 1, true);
  fs::create_directories(root_ + "/class/infiniband/mlx5_0/device/net/ens2");
  SysfsNics got = ReadSysfsNics(root_);
  ASSERT_THAT(got.nics, SizeIs(2));
  EXPECT_TRUE(got.nics[0].rdma_capable());
  EXPECT_FALSE(got.nics[1].has_rdma_capable());
}

TEST_F(SysfsNicsTest, NoNetClassIsOneProblem) {
  fs::remove_all(root_ + "/class/net");
  SysfsNics got = ReadSysfsNics(root_);
  EXPECT_THAT(got.nics, IsEmpty());
  EXPECT_THAT(got.problems, ElementsAre(HasSubstr("/class/net: cannot be listed")));
}

// The Samba source reports them, and a vanished one as a probe error of its own probe.
TEST_F(SysfsNicsTest, SambaSourceFillsNics) {
  Nic("eth0", Attrs("2", "up", "10000"), 4, true);
  fs::create_symlink("../../devices/gone/net/gone", root_ + "/class/net/gone");
  std::string conf = root_ + "/smb.conf";
  Write(conf, "[global]\n");
  SambaOptions options;
  options.smb_conf = conf;
  options.read_logs = false;
  options.sysfs_root = root_;
  FakeRunner runner;  // no tool answers: testparm/smbstatus probe errors, NICs still read
  auto posture = NewSambaSource(options, &runner)->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  ASSERT_THAT(posture->nics(), SizeIs(1));
  EXPECT_EQ(posture->nics(0).name(), "eth0");
  EXPECT_EQ(posture->nics(0).rss_queues(), 4u);
  int nic_errors = 0;
  for (const auto& e : posture->probe_errors()) {
    if (e.probe() != "nics") continue;
    ++nic_errors;
    EXPECT_THAT(e.message(), HasSubstr("gone: the interface went away"));
    EXPECT_THAT(e.sections(), ElementsAre(v1::POSTURE_SECTION_NETWORK));
  }
  EXPECT_EQ(nic_errors, 1);
}

}  // namespace
}  // namespace smbfleet::agent::samba
