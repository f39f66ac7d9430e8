#include "progress.h"

#include <algorithm>
#include <string>

#include "canvas.h"

namespace oxcli {

Progress::Progress(std::FILE* out, bool terminal, const RunInfo& run)
    : out_(out),
      terminal_(terminal),
      epochs_(run.epochs),
      batches_per_epoch_(run.batches_per_epoch),
      test_name_(run.test_name) {}

void Progress::start_epoch(int64_t epoch, int64_t done) {
  epoch_ = epoch;
  done_ = done;
  batches_ = samples_ = 0;
  loss_sum_ = 0;
  next_report_ = done + std::max<int64_t>(1, batches_per_epoch_ / 10);
  start_ = last_draw_ = std::chrono::steady_clock::now();
  open_ = true;
  if (terminal_) draw(false);
}

double Progress::samples_per_s() const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return elapsed > 0 ? double(samples_) / elapsed : 0.0;
}

void Progress::step(const StepInfo& info) {
  ++done_;
  ++batches_;
  samples_ += info.samples;
  loss_sum_ += info.loss;
  if (terminal_) {
    // Redrawing costs a write; ten times a second is smooth enough.
    const auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ >= std::chrono::milliseconds(100)) {
      last_draw_ = now;
      draw(false);
    }
  } else if (done_ >= next_report_ && done_ < batches_per_epoch_) {
    next_report_ = done_ + std::max<int64_t>(1, batches_per_epoch_ / 10);
    draw(false);
  }
}

void Progress::end_epoch() {
  if (!open_) return;
  draw(true);
  open_ = false;
}

void Progress::evaluated(const EvalInfo& info) {
  if (info.epoch + 1 >= epochs_) return;
  std::fprintf(out_, "epoch %lld/%lld evaluation on %s: loss %.4f, accuracy %.2f%%\n",
               (long long)(info.epoch + 1), (long long)epochs_, test_name_.c_str(), info.loss,
               100 * info.accuracy);
  std::fflush(out_);
}

void Progress::close() {
  if (open_ && terminal_) std::fputc('\n', out_);
  open_ = false;
  std::fflush(out_);
}

void Progress::draw(bool final_line) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? double(samples_) / elapsed : 0.0;
  const double batch_rate = elapsed > 0 ? double(batches_) / elapsed : 0.0;
  const double eta = batch_rate > 0 ? double(batches_per_epoch_ - done_) / batch_rate : -1.0;
  const int64_t percent = batches_per_epoch_ > 0 ? done_ * 100 / batches_per_epoch_ : 100;
  if (terminal_) {
    constexpr int kWidth = 30;
    const int filled = int(batches_per_epoch_ > 0 ? done_ * kWidth / batches_per_epoch_ : kWidth);
    std::string bar(size_t(filled), '#');
    bar.resize(kWidth, '.');
    // \033[K clears what a longer earlier line left.
    std::fprintf(out_, "\repoch %lld/%lld [%s] %lld/%lld %.0f samples/s %s %s loss %.4f\033[K",
                 (long long)(epoch_ + 1), (long long)epochs_, bar.c_str(), (long long)done_,
                 (long long)batches_per_epoch_, rate, final_line ? "took" : "ETA",
                 duration_text(final_line ? elapsed : eta).c_str(), epoch_loss());
    if (final_line) std::fputc('\n', out_);
  } else if (final_line) {
    std::fprintf(out_, "epoch %lld/%lld done: %lld batches, %.0f samples/s, %s, loss %.4f\n",
                 (long long)(epoch_ + 1), (long long)epochs_, (long long)done_, rate,
                 duration_text(elapsed).c_str(), epoch_loss());
  } else {
    std::fprintf(out_,
                 "epoch %lld/%lld: %lld/%lld batches (%lld%%), %.0f samples/s, ETA %s, loss %.4f\n",
                 (long long)(epoch_ + 1), (long long)epochs_, (long long)done_,
                 (long long)batches_per_epoch_, (long long)percent, rate,
                 duration_text(eta).c_str(), epoch_loss());
  }
  std::fflush(out_);
}

}  // namespace oxcli
