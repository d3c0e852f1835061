#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/<target>/corpus/ from the real fixtures and the documented
configuration examples. Deterministic: rerun after changing a fixture and commit the result.
Hand-made edge cases (edge-*) and crash reproducers (crash-*) are committed as they are and left
alone; report_request's seeds come from its own generator (make_report_seeds).
"""
import os
import re
import shutil

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
