#include <windows.h>
#include <winevt.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "agent/platform/windows/shim/event_log.h"
#include "agent/platform/windows/shim/process.h"

namespace smbfleet::agent::windows::shim {
namespace {

struct EvtHandleCloser {
  EVT_HANDLE h = nullptr;
  explicit EvtHandleCloser(EVT_HANDLE handle) : h(handle) {}
  EvtHandleCloser(const EvtHandleCloser&) = delete;
  EvtHandleCloser& operator=(const EvtHandleCloser&) = delete;
  ~EvtHandleCloser() {
    if (h != nullptr) EvtClose(h);
  }
};

std::string RenderXml(EVT_HANDLE event) {
  DWORD used = 0, props = 0;
  EvtRender(nullptr, event, EvtRenderEventXml, 0, nullptr, &used, &props);
  if (GetLastError() != ERROR_INSUFFICIENT_BUFFER) return std::string();
  std::vector<wchar_t> buf(used / sizeof(wchar_t) + 1);
  if (!EvtRender(nullptr, event, EvtRenderEventXml, used, buf.data(), &used, &props)) {
    return std::string();
  }
  return Narrow(std::wstring(buf.data()));
}

std::wstring ProviderName(EVT_HANDLE event, EVT_HANDLE context) {
  DWORD used = 0, props = 0;
  EvtRender(context, event, EvtRenderEventValues, 0, nullptr, &used, &props);
  if (GetLastError() != ERROR_INSUFFICIENT_BUFFER) return std::wstring();
  std::vector<char> buf(used);
  auto* values = reinterpret_cast<PEVT_VARIANT>(buf.data());
  if (!EvtRender(context, event, EvtRenderEventValues, used, values, &used, &props)) {
    return std::wstring();
  }
  const EVT_VARIANT& v = values[EvtSystemProviderName];
  return v.Type == EvtVarTypeString && v.StringVal != nullptr ? std::wstring(v.StringVal)
                                                              : std::wstring();
}

std::string FormatMessageText(EVT_HANDLE event, const std::wstring& provider) {
  if (provider.empty()) return std::string();
  EvtHandleCloser meta(EvtOpenPublisherMetadata(nullptr, provider.c_str(), nullptr, 0, 0));
  if (meta.h == nullptr) return std::string();
  DWORD used = 0;
  EvtFormatMessage(meta.h, event, 0, 0, nullptr, EvtFormatMessageEvent, 0, nullptr, &used);
  if (GetLastError() != ERROR_INSUFFICIENT_BUFFER || used == 0) return std::string();
  std::vector<wchar_t> buf(used + 1);
  if (!EvtFormatMessage(meta.h, event, 0, 0, nullptr, EvtFormatMessageEvent, used, buf.data(),
                        &used)) {
    return std::string();
  }
  return Narrow(std::wstring(buf.data()));
}

uint64_t RecordIdOf(const std::string& xml) {
  size_t p = xml.find("<EventRecordID>");
  if (p == std::string::npos) return 0;
  return std::strtoull(xml.c_str() + p + 15, nullptr, 10);
}

}  // namespace

ChannelRead ReadChannel(const std::string& channel, uint64_t after_record_id, size_t max_events) {
  ChannelRead out;
  std::wstring path = Widen(channel);
  // The newest record: Get-WinEvent -MaxEvents 1.
  {
    EvtHandleCloser q(
        EvtQuery(nullptr, path.c_str(), L"*", EvtQueryChannelPath | EvtQueryReverseDirection));
    if (q.h == nullptr) {
      DWORD err = GetLastError();
      if (err == ERROR_EVT_CHANNEL_NOT_FOUND) {
        out.channel_exists = false;
      } else {
        out.error = channel + ": EvtQuery: " + ErrorText(err);
      }
      return out;
    }
    EVT_HANDLE ev = nullptr;
    DWORD returned = 0;
    if (EvtNext(q.h, 1, &ev, INFINITE, 0, &returned) && returned == 1) {
      EvtHandleCloser e(ev);
      out.latest_record_id = RecordIdOf(RenderXml(e.h));
    }
  }
  if (out.latest_record_id <= after_record_id) return out;
  // The record id comes from the agent's own bookmark (a number), not from any input.
  std::wstring xpath = L"*[System[EventRecordID>" + std::to_wstring(after_record_id) + L"]]";
  EvtHandleCloser q(EvtQuery(nullptr, path.c_str(), xpath.c_str(),
                             EvtQueryChannelPath | EvtQueryReverseDirection));
  if (q.h == nullptr) {
    out.error = channel + ": EvtQuery: " + ErrorText(GetLastError());
    return out;
  }
  EvtHandleCloser context(EvtCreateRenderContext(0, nullptr, EvtRenderContextSystem));
  while (out.events.size() < max_events) {
    EVT_HANDLE batch[16];
    DWORD returned = 0;
    DWORD want = static_cast<DWORD>(std::min<size_t>(16, max_events - out.events.size()));
    if (!EvtNext(q.h, want, batch, INFINITE, 0, &returned)) {
      DWORD err = GetLastError();
      if (err != ERROR_NO_MORE_ITEMS) out.error = channel + ": EvtNext: " + ErrorText(err);
      break;
    }
    for (DWORD i = 0; i < returned; ++i) {
      EvtHandleCloser e(batch[i]);
      EventRecord r;
      r.xml = RenderXml(e.h);
      r.message = FormatMessageText(e.h, ProviderName(e.h, context.h));
      out.events.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace smbfleet::agent::windows::shim
