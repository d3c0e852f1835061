// Group commit of reports: what arrives while a batch is stored forms the next one (or, below
// max_parallel batches, one of its own), one report per host per batch, at most max_batch, and
// each caller gets its own answer.
#include "collector/ingest/report_batch.h"

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using ::testing::ElementsAre;

IncomingReport Digest(const std::string& host, int n) {
  IncomingReport r;
  r.host = host;
  r.report_id = absl::StrCat("00000000-0000-4000-8000-", absl::Dec(n, absl::kZeroPad12));
  r.digest = std::string(64, 'a');
  return r;
}

// A store whose first batch waits until released, so that later reports queue behind it.
// Each report's answer names it: UNCHANGED for an even report number, DUPLICATE for an odd one.
class HeldStore {
 public:
  std::vector<BatchAnswer> Store(const std::vector<IncomingReport>& reports) {
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      first = sizes_.empty();
      sizes_.push_back(reports.size());
      for (const IncomingReport& r : reports) batch_of_[r.report_id] = sizes_.size();
    }
    if (first) {
      entered_.Notify();
      release_.WaitForNotification();
    }
    std::vector<BatchAnswer> answers;
    for (const IncomingReport& r : reports) {
      SavedReport saved;
      saved.outcome =
          (r.report_id.back() - '0') % 2 == 0 ? SaveOutcome::kUnchanged : SaveOutcome::kDuplicate;
      answers.push_back({saved, true});
    }
    return answers;
  }
  std::vector<size_t> sizes() {
    absl::MutexLock lock(&mu_);
    return sizes_;
  }
  size_t BatchOf(const std::string& report_id) {
    absl::MutexLock lock(&mu_);
    return batch_of_[report_id];
  }

  absl::Notification entered_;
  absl::Notification release_;

 private:
  absl::Mutex mu_;
  std::vector<size_t> sizes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, size_t> batch_of_ ABSL_GUARDED_BY(mu_);
};

struct Answers {
  absl::Mutex mu;
  std::map<std::string, SaveOutcome> by_report ABSL_GUARDED_BY(mu);

  ReportBatcher::Done For(const std::string& report_id) {
    return [this, report_id](BatchAnswer answer) {
      absl::MutexLock lock(&mu);
      EXPECT_TRUE(answer.saved.ok()) << answer.saved.status();
      EXPECT_EQ(by_report.count(report_id), 0u) << report_id << " answered twice";
      if (answer.saved.ok()) by_report[report_id] = answer.saved->outcome;
    };
  }
};

TEST(ReportBatcherTest, ReportsArrivingDuringABatchAreStoredTogetherInTheNext) {
  HeldStore store;
  ReportBatcher batcher([&](const auto& reports) { return store.Store(reports); }, 512);
  Answers answers;
  IncomingReport lone = Digest("h0", 100);
  std::thread storing([&] { batcher.Submit(lone, answers.For(lone.report_id)); });
  store.entered_.WaitForNotification();

  // 20 hosts while the first batch is stored, and a second report of h7.
  std::vector<IncomingReport> queued;
  for (int i = 1; i <= 20; ++i) queued.push_back(Digest(absl::StrCat("h", i), i));
  queued.push_back(Digest("h7", 21));
  for (const IncomingReport& r : queued) {
    batcher.Submit(r, answers.For(r.report_id));  // returns at once: another thread stores
  }
  {
    absl::MutexLock lock(&answers.mu);
    EXPECT_TRUE(answers.by_report.empty());
  }
  store.release_.Notify();
  storing.join();  // the storing thread stores until nothing is queued

  EXPECT_THAT(store.sizes(), ElementsAre(1u, 20u, 1u));
  EXPECT_EQ(store.BatchOf(queued.back().report_id), 3u);  // h7's second report: a batch later
  absl::MutexLock lock(&answers.mu);
  ASSERT_EQ(answers.by_report.size(), 22u);
  for (int i = 1; i <= 21; ++i) {
    const IncomingReport& r = queued[i - 1];
    EXPECT_EQ(answers.by_report[r.report_id],
              i % 2 == 0 ? SaveOutcome::kUnchanged : SaveOutcome::kDuplicate)
        << r.report_id;
  }
}

TEST(ReportBatcherTest, BatchesHoldAtMostMaxBatchReports) {
  HeldStore store;
  ReportBatcher batcher([&](const auto& reports) { return store.Store(reports); }, 4);
  Answers answers;
  IncomingReport lone = Digest("h0", 100);
  std::thread storing([&] { batcher.Submit(lone, answers.For(lone.report_id)); });
  store.entered_.WaitForNotification();
  for (int i = 1; i <= 10; ++i) {
    IncomingReport r = Digest(absl::StrCat("h", i), i);
    batcher.Submit(r, answers.For(r.report_id));
  }
  store.release_.Notify();
  storing.join();
  EXPECT_THAT(store.sizes(), ElementsAre(1u, 4u, 4u, 2u));
  absl::MutexLock lock(&answers.mu);
  EXPECT_EQ(answers.by_report.size(), 11u);
}

// With two batches allowed at once, a report arriving while one is stored is stored at once by
// its own caller; a third waits for one of them.
TEST(ReportBatcherTest, BelowMaxParallelACallerStoresItsOwnBatchAtOnce) {
  HeldStore store;
  ReportBatcher batcher([&](const auto& reports) { return store.Store(reports); }, 512, 2);
  Answers answers;
  IncomingReport lone = Digest("h0", 100);
  std::thread storing([&] { batcher.Submit(lone, answers.For(lone.report_id)); });
  store.entered_.WaitForNotification();

  IncomingReport second = Digest("h1", 2);
  batcher.Submit(second, answers.For(second.report_id));  // stored and answered on this thread
  {
    absl::MutexLock lock(&answers.mu);
    EXPECT_EQ(answers.by_report.count(second.report_id), 1u);
  }
  EXPECT_THAT(store.sizes(), ElementsAre(1u, 1u));
  store.release_.Notify();
  storing.join();
  absl::MutexLock lock(&answers.mu);
  EXPECT_EQ(answers.by_report.size(), 2u);
}

// Many threads at once, nothing held: every report is answered once, none is left queued.
TEST(ReportBatcherTest, ConcurrentSubmitsAreEachAnsweredOnce) {
  absl::Mutex mu;
  size_t stored = 0;
  ReportBatcher batcher(
      [&](const std::vector<IncomingReport>& reports) {
        absl::MutexLock lock(&mu);
        stored += reports.size();
        return std::vector<BatchAnswer>(reports.size(), BatchAnswer{SavedReport{}, true});
      },
      8);
  Answers answers;
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        IncomingReport r = Digest(absl::StrCat("h", t), t * 100 + i);
        absl::Notification done;
        ReportBatcher::Done record = answers.For(r.report_id);
        batcher.Submit(r, [&](BatchAnswer a) {
          record(std::move(a));
          done.Notify();
        });
        done.WaitForNotification();
      }
    });
  }
  for (auto& t : threads) t.join();
  absl::MutexLock lock(&answers.mu);
  EXPECT_EQ(answers.by_report.size(), 400u);
  absl::MutexLock stored_lock(&mu);
  EXPECT_EQ(stored, 400u);
}

}  // namespace
}  // namespace smbfleet::collector
