// The PowerShell the agent runs. Every script is a constant: nothing read from the host or sent
// by the collector is ever part of a script's text. Input arrives as $SmbfleetData (decoded by
// the prelude from base64 JSON in the environment).

#include <map>
#include <string>

#include "agent/platform/windows/parsers.h"
#include "agent/platform/windows/windows_source.h"

namespace smbfleet::agent::windows {

std::string ScriptPrelude() {
  return R"PS($ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
[Console]::OutputEncoding = New-Object System.Text.UTF8Encoding $false
$SmbfleetData = $null
if ($env:SMBFLEET_DATA) {
  $SmbfleetData = [System.Text.Encoding]::UTF8.GetString(
      [System.Convert]::FromBase64String($env:SMBFLEET_DATA)) | ConvertFrom-Json
}
trap {
  [Console]::Error.WriteLine($_.Exception.Message)
  exit 1
}
)PS";
}

namespace {

// Select-Object turns CIM instances into plain objects (no CimClass/CimInstanceProperties
// noise); @() keeps 0/1/N results an array.
std::string List(const std::string& cmdlet, const std::string& exclude = "") {
  return "ConvertTo-Json -Depth 4 -Compress -InputObject @(" + cmdlet +
         " | Select-Object -Property * -ExcludeProperty Cim*,PSComputerName" + exclude + ")\n";
}

std::string One(const std::string& cmdlet) {
  return cmdlet +
         " | Select-Object -Property * -ExcludeProperty Cim*,PSComputerName |"
         " ConvertTo-Json -Depth 4 -Compress\n";
}

const char kHostScript[] = R"PS($os = Get-CimInstance -ClassName Win32_OperatingSystem
$cs = Get-CimInstance -ClassName Win32_ComputerSystem
$cpu = @(Get-CimInstance -ClassName Win32_Processor)[0]
$ubr = $null
try {
  $ubr = (Get-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion' -Name UBR).UBR
} catch { }
[ordered]@{
  ComputerName = $env:COMPUTERNAME
  DnsHostName = $cs.DNSHostName
  Domain = $cs.Domain
  PartOfDomain = $cs.PartOfDomain
  OsCaption = $os.Caption
  OsVersion = $os.Version
  OsBuildNumber = $os.BuildNumber
  UBR = $ubr
  NumberOfLogicalProcessors = $cs.NumberOfLogicalProcessors
  CpuName = $cpu.Name
} | ConvertTo-Json -Depth 3 -Compress
)PS";

// Input: {"channels": [{"name": "...", "after": 123}], "max": 500}. For each channel: the newest
// record id (so the agent can count what it did not fetch) and at most `max` events newer than
// `after`, with EventData fields by name.
const char kEventsScript[] = R"PS($max = [int]$SmbfleetData.max
$out = [ordered]@{ events = @(); latest = [ordered]@{}; errors = @() }
foreach ($c in @($SmbfleetData.channels)) {
  $name = [string]$c.name
  $after = [uint64]$c.after
  try {
    $newest = @(Get-WinEvent -LogName $name -MaxEvents 1 -ErrorAction Stop)
  } catch {
    if ($_.FullyQualifiedErrorId -like 'NoMatchingEventsFound*') {
      $out.latest[$name] = 0
    } elseif ($_.FullyQualifiedErrorId -notlike 'NoMatchingLogsFound*') {
      $out.errors += [ordered]@{ channel = $name; message = $_.Exception.Message }
    }
    continue
  }
  $out.latest[$name] = [uint64]$newest[0].RecordId
  if ([uint64]$newest[0].RecordId -le $after) { continue }
  $xpath = '*[System[EventRecordID>' + $after.ToString([Globalization.CultureInfo]::InvariantCulture) + ']]'
  foreach ($e in @(Get-WinEvent -LogName $name -FilterXPath $xpath -MaxEvents $max -ErrorAction SilentlyContinue)) {
    $data = [ordered]@{}
    try {
      foreach ($d in ([xml]$e.ToXml()).Event.EventData.Data) {
        $n = $d.GetAttribute('Name')
        if ($n) { $data[$n] = $d.InnerText }
      }
    } catch { }
    $out.events += [ordered]@{
      Id = $e.Id; LogName = $e.LogName; ProviderName = $e.ProviderName; RecordId = $e.RecordId
      TimeCreated = $e.TimeCreated; Level = [int]$e.Level; LevelDisplayName = $e.LevelDisplayName
      Message = $e.Message; EventData = $data
    }
  }
}
ConvertTo-Json -Depth 5 -Compress -InputObject $out
)PS";

// One registry key's values as Get-ItemProperty shows them, without the provider's PS*
// properties; [] when the key does not exist (the Windows defaults apply). A read error names the
// key. $key is set from a constant of the agent (RegistryKeyOf), never from input.
const char kRegistryScript[] = R"PS($item = $null
try {
  $item = Get-Item -LiteralPath $key -ErrorAction Stop
} catch {
  if ($_.FullyQualifiedErrorId -notlike 'PathNotFound*') { throw ($key + ': ' + $_.Exception.Message) }
}
$values = @()
if ($null -ne $item) {
  try {
    $values = @(Get-ItemProperty -LiteralPath $key -ErrorAction Stop |
        Select-Object -Property * -ExcludeProperty PSPath,PSParentPath,PSChildName,PSDrive,PSProvider)
  } catch {
    throw ($key + ': ' + $_.Exception.Message)
  }
}
ConvertTo-Json -Depth 3 -Compress -InputObject $values
)PS";

std::string Registry(const std::string& probe) {
  return "$key = '" + std::string(RegistryKeyOf(probe)) + "'\n" + kRegistryScript;
}

}  // namespace

const std::string& ProbeScript(const std::string& probe) {
  static const std::map<std::string, std::string>* kScripts =
      new std::map<std::string, std::string>{
          {"host", kHostScript},
          {"Get-SmbServerConfiguration", One("Get-SmbServerConfiguration")},
          {"Get-SmbClientConfiguration", One("Get-SmbClientConfiguration")},
          {"Get-SmbShare", List("Get-SmbShare", ",PresetPathAcl")},
          {"Get-SmbSession", List("Get-SmbSession")},
          {"Get-SmbConnection", List("Get-SmbConnection")},
          {"Get-SmbMultichannelConnection", List("Get-SmbMultichannelConnection")},
          {"Get-SmbOpenFile", List("Get-SmbOpenFile")},
          {"Get-SmbServerNetworkInterface", List("Get-SmbServerNetworkInterface")},
          {"Registry-LanmanServer", Registry("Registry-LanmanServer")},
          {"Registry-LanmanWorkstation", Registry("Registry-LanmanWorkstation")},
          {"Registry-HardenedPaths", Registry("Registry-HardenedPaths")},
          {"Get-NetAdapter", List("Get-NetAdapter")},
          // The indirection table and processor array are per-queue detail, kilobytes each.
          {"Get-NetAdapterRss", List("Get-NetAdapterRss", ",IndirectionTable,RssProcessorArray")},
          {"events", kEventsScript},
      };
  static const std::string* kEmpty = new std::string();
  auto it = kScripts->find(probe);
  return it == kScripts->end() ? *kEmpty : it->second;
}

}  // namespace smbfleet::agent::windows
