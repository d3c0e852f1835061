// Replays a fuzz target's corpus without libFuzzer: every file under the directories (or the
// files) named on the command line goes through LLVMFuzzerTestOneInput once, in name order. A
// crash, a sanitizer finding or a failed check ends the process, which fails the CTest test.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool CollectInputs(const std::filesystem::path& arg, std::vector<std::filesystem::path>* out) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) {
    out->push_back(arg);
    return true;
  }
  if (!std::filesystem::is_directory(arg, ec)) {
    std::fprintf(stderr, "%s: not a file or directory\n", arg.c_str());
    return false;
  }
  for (const auto& entry : std::filesystem::recursive_directory_iterator(arg, ec)) {
    if (entry.is_regular_file()) out->push_back(entry.path());
  }
  if (ec) {
    std::fprintf(stderr, "%s: %s\n", arg.c_str(), ec.message().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!CollectInputs(argv[i], &inputs)) return 2;
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "no corpus files under the given paths\n");
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: cannot read\n", path.c_str());
      return 2;
    }
    std::printf("replay %s (%zu bytes)\n", path.c_str(), bytes.size());
    std::fflush(stdout);
    // A copy of exactly `size` bytes on the heap, as libFuzzer passes it, so ASan sees overreads.
    std::vector<uint8_t> data(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(data.empty() ? nullptr : data.data(), data.size());
  }
  std::printf("%zu inputs replayed\n", inputs.size());
  return 0;
}
