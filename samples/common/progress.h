// Progress through an epoch's batches, on stderr. On a terminal a bar redrawn in place with '\r' after
// every batch; in a log or a pipe, where the '\r's would pile up into one long line, a plain line at
// each quarter of the epoch instead. Shared by the training samples.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace samples {

class Progress {
 public:
  Progress() : tty_(isatty(STDERR_FILENO) != 0) {}

  // Batch `done` of `total` of the epoch has been pushed.
  void update(int epoch, int64_t done, int64_t total) {
    if (tty_) {
      draw_bar(epoch, done, total);
    } else if (done == total || quarter(done, total) != quarter(done - 1, total)) {
      std::fprintf(stderr, "epoch %d: batch %lld/%lld\n", epoch, static_cast<long long>(done),
                   static_cast<long long>(total));
    }
  }

  // Before the epoch's summary line: ends the bar's line, if one is drawn.
  void end_epoch() {
    if (bar_open_) std::fputc('\n', stderr);
    bar_open_ = false;
  }

 private:
  static int64_t quarter(int64_t done, int64_t total) { return total > 0 ? done * 4 / total : 0; }

  void draw_bar(int epoch, int64_t done, int64_t total) {
    constexpr int kWidth = 30;
    const int fill = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
    std::fprintf(stderr, "\repoch %d [%.*s%*s] %lld/%lld", epoch, fill, "##############################", kWidth - fill,
                 "", static_cast<long long>(done), static_cast<long long>(total));
    std::fflush(stderr);
    bar_open_ = true;
  }

  bool tty_;
  bool bar_open_ = false;
};

}  // namespace samples
