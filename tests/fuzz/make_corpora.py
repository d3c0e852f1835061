#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/<target>/corpus/ from the real fixtures and the documented
configuration examples. Deterministic: rerun after changing a fixture and commit the result.
Hand-made edge cases (edge-*) and crash reproducers (crash-*) are committed as they are and left
alone; report_request's seeds come from its own generator (make_report_seeds).
"""
import os
import re
import shutil
import socket
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUZZ = os.path.join(ROOT, "tests", "fuzz")
WINDOWS = os.path.join(ROOT, "tests", "fixtures", "windows")
SAMBA = os.path.join(ROOT, "tests", "fixtures", "samba")
MAX_BYTES = 64 * 1024

# WindowsProbes() order (agent/platform/windows/parsers.cc); the events probe comes last.
PROBE_FILES = [
    "host.json", "Get-SmbServerConfiguration.json", "Get-SmbClientConfiguration.json",
    "Get-SmbShare.json", "Get-SmbSession.json", "Get-SmbConnection.json",
    "Get-SmbMultichannelConnection.json", "Get-SmbOpenFile.json",
    "Get-SmbServerNetworkInterface.json", "Registry-LanmanServer.json",
    "Registry-LanmanWorkstation.json", "Registry-HardenedPaths.json", "Get-NetAdapter.json",
    "Get-NetAdapterRss.json", "events.json",
]
# Each folder arrives in another encoding (tests/fixtures/windows/README.md); ws2022-nas-client
# repeats ws2022.
WINDOWS_BUILDS = ["ws2016", "ws2019", "ws2022", "ws2025"]


def reset(target):
    """Removes the generated seeds (seed-*) of a target, keeping edge-* and crash-* files."""
    corpus = os.path.join(FUZZ, target, "corpus")
    os.makedirs(corpus, exist_ok=True)
    for name in os.listdir(corpus):
        if name.startswith("seed-"):
            os.remove(os.path.join(corpus, name))
    return corpus


def write(corpus, name, data):
    if len(data) > MAX_BYTES:
        raise SystemExit(f"{name}: {len(data)} bytes, over the {MAX_BYTES} byte limit")
    with open(os.path.join(corpus, "seed-" + name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def yaml_blocks(doc):
    return re.findall(r"```yaml\n(.*?)```", read(os.path.join(ROOT, doc)).decode(), re.S)


# sock_diag: netlink message types and the offsets of struct tcp_info (linux/tcp.h) the agent reads.
NLMSG_ERROR, NLMSG_DONE, SOCK_DIAG_BY_FAMILY, INET_DIAG_INFO = 2, 3, 20, 2
TCP_INFO_LEN = 232  # a 6.1 kernel's tcp_info; older kernels send less


def netlink(msg_type, payload):
    """One netlink message: nlmsghdr (len, type, flags NLM_F_MULTI, seq, pid), padded to 4."""
    data = struct.pack("=IHHII", 16 + len(payload), msg_type, 2, 1, 0) + payload
    return data + b"\0" * (-len(data) % 4)


def diag_message(family, local, local_port, remote, remote_port, info_len=TCP_INFO_LEN):
    """A SOCK_DIAG_BY_FAMILY message: inet_diag_msg, then INET_DIAG_INFO with a tcp_info."""
    def addr(text):
        raw = socket.inet_pton(family, text)
        return raw + b"\0" * (16 - len(raw))
    msg = struct.pack("=BBBB", family, 1, 0, 0)  # ESTABLISHED
    msg += struct.pack("!HH", local_port, remote_port) + addr(local) + addr(remote)
    msg += struct.pack("=IQ", 0, 0) + struct.pack("=IIIII", 0, 0, 0, 0, 12345)
    info = bytearray(TCP_INFO_LEN)
    struct.pack_into("=II", info, 68, 8900, 4450)   # tcpi_rtt, tcpi_rttvar
    struct.pack_into("=I", info, 100, 7)            # tcpi_total_retrans
    struct.pack_into("=I", info, 148, 12)           # tcpi_min_rtt
    struct.pack_into("=Q", info, 160, 125000000)    # tcpi_delivery_rate
    info = bytes(info[:info_len])
    attr = struct.pack("=HH", 4 + len(info), INET_DIAG_INFO) + info
    attr += b"\0" * (-len(attr) % 4)
    return netlink(SOCK_DIAG_BY_FAMILY, msg + attr)


def main():
    ps = reset("ps_json")
    cmdlets = reset("windows_cmdlets")
    for build in WINDOWS_BUILDS:
        for index, name in enumerate(PROBE_FILES):
            path = os.path.join(WINDOWS, build, name)
            if not os.path.exists(path):
                continue
            data = read(path)
            write(ps, f"{build}-{name}", data)
            write(cmdlets, f"{build}-{name}", bytes([index]) + data)

    smbstatus = reset("samba_smbstatus")
    testparm = reset("samba_testparm")
    for name in sorted(os.listdir(SAMBA)):
        if name.endswith(".smbstatus.json"):
            write(smbstatus, name, read(os.path.join(SAMBA, name)))
        elif name.endswith(".testparm.txt"):
            write(testparm, name, read(os.path.join(SAMBA, name)))

    diag = reset("sock_diag")
    done = netlink(NLMSG_DONE, struct.pack("=i", 0))
    write(diag, "ipv4-445.bin",
          diag_message(socket.AF_INET, "192.0.2.1", 445, "192.0.2.9", 49812) +
          diag_message(socket.AF_INET, "192.0.2.1", 22, "192.0.2.9", 40000) + done)
    write(diag, "ipv6-139.bin",
          diag_message(socket.AF_INET6, "2001:db8::1", 139, "2001:db8::9", 51000) + done)
    write(diag, "ipv4-mapped.bin",
          diag_message(socket.AF_INET6, "::ffff:10.0.0.1", 445, "::ffff:10.0.0.9", 50123))
    write(diag, "short-tcp-info.bin",
          diag_message(socket.AF_INET, "10.0.0.1", 445, "10.0.0.9", 50000, info_len=104))
    write(diag, "eperm.bin", netlink(NLMSG_ERROR, struct.pack("=i", -1) + b"\0" * 16))
    write(diag, "done.bin", done)

    policy = reset("policy_file")
    policies = os.path.join(ROOT, "policy", "policies")
    for name in sorted(os.listdir(policies)):
        if name.endswith(".yaml"):
            text = read(os.path.join(policies, name)).decode()
            write(policy, name, text.encode())
            # And one small policy per rule (the header, then that rule), so that mutations
            # meet every expectation and remediation form without the whole file around them.
            head, _, body = text.partition("\nrules:\n")
            for i, rule in enumerate(re.split(r"\n(?=  - id: )", body)):
                if rule.startswith("  - id: "):
                    write(policy, f"{name[:-5]}-rule-{i:02d}.yaml",
                          (head + "\nrules:\n" + rule.rstrip() + "\n").encode())

    # Configuration examples as the documentation gives them.
    collector = reset("collector_config")
    for i, block in enumerate(yaml_blocks("docs/collector.md")):
        write(collector, f"collector-md-{i}.yaml", block.encode())
    agent = reset("agent_config")
    for i, block in enumerate(yaml_blocks("docs/agent-changes.md")):
        write(agent, f"agent-changes-md-{i}.yaml", block.encode())
    for doc in ["README.md", "docs/enrollment.md"]:
        for i, block in enumerate(yaml_blocks(doc)):
            base = os.path.basename(doc).replace(".md", "")
            target = agent if ("collector: {" in block or "# agent.yaml" in block) else collector
            write(target, f"{base}-{i}.yaml", block.encode())


if __name__ == "__main__":
    main()
