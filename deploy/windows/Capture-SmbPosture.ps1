<#
.SYNOPSIS
  Writes a capture folder of this host's SMB posture for offline analysis with
  `smbfleet-agent collect --once --source=windows-capture:DIR --format=json`.

.DESCRIPTION
  Runs on any Windows PowerShell 5.1 (Windows Server 2016, 2019, 2022, 2025; Windows 10/11).
  Read-only: it calls Get-* cmdlets and Get-WinEvent, changes nothing, needs no agent.
  Run it elevated: Get-SmbSession, Get-SmbOpenFile and the SMB event logs need administrator
  rights. A cmdlet that fails (missing on this build, access denied) is recorded in
  capture.json and the rest of the capture still completes.

  Files written (UTF-8 without BOM, each a JSON array; one object for the two configurations):
    host.json                           computer, domain membership, OS name/version/build, cores, CPU
    Get-SmbServerConfiguration.json     Get-SmbClientConfiguration.json
    Get-SmbShare.json                   Get-SmbSession.json           Get-SmbConnection.json
    Get-SmbMultichannelConnection.json  Get-SmbOpenFile.json          Get-SmbServerNetworkInterface.json
    Get-NetAdapter.json                 Get-NetAdapterRss.json        (NICs: speed, status, RSS queues)
    Registry-LanmanServer.json          values of HKLM\SYSTEM\CurrentControlSet\Services\LanmanServer\Parameters
    Registry-LanmanWorkstation.json     values of HKLM\SYSTEM\CurrentControlSet\Services\LanmanWorkstation\Parameters
    Registry-HardenedPaths.json         values of HKLM\SOFTWARE\Policies\Microsoft\Windows\NetworkProvider\HardenedPaths
                                        (registry files: [] when the key does not exist)
    events.json                         newest events of the SMB server/client channels
    capture.json                        when, by which script version, and which cmdlets failed

.PARAMETER OutputDirectory
  Folder to create. Default: .\smbfleet-capture-<COMPUTERNAME>-<yyyyMMdd-HHmmss>

.PARAMETER MaxEventsPerChannel
  Newest events taken from each SMB channel (default 500).

.PARAMETER Zip
  Also write <OutputDirectory>.zip for sending to support.

.EXAMPLE
  powershell.exe -NoProfile -ExecutionPolicy Bypass -File .\Capture-SmbPosture.ps1 -Zip
#>
[CmdletBinding()]
param(
  [string]$OutputDirectory = '',
  [ValidateRange(0, 100000)]
  [int]$MaxEventsPerChannel = 500,
  [switch]$Zip
)

Set-StrictMode -Version 2.0
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$ScriptVersion = '2'

if ($OutputDirectory -eq '') {
  $stamp = (Get-Date).ToString('yyyyMMdd-HHmmss', [Globalization.CultureInfo]::InvariantCulture)
  $OutputDirectory = Join-Path -Path (Get-Location) -ChildPath ('smbfleet-capture-' + $env:COMPUTERNAME + '-' + $stamp)
}
$null = New-Item -ItemType Directory -Path $OutputDirectory -Force
$OutputDirectory = (Resolve-Path -LiteralPath $OutputDirectory).ProviderPath
$Utf8NoBom = New-Object System.Text.UTF8Encoding $false
$Errors = New-Object System.Collections.ArrayList

function Write-CaptureFile([string]$Name, [string]$Json) {
  [System.IO.File]::WriteAllText((Join-Path -Path $OutputDirectory -ChildPath $Name), $Json, $Utf8NoBom)
}

function Add-CaptureError([string]$Probe, $ErrorRecord, [string]$Context = '') {
  $message = $ErrorRecord.Exception.Message
  if ($Context -ne '') { $message = $Context + ': ' + $message }
  $null = $Errors.Add([ordered]@{ Probe = $Probe; Message = $message })
  Write-Warning ($Probe + ': ' + $message)
}

# One cmdlet -> one file. Select-Object turns CIM instances into plain objects (no CimClass /
# CimInstanceProperties noise); -InputObject @(...) keeps 0, 1 and N results a JSON array.
function Save-Cmdlet([string]$Cmdlet, [string[]]$Exclude = @(), [switch]$Single) {
  try {
    $exclude = @('Cim*', 'PSComputerName') + $Exclude
    $items = @(& $Cmdlet | Select-Object -Property * -ExcludeProperty $exclude)
    if ($Single) {
      if ($items.Count -ne 1) { throw ('expected one object, got ' + $items.Count) }
      $json = ConvertTo-Json -Depth 4 -InputObject $items[0]
    } else {
      $json = ConvertTo-Json -Depth 4 -InputObject $items
    }
    Write-CaptureFile ($Cmdlet + '.json') $json
  } catch {
    Add-CaptureError $Cmdlet $_
  }
}

# One registry key -> one file, for settings no cmdlet reports: the key's values as
# Get-ItemProperty shows them without the provider's PS* properties, in an array; [] when the key
# does not exist (the Windows defaults apply). A read error is recorded naming the key.
$RegistryExclude = @('PSPath', 'PSParentPath', 'PSChildName', 'PSDrive', 'PSProvider')
function Save-Registry([string]$Probe, [string]$Key) {
  try {
    $item = $null
    try {
      $item = Get-Item -LiteralPath $Key -ErrorAction Stop
    } catch {
      if ($_.FullyQualifiedErrorId -notlike 'PathNotFound*') { throw }
    }
    $values = @()
    if ($null -ne $item) {
      $values = @(Get-ItemProperty -LiteralPath $Key -ErrorAction Stop |
          Select-Object -Property * -ExcludeProperty $RegistryExclude)
    }
    Write-CaptureFile ($Probe + '.json') (ConvertTo-Json -Depth 3 -InputObject $values)
  } catch {
    Add-CaptureError $Probe $_ $Key
  }
}

# ---------------------------------------------------------------- host
try {
  $os = Get-CimInstance -ClassName Win32_OperatingSystem
  $cs = Get-CimInstance -ClassName Win32_ComputerSystem
  $cpu = @(Get-CimInstance -ClassName Win32_Processor)[0]
  $ubr = $null
  try {
    $ubr = (Get-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion' -Name UBR).UBR
  } catch { }
  $hostInfo = [ordered]@{
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
  }
  Write-CaptureFile 'host.json' (ConvertTo-Json -Depth 3 -InputObject $hostInfo)
} catch {
  Add-CaptureError 'host' $_
}

# ---------------------------------------------------------------- SMB cmdlets
Save-Cmdlet 'Get-SmbServerConfiguration' -Single
Save-Cmdlet 'Get-SmbClientConfiguration' -Single
Save-Cmdlet 'Get-SmbShare' -Exclude @('PresetPathAcl')
Save-Cmdlet 'Get-SmbSession'
Save-Cmdlet 'Get-SmbConnection'
Save-Cmdlet 'Get-SmbMultichannelConnection'
Save-Cmdlet 'Get-SmbOpenFile'
Save-Cmdlet 'Get-SmbServerNetworkInterface'
Save-Cmdlet 'Get-NetAdapter'
Save-Cmdlet 'Get-NetAdapterRss' -Exclude @('IndirectionTable', 'RssProcessorArray')

# ---------------------------------------------------------------- registry (no cmdlet reports these)
Save-Registry 'Registry-LanmanServer' 'HKLM:\SYSTEM\CurrentControlSet\Services\LanmanServer\Parameters'
Save-Registry 'Registry-LanmanWorkstation' 'HKLM:\SYSTEM\CurrentControlSet\Services\LanmanWorkstation\Parameters'
Save-Registry 'Registry-HardenedPaths' 'HKLM:\SOFTWARE\Policies\Microsoft\Windows\NetworkProvider\HardenedPaths'

# ---------------------------------------------------------------- events
$channels = @(
  'Microsoft-Windows-SMBServer/Audit', 'Microsoft-Windows-SMBServer/Security',
  'Microsoft-Windows-SMBServer/Operational', 'Microsoft-Windows-SMBClient/Security',
  'Microsoft-Windows-SMBClient/Connectivity', 'Microsoft-Windows-SMBClient/Audit')
$events = New-Object System.Collections.ArrayList
if ($MaxEventsPerChannel -gt 0) {
  foreach ($channel in $channels) {
    try {
      $found = @(Get-WinEvent -LogName $channel -MaxEvents $MaxEventsPerChannel -ErrorAction Stop)
    } catch {
      # An empty channel, or one this build does not have (SMBClient/Audit before WS2025).
      if ($_.FullyQualifiedErrorId -notlike 'NoMatchingEventsFound*' -and
          $_.FullyQualifiedErrorId -notlike 'NoMatchingLogsFound*') {
        Add-CaptureError ('events:' + $channel) $_
      }
      continue
    }
    foreach ($e in $found) {
      $data = [ordered]@{}
      try {
        foreach ($d in ([xml]$e.ToXml()).Event.EventData.Data) {
          $n = $d.GetAttribute('Name')
          if ($n) { $data[$n] = $d.InnerText }
        }
      } catch { }
      $message = $null
      try { $message = $e.Message } catch { }
      $null = $events.Add([ordered]@{
        Id = $e.Id; LogName = $e.LogName; ProviderName = $e.ProviderName; RecordId = $e.RecordId
        TimeCreated = $e.TimeCreated; Level = [int]$e.Level; LevelDisplayName = $e.LevelDisplayName
        Message = $message; EventData = $data
      })
    }
  }
}
Write-CaptureFile 'events.json' (ConvertTo-Json -Depth 5 -InputObject @($events))

# ---------------------------------------------------------------- capture.json
$info = [ordered]@{
  CapturedAt = (Get-Date).ToUniversalTime()
  ScriptVersion = $ScriptVersion
  PowerShellVersion = $PSVersionTable.PSVersion.ToString()
  Errors = @($Errors)
}
Write-CaptureFile 'capture.json' (ConvertTo-Json -Depth 4 -InputObject $info)

if ($Zip) {
  $zipPath = $OutputDirectory.TrimEnd('\') + '.zip'
  Compress-Archive -Path (Join-Path -Path $OutputDirectory -ChildPath '*') -DestinationPath $zipPath -Force
  Write-Output ('Wrote ' + $zipPath)
}
Write-Output ('Wrote ' + $OutputDirectory + ' (' + $Errors.Count + ' cmdlet errors, ' + $events.Count + ' events)')
