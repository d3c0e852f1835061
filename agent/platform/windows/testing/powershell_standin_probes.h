#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_TESTING_POWERSHELL_STANDIN_PROBES_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_TESTING_POWERSHELL_STANDIN_PROBES_H_

// How the stand-in powershell.exe (powershell_standin.cc) tells the agent's probe scripts apart.
// Portable, so that a unit test on any platform checks it against scripts.cc.

namespace smbfleet::agent::windows::testing {

struct StandInProbe {
  const wchar_t* name;    // the agent's probe name and the capture file's stem
  const wchar_t* marker;  // text only this probe's script contains
  const wchar_t* cmdlet;  // what a PowerShell without the module would name as missing
};

// Must follow agent/platform/windows/scripts.cc (ProbeScript) and the registry keys of
// registry_parsers.cc: each marker is text that only that probe's script holds (and no apply
// script: its Get-SmbShare pipes into Where-Object). standin_probes_test checks this.
inline constexpr StandInProbe kStandInProbes[] = {
    {L"host", L"Win32_OperatingSystem", L"Get-CimInstance"},
    {L"Get-SmbServerConfiguration", L"Get-SmbServerConfiguration | Select-Object",
     L"Get-SmbServerConfiguration"},
    {L"Get-SmbClientConfiguration", L"Get-SmbClientConfiguration | Select-Object",
     L"Get-SmbClientConfiguration"},
    {L"Get-SmbShare", L"Get-SmbShare | Select-Object", L"Get-SmbShare"},
    {L"Get-SmbSession", L"Get-SmbSession | Select-Object", L"Get-SmbSession"},
    {L"Get-SmbConnection", L"Get-SmbConnection | Select-Object", L"Get-SmbConnection"},
    {L"Get-SmbMultichannelConnection", L"Get-SmbMultichannelConnection | Select-Object",
     L"Get-SmbMultichannelConnection"},
    {L"Get-SmbOpenFile", L"Get-SmbOpenFile | Select-Object", L"Get-SmbOpenFile"},
    {L"Get-SmbServerNetworkInterface", L"Get-SmbServerNetworkInterface | Select-Object",
     L"Get-SmbServerNetworkInterface"},
    {L"Registry-LanmanServer", L"\\LanmanServer\\Parameters'", L"Get-ItemProperty"},
    {L"Registry-LanmanWorkstation", L"\\LanmanWorkstation\\Parameters'", L"Get-ItemProperty"},
    {L"Registry-HardenedPaths", L"\\NetworkProvider\\HardenedPaths'", L"Get-ItemProperty"},
    {L"Get-NetAdapter", L"Get-NetAdapter | Select-Object", L"Get-NetAdapter"},
    {L"Get-NetAdapterRss", L"Get-NetAdapterRss | Select-Object", L"Get-NetAdapterRss"},
    {L"events", L"Get-WinEvent", L"Get-WinEvent"},
};

}  // namespace smbfleet::agent::windows::testing

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_TESTING_POWERSHELL_STANDIN_PROBES_H_
