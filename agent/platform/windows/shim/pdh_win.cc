#include <windows.h>

#include "agent/platform/windows/shim/pdh.h"
// windows.h first: pdh.h needs its types.
#include <pdh.h>
#include <pdhmsg.h>

#include <cstdio>

namespace smbfleet::agent::windows::shim {
namespace {

struct CounterPath {
  const wchar_t* path;
  const char* name;  // the same, for errors
  std::optional<double> PdhReading::*field;
};

const CounterPath kCounters[] = {
    {L"\\Processor(_Total)\\% Processor Time", "\\Processor(_Total)\\% Processor Time",
     &PdhReading::cpu_percent},
    {L"\\SMB Server Shares(_Total)\\Read Bytes/sec", "\\SMB Server Shares(_Total)\\Read Bytes/sec",
     &PdhReading::smb_read_bytes_per_second},
    {L"\\SMB Server Shares(_Total)\\Write Bytes/sec",
     "\\SMB Server Shares(_Total)\\Write Bytes/sec", &PdhReading::smb_write_bytes_per_second},
    {L"\\Memory\\Available Bytes", "\\Memory\\Available Bytes", &PdhReading::available_bytes},
};
constexpr size_t kCount = sizeof(kCounters) / sizeof(kCounters[0]);

std::string Error(const char* what, const char* name, PDH_STATUS status) {
  char text[256];
  std::snprintf(text, sizeof(text), "PDH %s %s: status 0x%08lx", what, name,
                static_cast<unsigned long>(status));
  return text;
}

}  // namespace

struct PdhCounters::Impl {
  PDH_HQUERY query = nullptr;
  PDH_STATUS open_status = ERROR_SUCCESS;
  PDH_HCOUNTER counters[kCount] = {};
  PDH_STATUS add_status[kCount] = {};
};

PdhCounters::PdhCounters() : impl_(new Impl) {
  impl_->open_status = PdhOpenQueryW(nullptr, 0, &impl_->query);
  if (impl_->open_status != ERROR_SUCCESS) return;
  for (size_t i = 0; i < kCount; ++i) {
    impl_->add_status[i] =
        PdhAddEnglishCounterW(impl_->query, kCounters[i].path, 0, &impl_->counters[i]);
  }
}

PdhCounters::~PdhCounters() {
  if (impl_->query != nullptr) PdhCloseQuery(impl_->query);
  delete impl_;
}

PdhReading PdhCounters::Collect() {
  PdhReading r;
  if (impl_->open_status != ERROR_SUCCESS) {
    r.errors.push_back(Error("cannot open a query for", "counters", impl_->open_status));
    return r;
  }
  PDH_STATUS collected = PdhCollectQueryData(impl_->query);
  if (collected != ERROR_SUCCESS && static_cast<DWORD>(collected) != PDH_NO_DATA) {
    r.errors.push_back(Error("cannot collect", "counters", collected));
    return r;
  }
  for (size_t i = 0; i < kCount; ++i) {
    if (impl_->add_status[i] != ERROR_SUCCESS) {
      r.errors.push_back(Error("cannot add", kCounters[i].name, impl_->add_status[i]));
      continue;
    }
    PDH_FMT_COUNTERVALUE value = {};
    DWORD type = 0;
    PDH_STATUS s = PdhGetFormattedCounterValue(impl_->counters[i],
                                               PDH_FMT_DOUBLE | PDH_FMT_NOCAP100, &type, &value);
    // A rate's first collection has nothing to compare with: absent, not an error.
    const DWORD status = static_cast<DWORD>(s);
    const DWORD data = static_cast<DWORD>(value.CStatus);
    if (status == PDH_INVALID_DATA || data == PDH_CSTATUS_INVALID_DATA) continue;
    if (s != ERROR_SUCCESS || (data != PDH_CSTATUS_VALID_DATA && data != PDH_CSTATUS_NEW_DATA)) {
      r.errors.push_back(Error("cannot read", kCounters[i].name,
                               s != ERROR_SUCCESS ? s : static_cast<PDH_STATUS>(data)));
      continue;
    }
    r.*(kCounters[i].field) = value.doubleValue;
  }
  return r;
}

}  // namespace smbfleet::agent::windows::shim
